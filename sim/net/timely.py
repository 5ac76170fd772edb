"""TIMELY hosts (Mittal et al., SIGCOMM 2015) on the bit-exact model :mod:`sim.models.timely`.

The sender posts its message in segments of ``segment_bytes`` (whole packets), each handed to
the NIC as one burst; the receiver acknowledges each segment once (its last packet), echoing the
NIC send stamp of the segment's first packet.  Each ACK is a completion event: the model turns
``t_completion - t_send - serialization`` into the RTT and updates the flow's rate.  Segments
are paced at that rate by the project's rate-limiter arithmetic: a segment of L bytes started at
cycle t lets the next start at ``t + ceil(L * 2**24 / inc(R))``.  Go-back-N on a NAK or a
timeout.  The switches do not mark (the signal is delay).  Every sender keeps its RTT samples
(``rtt``: a :class:`sim.net.delay_hosts.RttTrace`, cycles of the engine clock).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from hw.nic.rate_limiter_config import RateLimiterConfig
from hw.nic.timely_config import TimelyConfig
from hw.params import check_int
from sim.models.timely import TimelyCompletion, TimelyModel

from .algorithms import ALGORITHMS, AlgorithmSpec, PacedRelease
from .delay_hosts import DelayEndpoint, EchoReceiver, RtoTimer, RttTrace, no_marking
from .engine import PS_PER_NS, Alarm
from .packet import ACK, NAK, Packet

__all__ = ["TimelyParams", "TimelySenderEndpoint", "TimelyReceiverEndpoint"]


@dataclass(frozen=True)
class TimelyParams:
    """TIMELY (``docs/timely.md``): the rate engine's knobs (:class:`TimelyConfig`) for the
    simulator's 100 Gb/s fabric with a ~4 µs base RTT: the paper's alpha, beta, minRTT and HAI,
    thresholds scaled down from its 10 Gb/s values (T_low 10 µs, T_high 50 µs), delta up to
    100 Mb/s, a 1 Gb/s floor (a 16 KB segment then takes 131 µs, well inside the timeout);
    ``rto_ns`` (go-back-N timeout).  ``t_low_us == t_high_us`` is the queue-size form.  The
    line rate is the NIC's; ``max_rate_mbps`` and ``init_rate_mbps`` 0 = line rate."""

    segment_bytes: int = 16_384
    ewma_alpha: float = 0.875
    beta: float = 0.8
    delta_mbps: float = 100.0
    t_low_us: float = 10.0
    t_high_us: float = 50.0
    min_rtt_us: float = 20.0
    hai_thresh: int = 5
    hai_mult: int = 5
    min_rate_mbps: float = 1000.0
    max_rate_mbps: float = 0.0
    init_rate_mbps: float = 0.0
    app_limit_pct: int = 80
    rto_ns: int = 1_000_000

    def __post_init__(self):
        check_int(self, "rto_ns", self.rto_ns, 1000, 10**10)
        self.config(100_000, 250_000_000)

    def config(self, line_rate_mbps: int, clk_hz: int) -> TimelyConfig:
        return TimelyConfig(
            clk_hz=clk_hz, line_rate_mbps=line_rate_mbps, segment_bytes=self.segment_bytes,
            ewma_alpha=self.ewma_alpha, beta=self.beta, delta_mbps=self.delta_mbps,
            t_low_us=self.t_low_us, t_high_us=self.t_high_us, min_rtt_us=self.min_rtt_us,
            hai_thresh=self.hai_thresh, hai_mult=self.hai_mult,
            min_rate_mbps=self.min_rate_mbps, max_rate_mbps=self.max_rate_mbps,
            init_rate_mbps=self.init_rate_mbps, app_limit_pct=self.app_limit_pct)


@functools.cache
def _config(params: TimelyParams, line_rate_mbps: int, clk_hz: int) -> TimelyConfig:
    return params.config(line_rate_mbps, clk_hz)


@functools.cache
def _limiter(clk_hz: int, line_rate_mbps: int) -> RateLimiterConfig:
    return RateLimiterConfig(flows=1, clk_hz=clk_hz, line_rate_mbps=line_rate_mbps)


class TimelySenderEndpoint(DelayEndpoint, PacedRelease):
    def __init__(self, net, spec, host):
        super().__init__(net, spec, host)
        line = host.nic.rate_bps // 10**6
        self.cfg = _config(net.params, line, self.clk_hz)
        self.model = TimelyModel(self.cfg)
        self.limiter = _limiter(self.clk_hz, line)
        self.seg_pkts = max(1, self.cfg.segment_bytes // self.mtu)
        self.timer = RtoTimer(self, net.params.rto_ns * PS_PER_NS)
        self.rtt = RttTrace()
        self.next_seq = 0
        self.acked = 0
        self.finished = False
        self.next_ok = 0
        self.alarm = Alarm(self.sim, self._release)   # the pacer's one pending wake-up
        self.waiting = False
        self.app_bytes = 0          # handed to the NIC since the last completion
        self.app_since = 0          # cycle of the last completion (or of the start)

    def start(self) -> None:
        self.started = True
        self.app_since = self.sim.now // self.clk_ps
        self.timer.arm()
        self._release()

    # -- go-back-N --------------------------------------------------------------------------------
    def outstanding(self) -> bool:
        return self.next_seq > self.acked or self.more(self.next_seq)

    def timeout(self) -> None:
        self._go_back(self.acked)

    def _go_back(self, seq: int) -> None:
        self.next_seq = max(seq, self.acked)
        if self.alarm.time is None and not self.waiting:
            self._release()        # (else the pending wake-up sends from next_seq)

    # -- pacing -----------------------------------------------------------------------------------
    def _release(self) -> None:
        """Hand the next segment to the NIC if the pacer and the NIC allow it now
        (:meth:`PacedRelease._release_due`), and keep the one alarm at the pacer's next
        release."""
        if not self._release_due():
            return
        # the segment ends at the next multiple of seg_pkts (a retransmission restarts mid-way)
        end = (self.next_seq // self.seg_pkts + 1) * self.seg_pkts
        sent = 0
        while self.next_seq < end and self.more(self.next_seq):
            sent += self.send_seq(self.next_seq).size
            self.next_seq += 1
        self.app_bytes += sent
        self._pace(sent, self.model.state.rate)

    # -- completions ------------------------------------------------------------------------------
    def on_control(self, pkt: Packet) -> None:
        if pkt.kind == ACK:
            if pkt.seq <= self.acked:
                return
            seg_bytes = sum(self.size_of(s) for s in range(self.acked, pkt.seq))
            self.acked = pkt.seq
            self.timer.progress()
            now_c = self.sim.now // self.clk_ps
            out = self.model.complete(TimelyCompletion(
                t_send=self.cycle(pkt.sent_ps), t_completion=now_c & 0xFFFFFFFF,
                seg_bytes=seg_bytes, app_bytes=self.app_bytes,
                app_cycles=now_c - self.app_since))
            self.app_bytes, self.app_since = 0, now_c
            self.rtt.add(self.sim.now, out.rtt)
            if self.packets is not None and self.acked >= self.packets:
                self.finished = True
        elif pkt.kind == NAK:
            if pkt.seq >= self.acked:
                self.acked = pkt.seq
                self.timer.progress()
                self._go_back(pkt.seq)

    def rate_mbps(self) -> float:
        return self.model.state.rate / 1024


class TimelyReceiverEndpoint(EchoReceiver):
    """One ACK per segment (the segment's packets as the sender cuts them), echoing the send
    stamp of the segment's first packet."""

    def __init__(self, net, spec, host):
        seg = max(1, net.params.segment_bytes // net.mtu)
        super().__init__(net, spec, host, every=seg)


SPEC = AlgorithmSpec(
    "timely", TimelyParams,
    "TIMELY: rate-based, RTT gradient from NIC completion timestamps, per-segment pacing",
    TimelySenderEndpoint, TimelyReceiverEndpoint, no_marking)
ALGORITHMS.setdefault("timely", SPEC)
