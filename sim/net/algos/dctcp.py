"""DCTCP hosts (RFC 8257) on the golden models of :mod:`sim.models.dctcp` (the window and
the TCP transport: NewReno or go-back-N, RFC 6298 timeout, delayed ACKs)."""

from __future__ import annotations

from dataclasses import dataclass

from hw.layouts import Ecn
from hw.params import check_bool, check_choice, check_int
from hw.switch.marker_config import MarkerConfig
from sim.models.dctcp import (
    RECOVERY,
    RTO_MODES,
    DctcpConfig,
    DctcpReceiverModel,
    DctcpSenderModel,
    Rfc6298Rto,
)

from ..engine import IDLE, PS_PER_NS, Alarm
from ..packet import ACK, Packet, control
from .common import THRESHOLD_MAX, AlgorithmSpec, _Endpoint


@dataclass(frozen=True)
class DctcpParams:
    """DCTCP (RFC 8257; Alizadeh et al., SIGCOMM 2010): step marking at ``k_bytes`` (CE when
    q > K), Linux alpha with g = 2**-shift_g, Reno growth from ``init_cwnd`` packets, receiver
    ACK every ``ack_every`` packets (RFC 8257 state machine) with a delayed-ACK timer of
    ``delack_ns``, and the TCP transport of :mod:`sim.models.dctcp`:

    * ``recovery``: ``"newreno"`` (receiver keeps out-of-order packets, fast retransmit and
      recovery on three duplicate ACKs, RFC 6582) or ``"gobackn"`` (the earlier idealisation:
      out-of-order packets discarded, only the timeout recovers, going back N); NewReno is the
      default, as in Linux;
    * ``rto_mode``: ``"rfc6298"`` (SRTT/RTTVAR, Karn's rule, at least ``min_rto_ns``, at most
      ``max_rto_ns``; ``rto_ns`` before the first RTT sample) or ``"fixed"`` (always ``rto_ns``);
      ``rto_backoff`` doubles the timeout at each expiry until a valid RTT sample;
    * ``cwr_freeze``: Linux's reduction round (no growth until the packets sent before an ECN
      cut are acknowledged); False, the default for now, is the paper's idealisation (True
      changes the sawtooth of reproduction 1).

    ``recovery = "gobackn", rto_mode = "fixed", rto_backoff = false, cwr_freeze = false`` is the
    simulator's earlier DCTCP."""

    k_bytes: int = 65_000
    init_cwnd: int = 10
    shift_g: int = 4
    ack_every: int = 1
    rto_ns: int = 1_000_000
    delack_ns: int = 40_000
    recovery: str = "newreno"
    rto_mode: str = "rfc6298"
    min_rto_ns: int = 1_000_000
    max_rto_ns: int = 60_000_000_000
    rto_backoff: bool = True
    cwr_freeze: bool = False

    def __post_init__(self):
        check_int(self, "k_bytes", self.k_bytes, 1, THRESHOLD_MAX)
        check_choice(self, "recovery", self.recovery, RECOVERY)
        check_bool(self, "cwr_freeze", self.cwr_freeze)
        check_choice(self, "rto_mode", self.rto_mode, RTO_MODES)
        check_bool(self, "rto_backoff", self.rto_backoff)
        check_int(self, "min_rto_ns", self.min_rto_ns, 1000, 10**12)
        check_int(self, "max_rto_ns", self.max_rto_ns, self.min_rto_ns, 10**12,
                  lo_name="min_rto_ns")
        check_int(self, "rto_ns", self.rto_ns, 1000, self.max_rto_ns, hi_name="max_rto_ns")
        check_int(self, "delack_ns", self.delack_ns, 1, 10**9)
        self.engine()

    def engine(self) -> DctcpConfig:
        return DctcpConfig(shift_g=self.shift_g, init_cwnd=self.init_cwnd,
                           ack_every=self.ack_every, recovery=self.recovery,
                           cwr_freeze=self.cwr_freeze)

    def rto_timer(self) -> Rfc6298Rto:
        return Rfc6298Rto(self.rto_ns * PS_PER_NS, self.min_rto_ns * PS_PER_NS,
                          self.max_rto_ns * PS_PER_NS, adaptive=self.rto_mode == "rfc6298",
                          backoff=self.rto_backoff)


class DctcpSenderEndpoint(_Endpoint):
    """ACK-clocked: it sends on its start and on each ACK (``_pump``), and keeps one
    retransmission timer (RFC 6298 §5): started by a send when not running, restarted by an ACK
    of new data, stopped when everything sent is acknowledged.  The timer is one lazy check
    (an :class:`Alarm` on ``_rto_wake``) at a time no later than the deadline: a check that
    finds the deadline moved reschedules itself and is not an event (:data:`IDLE`), so a
    timeout that never fires leaves no trace in the run."""

    def __init__(self, net, spec, host):
        super().__init__(net, spec, host)
        self.engine = DctcpSenderModel(net.params.engine())
        self.rto = net.params.rto_timer()
        self.rto_deadline = None          # None: the timer is not running
        self.rto_alarm = Alarm(self.sim, self._rto_wake)
        self.finished = False

    def start(self) -> None:
        self.started = True
        self._pump()

    def _restart_rto(self) -> None:
        self.rto_deadline = t = self.sim.now + self.rto.rto
        alarm = self.rto_alarm
        if alarm.entry is None or alarm.time > t:     # (the RTO can shrink after a sample)
            alarm.set(t)

    def _rto_wake(self):
        if self.finished or self.rto_deadline is None:
            return IDLE
        if self.sim.now < self.rto_deadline:
            if self.rto_alarm.entry is None:        # our own early check: move it on
                self.rto_alarm.set(self.rto_deadline)
            return IDLE
        # expiry (RFC 6298 §5.4-5.6): back off, go back to the first unacknowledged packet
        self.net.counters["timeouts"] += 1
        self.rto.on_expiry()
        self.engine.on_timeout()
        self._restart_rto()
        self._pump()
        return None

    def _send(self, seq: int) -> None:
        retx = seq < self.high
        self.rto.on_send(seq, self.sim.now, retx)
        self.send_seq(seq)
        if self.rto_deadline is None:
            self._restart_rto()

    def _pump(self) -> None:
        """Send while the window allows (the wake-up after an ACK or a timeout)."""
        if not self.started or self.finished:
            return
        e = self.engine
        while e.can_send() and self.more(e.next_seq):
            self._send(e.on_send())

    def on_control(self, pkt: Packet) -> None:
        if pkt.kind != ACK or self.finished:
            return
        e = self.engine
        self.rto.on_ack(pkt.seq, self.sim.now)
        restart = e.on_ack(pkt.seq, pkt.ece)
        if self.packets is not None and e.acked >= self.packets:
            self.finished = True
            self.rto_deadline = None
            return
        if e.retransmit is not None:
            seq, e.retransmit = e.retransmit, None
            self._send(seq)
        if not e.outstanding():
            self.rto_deadline = None                 # RFC 6298 §5.2
        elif restart:
            self._restart_rto()                      # §5.3
        self._pump()

    def window_packets(self) -> float:
        return float(self.engine.cwnd)

    def measured(self) -> dict:
        e = self.engine
        return {"fast_retransmits": e.fast_retransmits, "timeouts": e.timeouts}


class DctcpReceiverEndpoint(_Endpoint):
    """The receiver's ACK policy (:class:`DctcpReceiverModel`) and its delayed-ACK timer: an
    :class:`Alarm` at ``delack_ns`` after the first packet an ACK is pending for (Linux keeps
    the earliest deadline); the last packet of a message is acknowledged at once."""

    def __init__(self, net, spec, host):
        super().__init__(net, spec, host)
        self.model = DctcpReceiverModel(net.params.engine())
        self.delack_ps = net.params.delack_ns * PS_PER_NS
        self.delack_at = None
        self.alarm = Alarm(self.sim, self._delack)
        self.delivered_bytes = 0
        self.done_ps = None

    def on_data(self, pkt: Packet) -> None:
        m = self.model
        before = m.expected
        acks = m.on_packet(pkt.seq, pkt.ecn == Ecn.CE)
        if m.expected > before:
            for seq in range(before, m.expected):
                self.delivered_bytes += self.size_of(seq)
            if self.packets is not None and m.expected >= self.packets and self.done_ps is None:
                self.done_ps = self.sim.now
                if m.pending:
                    acks = acks + [m.on_delack()[0]]
        self._send(acks)
        if m.pending:
            if self.delack_at is None:
                self.delack_at = self.sim.now + self.delack_ps
                self.alarm.set(self.delack_at)
        elif self.delack_at is not None:
            self.delack_at = None
            self.alarm.cancel()

    def _delack(self):
        if self.delack_at is None or self.sim.now < self.delack_at:
            return IDLE
        self.delack_at = None
        self._send(self.model.on_delack())
        return None

    def _send(self, acks) -> None:
        f = self.spec
        for acked, ece in acks:
            self.host.nic.send(control(ACK, f.flow_id, f.dst, f.src, acked, ece=ece))


def _dctcp_marker(params: DctcpParams, *, ports, mtu, buf_max, shared_buffer, sample_at):
    return MarkerConfig.dctcp(ports=ports, priorities=2, k=min(params.k_bytes, buf_max),
                              buf_max=buf_max, shared_buffer=shared_buffer, compare="gt",
                              sample_at=sample_at)


SPEC = AlgorithmSpec(
    "dctcp", DctcpParams, "DCTCP: window, per-window alpha, step marking at K",
    DctcpSenderEndpoint, DctcpReceiverEndpoint, _dctcp_marker)
