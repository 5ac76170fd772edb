"""Swift hosts (Kumar et al., SIGCOMM 2020) on the bit-exact model :mod:`sim.models.swift`.

The receiver acknowledges every packet (cumulative, go-back-N), echoing the packet's NIC send
stamp; it holds each ACK for ``endpoint_delay_ns`` (the remote endpoint delay a host adds, a
setting: 0 for a NIC-generated ACK) and reports that delay, as Swift's remote NIC timestamps
would.  Per ACK the sender's model gets ``fabric = t_ack_rx - t_send - endpoint`` and
``endpoint`` (cycles of the engine clock), the path's switch count as hops, and the packets
newly acknowledged.  The sender keeps ``floor(cwnd)`` packets in flight while ``cwnd >= 1`` and,
below one packet, releases one packet every ``pace`` cycles (RTT / cwnd) whatever is in
flight.  A NAK is a fast recovery, a timeout (``rto_ns`` without progress) a retransmission
timeout; both go back N.  Every sender keeps its RTT samples (``rtt``, cycles).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from hw.nic.swift_config import CW_ONE, SwiftConfig
from hw.params import check_int
from sim.models.swift import SwiftAck, SwiftModel

from .algorithms import ALGORITHMS, AlgorithmSpec
from .delay_hosts import DelayEndpoint, EchoReceiver, RtoTimer, RttTrace, no_marking, path_hops
from .engine import PS_PER_NS, Alarm
from .packet import ACK, NAK, Packet

__all__ = ["SwiftParams", "SwiftSenderEndpoint", "SwiftReceiverEndpoint"]


@dataclass(frozen=True)
class SwiftParams:
    """Swift (``docs/swift.md``): the window engine's knobs (:class:`SwiftConfig`), the remote
    endpoint delay ``endpoint_delay_ns`` the receiver adds to each ACK, and ``rto_ns``."""

    base_target_us: float = 8.0
    hop_scale_us: float = 1.0
    fs_range_us: float = 20.0
    fs_min_cwnd: float = 0.1
    fs_max_cwnd: float = 100.0
    endpoint_target_us: float = 10.0
    ai: float = 1.0
    beta: float = 0.8
    max_mdf: float = 0.5
    min_cwnd: float = 0.001
    max_cwnd: float = 256.0
    init_cwnd: float = 4.0
    retx_reset: int = 5
    endpoint_delay_ns: int = 0
    rto_ns: int = 1_000_000

    def __post_init__(self):
        check_int(self, "rto_ns", self.rto_ns, 1000, 10**10)
        check_int(self, "endpoint_delay_ns", self.endpoint_delay_ns, 0, 10**7)
        self.config(250_000_000)

    def config(self, clk_hz: int) -> SwiftConfig:
        return SwiftConfig(
            clk_hz=clk_hz, base_target_us=self.base_target_us, hop_scale_us=self.hop_scale_us,
            fs_range_us=self.fs_range_us, fs_min_cwnd=self.fs_min_cwnd,
            fs_max_cwnd=self.fs_max_cwnd, endpoint_target_us=self.endpoint_target_us,
            ai=self.ai, beta=self.beta, max_mdf=self.max_mdf, min_cwnd=self.min_cwnd,
            max_cwnd=self.max_cwnd, init_cwnd=self.init_cwnd, retx_reset=self.retx_reset)


@functools.cache
def _config(params: SwiftParams, clk_hz: int):
    cfg = params.config(clk_hz)
    return cfg, cfg.registers()      # the ROM once per run, not once per flow


class SwiftSenderEndpoint(DelayEndpoint):
    def __init__(self, net, spec, host):
        super().__init__(net, spec, host)
        cfg, regs = _config(net.params, self.clk_hz)
        self.model = SwiftModel(cfg, regs)
        self.hops = path_hops(net, spec.src, spec.dst)
        self.endpoint = net.params.endpoint_delay_ns * PS_PER_NS // self.clk_ps
        self.timer = RtoTimer(self, net.params.rto_ns * PS_PER_NS)
        self.rtt = RttTrace()
        self.next_seq = 0
        self.acked = 0
        self.finished = False
        self.next_pace = 0          # ps: the next release of a sub-one window
        self.alarm = Alarm(self.sim, self._pump)    # the pacer's one pending wake-up
        self.waiting = False
        self.below_one = False
        self.cwnd_min = self.model.state.cwnd     # smallest window seen (UQ16.16)
        self.paced = 0                             # packets released by the sub-one pacer

    def start(self) -> None:
        self.started = True
        self.timer.arm()
        self._note_window()
        self._pump()

    # -- go-back-N --------------------------------------------------------------------------------
    def outstanding(self) -> bool:
        return self.next_seq > self.acked or self.more(self.next_seq)

    def timeout(self) -> None:
        self.model.on_timeout(self.cycle(self.sim.now))
        self._note_window()
        self.next_seq = self.acked
        self._pump()

    def _note_window(self) -> None:
        """After every update of the model: the smallest window, and whether the flow went
        below one packet (whatever event took it there, and even on its last ACK)."""
        cwnd = self.model.state.cwnd
        self.cwnd_min = min(self.cwnd_min, cwnd)
        if cwnd < CW_ONE and not self.below_one:
            self.below_one = True
            self.net.counters["flows_below_one_packet"] += 1

    # -- sending ----------------------------------------------------------------------------------
    def _pump(self) -> None:
        """Release what the window and the sub-one pacer allow now, and keep the one alarm at
        the pacer's next release (none when the flow waits for an ACK or for the NIC).

        A function of the flow's state only: the checks come in the order window, pacer, NIC,
        and the alarm moves only when its time changes, so that a wake-up at any other time
        (a spurious call) releases nothing and leaves the schedule, including the order among
        events of the same time, untouched."""
        if self.finished or self.waiting or not self.started:
            return
        s = self.model.state
        nic = self.host.nic
        wake = None
        while self.more(self.next_seq):
            cwnd = s.cwnd
            paced = cwnd < CW_ONE
            if not paced:
                if (self.next_seq - self.acked + 1) * CW_ONE > cwnd:
                    break
            else:
                if s.pace == 0 and self.next_seq > self.acked:
                    break           # below one packet before any RTT sample: one in flight
                if self.sim.now < self.next_pace:
                    wake = self.next_pace
                    break
            if nic.data_backlog() >= 2:
                self.waiting = True
                nic.waiters.append(self._drained)
                break
            if paced:
                self.next_pace = self.sim.now + s.pace * self.clk_ps
                self.paced += 1
            self.send_seq(self.next_seq)
            self.next_seq += 1
        self.alarm.keep(wake)

    def _drained(self) -> None:
        self.waiting = False
        self._pump()

    # -- ACKs -------------------------------------------------------------------------------------
    def on_control(self, pkt: Packet) -> None:
        now = self.sim.now
        if pkt.kind == ACK:
            if pkt.seq <= self.acked:
                return
            n = pkt.seq - self.acked
            self.acked = pkt.seq
            self.timer.progress()
            total = (self.cycle(now) - self.cycle(pkt.sent_ps)) & 0xFFFFFFFF
            fabric = max(total - self.endpoint, 0)
            s = self.model.on_ack(SwiftAck(self.cycle(now), fabric, self.endpoint, self.hops, n))
            self._note_window()
            self.rtt.add(now, s.rtt)
            if self.packets is not None and self.acked >= self.packets:
                self.finished = True
                return
        elif pkt.kind == NAK:
            if pkt.seq < self.acked:
                return
            self.acked = pkt.seq
            self.timer.progress()
            self.model.on_fast_recovery(self.cycle(now))
            self._note_window()
            self.next_seq = pkt.seq
        else:
            return
        self._pump()

    def window_packets(self) -> float:
        return self.model.state.cwnd / CW_ONE


class SwiftReceiverEndpoint(EchoReceiver):
    def __init__(self, net, spec, host):
        super().__init__(net, spec, host, every=1,
                         turnaround_ps=net.params.endpoint_delay_ns * PS_PER_NS)


SPEC = AlgorithmSpec(
    "swift", SwiftParams,
    "Swift: window AIMD on NIC-timestamped fabric delay, target scaling, sub-one pacing",
    SwiftSenderEndpoint, SwiftReceiverEndpoint, no_marking)
ALGORITHMS.setdefault("swift", SPEC)
