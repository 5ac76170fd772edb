"""What the algorithms' hosts share: the registry entry (:class:`AlgorithmSpec`), the
packet-numbered endpoint, the go-back-N receiver, the retransmission-timeout check, the paced
release of rate-based senders and the engine clock.

The split between a host and its congestion engine (ns-3's transport vs ``TcpCongestionOps``):
the transport (go-back-N, the timeouts, the ACK policy) lives in the endpoints here and in each
algorithm's module; the congestion engine sits behind :mod:`sim.net.engine_api` (events in,
stamped with their engine-clock cycle; outputs; the next wake-up; a state snapshot).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from hw.layouts import Ecn
from hw.nic.rate_limiter_config import CREDIT_FRAC, RateLimiterConfig
from hw.switch.marker_config import MarkerConfig

from ..engine import IDLE, PS_PER_NS, Alarm
from ..packet import ACK, DATA, NAK, Packet, control

#: The largest queue threshold a switch marker holds (bytes): its occupancy registers are
#: ``occ_width`` bits wide (:class:`hw.switch.marker_config.MarkerConfig`).
THRESHOLD_MAX = (1 << MarkerConfig.__dataclass_fields__["occ_width"].default) - 1

@dataclass(frozen=True)
class AlgorithmSpec:
    name: str
    params_cls: type
    description: str
    make_sender: object
    make_receiver: object
    # (params, *, ports, mtu, buf_max, shared_buffer, sample_at) -> MarkerConfig; thresholds
    # above the queue limit never act, so the builders clamp them to buf_max (which the marker
    # configuration requires)
    marker_config: object
    cp_config: object = lambda params, mtu: None
    l3qcn: object = lambda params: False
    # engine kind -> (sender engine factory, receiver engine factory), see sim.net.engine_api
    engines: dict = field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# Shared endpoint pieces
# --------------------------------------------------------------------------------------------


class _Endpoint:
    """Packet-numbered message of ``spec.size_bytes`` bytes cut into MTU-sized packets."""

    def __init__(self, net, spec, host):
        self.net, self.sim, self.spec, self.host = net, net.sim, spec, host
        self.mtu = net.mtu
        self.packets = None if spec.size_bytes is None else -(-spec.size_bytes // net.mtu)
        self.high = 0             # senders: highest sequence sent + 1 (flags retransmissions)
        self.retx_bytes = 0
        self.started = False      # senders: start() was called (a wake-up before is a no-op)

    def size_of(self, seq: int) -> int:
        if self.packets is not None and seq == self.packets - 1:
            return self.spec.size_bytes - seq * self.mtu
        return self.mtu

    def data(self, seq: int, ecn: Ecn, retx: bool) -> Packet:
        return Packet(DATA, self.spec.flow_id, self.spec.src, self.spec.dst, seq,
                      self.size_of(seq), ecn, retx=retx,
                      last=self.packets is not None and seq == self.packets - 1,
                      sent_ps=self.sim.now)

    def transmit(self, pkt: Packet) -> None:
        """Hand a data packet to the NIC, counting it if it is a retransmission."""
        if pkt.retx:
            self.retx_bytes += pkt.size
            self.net.counters["retransmitted_packets"] += 1
        self.host.nic.send(pkt)

    def send_seq(self, seq: int) -> None:
        """Send packet ``seq`` of the message (a retransmission if it went out before)."""
        self.transmit(self.data(seq, Ecn.ECT0, seq < self.high))
        self.high = max(self.high, seq + 1)

    def more(self, seq: int) -> bool:
        """Whether packet ``seq`` is part of the message (and the flow is not stopped)."""
        if self.packets is not None:
            return seq < self.packets
        stop = self.spec.stop_ps
        return stop is None or self.sim.now < stop


class _InOrderReceiver(_Endpoint):
    """Go-back-N receiver: counts in-order packets, NAKs a gap once, discards the rest.
    ACKs every ``ack_every`` packets and the last one; subclasses add CNPs."""

    def __init__(self, net, spec, host, ack_every: int):
        super().__init__(net, spec, host)
        self.expected = 0
        self.ack_every = ack_every
        self.pending = 0
        self.nak_sent = False
        self.delivered_bytes = 0
        self.done_ps = None

    def on_data(self, pkt: Packet) -> None:
        nic = self.host.nic
        f = self.spec
        if pkt.seq != self.expected:
            if pkt.seq > self.expected and not self.nak_sent:
                self.nak_sent = True
                nic.send(control(NAK, f.flow_id, f.dst, f.src, self.expected))
            return
        self.nak_sent = False
        self.expected += 1
        self.delivered_bytes += pkt.size
        if pkt.last:
            self.done_ps = self.sim.now
        self.pending += 1
        if self.pending >= self.ack_every or pkt.last:
            self.pending = 0
            nic.send(control(ACK, f.flow_id, f.dst, f.src, self.expected))


class _RtoMixin:
    """Retransmission timeout: no cumulative progress for ``rto_ps`` -> go back N.

    One check per flow is pending, at ``last_progress + rto_ps`` as it was when scheduled; a
    check that finds progress since (or nothing outstanding: the timer restarts) moves itself
    to the new deadline and is not an event (:data:`sim.net.engine.IDLE`), so that a timeout
    that never fires leaves no trace in the run."""

    def _arm_rto(self) -> None:
        self.last_progress = self.sim.now
        self.sim.after(self.rto_ps, self._check_rto)

    def _check_rto(self):
        if self.finished:
            return IDLE
        now = self.sim.now
        if now - self.last_progress < self.rto_ps:
            self.sim.at(self.last_progress + self.rto_ps, self._check_rto)
            return IDLE
        self.last_progress = now
        self.sim.at(now + self.rto_ps, self._check_rto)
        if not self._outstanding():
            return IDLE
        self.net.counters["timeouts"] += 1
        self._go_back(self._acked())
        return None


class PacedRelease:
    """The release side of a rate-paced flow, shared by the DCQCN/QCN and TIMELY senders: one
    alarm at the pacer's next release (``next_ok``) and at most one NIC waiter.

    The host class provides ``_release`` (the flow's wake-up: call :meth:`_release_due`, hand
    packets to the NIC, then :meth:`_pace`), ``alarm`` (an :class:`Alarm` on ``_release``),
    ``limiter`` (a rate limiter configuration), ``next_seq``, ``more``, ``started``,
    ``finished``, ``waiting`` and ``next_ok``."""

    def _release_due(self) -> bool:
        """Whether the flow may hand its next packets to the NIC now.  If not, the flow keeps
        its one alarm (a release not yet due) or waits for the NIC's queue to drain; a wake-up
        at any other time (before the start, after the last packet, while waiting) changes
        nothing: not the alarm, and not its place among events of the same time."""
        if self.finished or not self.started or self.waiting or not self.more(self.next_seq):
            return False
        if self.sim.now < self.next_ok:
            self.alarm.keep(self.next_ok)
            return False
        nic = self.host.nic
        if nic.data_backlog() >= 2:
            # the port is paused (PFC) or busy: the NIC's scheduler holds the flow back
            self.waiting = True
            nic.waiters.append(self._drained)
            return False
        return True

    def _pace(self, sent_bytes: int, rate: int) -> None:
        """The next release after ``sent_bytes`` went at rate register ``rate``: the rate
        limiter's ``ceil(bytes * 2**CREDIT_FRAC / inc(rate))`` cycles after this cycle."""
        clk = self.net.clk_ps
        cycles = -(-(sent_bytes << CREDIT_FRAC) // max(self.limiter.inc_for(rate), 1))
        self.next_ok = (self.sim.now // clk + cycles) * clk
        self.alarm.set(self.next_ok)

    def _drained(self) -> None:
        self.waiting = False
        self._release()


class _RateSender(_Endpoint, _RtoMixin, PacedRelease):
    """A flow paced at its reaction point's current rate, with go-back-N on NAK or timeout.

    The pacing is the per-flow rate limiter's (:mod:`sim.models.rate_limiter`): a packet of L
    bytes sent at cycle t with the rate register R lets the next one go at cycle
    ``t + ceil(L * 2**24 / inc(R))``, R latched at the send.  The reaction point is a
    :class:`sim.net.engine_api.RateEngine` (``engine``), given each event (a send, a CNP/CNM)
    with its cycle; it runs the idle cycles in between itself.  ``rp``: the golden model
    inside a golden engine (traces wrap its methods), else None."""

    def __init__(self, net, spec, host, engine, line_rate_mbps: int):
        super().__init__(net, spec, host)
        self.engine = engine
        self.rp = getattr(engine, "model", None)
        self.limiter = _rate_limiter(10**12 // net.clk_ps, line_rate_mbps)
        self.rto_ps = net.params.rto_ns * PS_PER_NS
        self.next_seq = 0
        self.acked = 0
        self.finished = False
        self.alarm = Alarm(self.sim, self._release)
        self.waiting = False
        self.next_ok = 0

    def start(self) -> None:
        self.started = True
        self._arm_rto()
        self._release()

    def _acked(self) -> int:
        return self.acked

    def _outstanding(self) -> bool:
        return self.next_seq > self.acked or self.more(self.next_seq)

    def _go_back(self, seq: int) -> None:
        self.next_seq = max(seq, self.acked)
        if self.alarm.entry is None and not self.waiting:
            self._release()

    def _release(self) -> None:
        """The flow's wake-up (the pacing deadline, the NIC's queue drained): send the next
        packet if it is due (:meth:`PacedRelease._release_due`)."""
        if not self._release_due():
            return
        size = self.size_of(self.next_seq)
        self.engine.on_tx(self.sim.now // self.net.clk_ps, size)
        self.send_seq(self.next_seq)
        self.next_seq += 1
        self._pace(size, self.engine.rate())

    def on_control(self, pkt: Packet) -> None:
        if pkt.kind == ACK:
            if pkt.seq > self.acked:
                self.acked = pkt.seq
                self.last_progress = self.sim.now
                if self.packets is not None and self.acked >= self.packets:
                    self.finished = True
        elif pkt.kind == NAK:
            if pkt.seq >= self.acked:
                self.acked = pkt.seq
                self.last_progress = self.sim.now
                self._go_back(pkt.seq)
        elif pkt.kind == self._signal_kind:
            if pkt.sent_ps:
                # feedback delay: from the release of the packet that triggered it
                self.net.counters["feedback_delay_ps_sum"] += self.sim.now - pkt.sent_ps
                self.net.counters["feedback_count"] += 1
            self.engine.on_notification(self.sim.now // self.net.clk_ps, pkt.count)


@functools.cache
def _rate_limiter(clk_hz: int, line_rate_mbps: int) -> RateLimiterConfig:
    """The rate limiter's configuration, one per (clock, line rate), shared by every sender."""
    return RateLimiterConfig(flows=1, clk_hz=clk_hz, line_rate_mbps=line_rate_mbps)


def _rate_mbps(net, host) -> int:
    return host.nic.rate_bps // 10**6


class _CycleClock:
    def _cycle(self) -> int:
        c = self.sim.now // self.net.clk_ps
        if c < self.cycle:
            c = self.cycle
        self.cycle = c
        return c

    def _time(self, cycle: int | None) -> int | None:
        """The simulated time of the start of ``cycle`` (not before now)."""
        return None if cycle is None else max(cycle * self.net.clk_ps, self.sim.now)


def engine_for(net, engines: dict, default: str = "golden") -> tuple:
    """The (sender, receiver) engine factories of an algorithm (its ``engines``) for the
    network's engine kind ``net.engine`` (unset:
    ``default``); a kind the algorithm lacks is a ConfigError (:func:`check_engine`)."""
    kind = getattr(net, "engine", None)
    if kind is not None and kind not in engines:
        from ..engine_api import check_engine
        check_engine(net.algorithm.name, engines, kind)
    return engines.get(kind) or engines[default]


def make_engine(factory, cfg, net, host, spec):
    """A flow's engine from its factory: ``factory(cfg)``, or for a per-NIC engine (a factory
    with ``per_nic`` set, :mod:`sim.rtl.engine_host`) the flow's view of its host's engine."""
    if getattr(factory, "per_nic", False):
        return factory(cfg, net=net, host=host, flow=spec.flow_id)
    return factory(cfg)
