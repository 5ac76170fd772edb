"""The algorithm registry: per algorithm, its parameters, its switch profile and its endpoints.

The interface between a host and a flow's congestion engine is deliberately narrow, so that a
Verilated RTL engine can later replace a golden model inside the same simulation:

* a **sender** endpoint has ``start()`` (called at the flow's start time), ``on_control(pkt)``
  (ACK, NAK, CNP or CNM for its flow) and ``retx_bytes``; it transmits with
  ``host.nic.send(pkt)``;
* a **receiver** endpoint has ``on_data(pkt)``, ``delivered_bytes`` (in order) and ``done_ps``
  (when the last byte arrived, None before).

Each :class:`AlgorithmSpec` also says how the switches are configured for it (the marker
profile, optional QCN congestion points, L3QCN).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from hw.layouts import Ecn
from hw.nic.dcqcn_config import PROFILES as DCQCN_PROFILES
from hw.nic.dcqcn_config import DcqcnRpConfig
from hw.nic.ldcp_window_config import ONE as CW_ONE
from hw.nic.qcn_rp_config import QcnRpConfig
from hw.nic.rate_limiter_config import CREDIT_FRAC, RateLimiterConfig
from hw.params import ConfigError, check_bool, check_choice, check_int, check_real
from hw.switch.marker_config import MarkerConfig
from hw.switch.qcn_cp_config import SAMPLE_TABLE, QcnCpConfig
from sim.models import dcqcn as dcqcn_model
from sim.models import qcn as qcn_model
from sim.models.dctcp import (
    RECOVERY,
    RTO_MODES,
    DctcpConfig,
    DctcpReceiverModel,
    DctcpSenderModel,
    Rfc6298Rto,
)
from sim.models.ldcp_transport import RxPacket, TAck
from sim.models.ldcp_transport_fast import FastLdcpReceiverModel, FastLdcpSenderModel

from .engine import IDLE, PS_PER_NS, PS_PER_US, Alarm
from .packet import ACK, CNM, CNP, DATA, NAK, Packet, control


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


# --------------------------------------------------------------------------------------------
# DCTCP
# --------------------------------------------------------------------------------------------


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
        check_int(self, "k_bytes", self.k_bytes, 1, (1 << 24) - 1)
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


# --------------------------------------------------------------------------------------------
# Rate-based senders: DCQCN and QCN
# --------------------------------------------------------------------------------------------


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
    ``t + ceil(L * 2**24 / inc(R))``, R latched at the send.  The reaction point is stepped at the
    cycle of each event (a send, a CNP/CNM) and skips the idle cycles in between."""

    def __init__(self, net, spec, host, rp, line_rate_mbps: int):
        super().__init__(net, spec, host)
        self.rp = rp
        self.limiter = _rate_limiter(10**12 // net.clk_ps, line_rate_mbps)
        self.rto_ps = net.params.rto_ns * PS_PER_NS
        self.next_seq = 0
        self.acked = 0
        self.finished = False
        self.alarm = Alarm(self.sim, self._release)
        self.waiting = False
        self.next_ok = 0

    def _sync(self) -> None:
        cycle = self.sim.now // self.net.clk_ps
        if cycle > self.rp.cycle:
            self.rp.idle(cycle - self.rp.cycle)

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
        self._sync()
        self.rp.step(self._tx_event(size))
        self.send_seq(self.next_seq)
        self.next_seq += 1
        self._pace(size, self._rate())

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
            self._sync()
            self.rp.step(self._signal_event(pkt))


@dataclass(frozen=True)
class DcqcnParams:
    """DCQCN: reaction point profile (``paper``, ``ns3-rdma``, ``hpcc-mlx``, ``connectx``; the
    line rate is the NIC's), RED-ECN marking ``kmin/kmax/pmax`` (HPCC's 100 Gb/s values by
    default), the NP's minimum CNP interval, receiver ACK coalescing, the go-back-N timeout,
    and ``l3qcn``: switches build the CNPs themselves (L3QCN) instead of the receiver."""

    profile: str = "paper"
    kmin_bytes: int = 100_000
    kmax_bytes: int = 400_000
    pmax: float = 0.2
    cnp_interval_ns: int = 50_000
    ack_every: int = 16
    rto_ns: int = 1_000_000
    l3qcn: bool = False
    # reaction-point knobs over the profile's values (None: the profile's), in the ConnectX
    # names and units of hw.nic.dcqcn_config.DcqcnRpConfig: timers in us, rates in Mb/s
    rpg_time_reset: float | None = None          # T, rate-increase timer (us)
    rpg_byte_reset: int | None = None            # B, byte counter (bytes; 0: none)
    rpg_threshold: int | None = None             # F, fast-recovery stages
    rpg_ai_rate: int | None = None               # R_AI (Mb/s)
    rpg_hai_rate: int | None = None              # R_HAI (Mb/s)
    rpg_gd: int | None = None                    # cut = Rc alpha / 2**(gd - 10)
    rpg_min_dec_fac: int | None = None           # % of Rc one cut leaves at least
    rpg_min_rate: int | None = None              # Mb/s
    rpg_max_rate: int | None = None              # Mb/s (0: the line rate)
    rate_to_set_on_first_cnp: int | None = None  # Mb/s (0: a normal cut)
    dce_tcp_g: int | None = None                 # old alpha weight /1024: g = (1024 - it)/1024
    dce_tcp_rtt: float | None = None             # K, alpha timer (us)
    rate_reduce_monitor_period: float | None = None   # P (us)
    initial_alpha_value: int | None = None       # /1024
    alpha_mode: str | None = None                # profile switches (docs/dcqcn.md, Profiles)
    cut_mode: str | None = None
    increase_rule: str | None = None
    hai_step: str | None = None
    clamp_rule: str | None = None
    alpha_before_cut: bool | None = None
    bc_reload_on_clamp_only: bool | None = None
    halve_in_hyper: bool | None = None
    rt_guard: bool | None = None

    def __post_init__(self):
        check_choice(self, "profile", self.profile, DCQCN_PROFILES)
        # the knobs' own ranges (a ConfigError names the knob); the rates against the NIC's
        # line rate when a flow is built (runner.check, before any run)
        DcqcnRpConfig.profile(self.profile, clk_hz=250_000_000, line_rate_mbps=1_600_000,
                              **self.rp_knobs())
        check_int(self, "kmin_bytes", self.kmin_bytes, 0, (1 << 24) - 1)
        check_int(self, "kmax_bytes", self.kmax_bytes, self.kmin_bytes + 1, (1 << 24) - 1,
                  lo_name="kmin_bytes + 1")
        check_real(self, "pmax", self.pmax, 0.0, 1.0)
        check_int(self, "cnp_interval_ns", self.cnp_interval_ns, 0, 10**9)
        check_int(self, "ack_every", self.ack_every, 1, 1024)
        check_int(self, "rto_ns", self.rto_ns, 1000, 10**10)
        check_bool(self, "l3qcn", self.l3qcn)

    def rp_knobs(self) -> dict:
        """The reaction-point knobs set in the scenario (over the profile's values)."""
        return {f: getattr(self, f) for f in RP_KNOBS if getattr(self, f) is not None}

    def rp_config(self, line_rate_mbps: int, clk_hz: int) -> DcqcnRpConfig:
        """The profile at the NIC's line rate and the simulator's engine clock (timers in its
        cycles) with the scenario's knobs; the profile's minimum rate is capped at the line
        rate, a knob's is not (an error if above it)."""
        knobs = self.rp_knobs()
        base = DcqcnRpConfig.profile(self.profile)
        max_rate = min(knobs.pop("rpg_max_rate", 0) or line_rate_mbps, line_rate_mbps)
        min_rate = knobs.pop("rpg_min_rate", min(base.rpg_min_rate, max_rate))
        return base.replace(clk_hz=clk_hz, line_rate_mbps=line_rate_mbps, rpg_min_rate=min_rate,
                            rpg_max_rate=0 if max_rate == line_rate_mbps else max_rate, **knobs)


RP_KNOBS = ("rpg_time_reset", "rpg_byte_reset", "rpg_threshold", "rpg_ai_rate", "rpg_hai_rate",
            "rpg_gd", "rpg_min_dec_fac", "rpg_min_rate", "rpg_max_rate",
            "rate_to_set_on_first_cnp", "dce_tcp_g", "dce_tcp_rtt",
            "rate_reduce_monitor_period", "initial_alpha_value", "alpha_mode", "cut_mode",
            "increase_rule", "hai_step", "clamp_rule", "alpha_before_cut",
            "bc_reload_on_clamp_only", "halve_in_hyper", "rt_guard")


@dataclass(frozen=True)
class L3qcnParams(DcqcnParams):
    """DCQCN hosts with L3QCN switches: the congested switch builds the CNPs (``l3qcn`` on by
    default), so that one scenario can compare both side by side."""

    l3qcn: bool = True


@functools.cache
def _rate_limiter(clk_hz: int, line_rate_mbps: int) -> RateLimiterConfig:
    """The rate limiter's configuration, one per (clock, line rate), shared by every sender."""
    return RateLimiterConfig(flows=1, clk_hz=clk_hz, line_rate_mbps=line_rate_mbps)


def _rate_mbps(net, host) -> int:
    return host.nic.rate_bps // 10**6


class DcqcnSenderEndpoint(_RateSender):
    _signal_kind = CNP

    def __init__(self, net, spec, host):
        line = _rate_mbps(net, host)
        cfg = net.params.rp_config(line, 10**12 // net.clk_ps)
        super().__init__(net, spec, host, dcqcn_model.DcqcnRpModel(cfg), line)

    def _rate(self) -> int:
        return self.rp.state.rc

    def _tx_event(self, n: int):
        return dcqcn_model.DcqcnTx(n)

    def _signal_event(self, pkt):
        return dcqcn_model.DcqcnCnp()


class DcqcnReceiverEndpoint(_InOrderReceiver):
    """The notification point: at most one CNP per ``cnp_interval`` per flow; a CE packet
    inside the interval makes a CNP due at the interval's end (the paper rule of
    :class:`sim.models.dcqcn_np.NpModel`)."""

    def __init__(self, net, spec, host):
        super().__init__(net, spec, host, net.params.ack_every)
        self.interval = net.params.cnp_interval_ns * PS_PER_NS
        self.last_cnp = None
        self.pending_cnp = False
        self.ce_sent_ps = 0

    def on_data(self, pkt: Packet) -> None:
        if pkt.ecn == Ecn.CE:
            now = self.sim.now
            self.ce_sent_ps = pkt.sent_ps
            if self.last_cnp is None or now - self.last_cnp >= self.interval:
                self._cnp()
            elif not self.pending_cnp:
                self.pending_cnp = True
                self.sim.at(self.last_cnp + self.interval, self._cnp)
        super().on_data(pkt)

    def _cnp(self) -> None:
        self.pending_cnp = False
        self.last_cnp = self.sim.now
        self.net.counters["cnps"] += 1
        f = self.spec
        self.host.nic.send(control(CNP, f.flow_id, f.dst, f.src, sent_ps=self.ce_sent_ps))


def _dcqcn_marker(params: DcqcnParams, *, ports, mtu, buf_max, shared_buffer, sample_at):
    return MarkerConfig.dcqcn(ports=ports, priorities=2,
                              k_min=min(params.kmin_bytes, buf_max - 1),
                              k_max=min(params.kmax_bytes, buf_max), p_max=params.pmax,
                              buf_max=buf_max, shared_buffer=shared_buffer, sample_at=sample_at,
                              compare="gt")


@dataclass(frozen=True)
class QcnParams:
    """QCN: reaction point (the IEEE MIB values, which are for 10 Gb/s, with the increase steps
    scaled x10 and the timer /10 for 100 Gb/s; the line rate is the NIC's), congestion point
    on every switch egress port, receiver ACKs for reliability (go-back-N), timeout.

    Congestion point (:class:`hw.switch.qcn_cp_config.QcnCpConfig`): set point ``q_eq_bytes``,
    weight ``w``, the sampling table scaled to ``sample_base_bytes`` (the interval while
    Fb >= 0; the IEEE table's 150 KB = 153,600 B by default, every entry scaled by the same
    factor and rounded) and the sampling jitter ``cp_jitter``.  Reaction point
    (:class:`hw.nic.qcn_rp_config.QcnRpConfig`): ``gd`` (Gd = 2**-gd), ``min_dec_fac``,
    ``min_rate_mbps``, ``ai_rate_mbps`` (R_AI), ``hai_rate_mbps`` (R_HAI), ``byte_reset`` (the
    byte counter's limit BC), ``time_reset_us`` (the timer T), ``threshold`` (F: fast recovery
    lasts F byte-counter/timer cycles), ``tr_guard`` and the reload jitter ``rp_jitter``."""

    q_eq_bytes: int = 26_000
    w: int = 2
    sample_base_bytes: int = SAMPLE_TABLE[0]
    cp_jitter: float = 0.15
    gd: int = 7
    min_dec_fac: float = 0.5
    min_rate_mbps: float = 10.0
    ai_rate_mbps: float = 50.0
    hai_rate_mbps: float = 500.0
    byte_reset: int = 150_000
    time_reset_us: float = 1_500.0
    threshold: int = 5
    tr_guard: bool = True
    rp_jitter: float = 0.0
    ack_every: int = 16
    rto_ns: int = 1_000_000

    def __post_init__(self):
        check_int(self, "sample_base_bytes", self.sample_base_bytes, 8, (1 << 23) - 1)
        # the blocks' own checks, reported on this class's field that set the value
        for build, names in ((lambda: self.cp(1000), _QCN_CP_FIELDS),
                             (lambda: self.rp(100_000, 250_000_000), _QCN_RP_FIELDS)):
            try:
                build()
            except ConfigError as e:
                name = names.get(e.field, e.field)
                if not hasattr(self, name):
                    raise
                allowed = re.sub(rf"\b{e.field}\b", name, e.allowed)
                raise ConfigError(self, name, getattr(self, name), allowed) from None
        check_int(self, "ack_every", self.ack_every, 1, 1024)
        check_int(self, "rto_ns", self.rto_ns, 1000, 10**10)

    def cp(self, mtu: int) -> QcnCpConfig:
        base = self.sample_base_bytes
        table = SAMPLE_TABLE if base == SAMPLE_TABLE[0] else tuple(
            max(1, round(s * base / SAMPLE_TABLE[0])) for s in SAMPLE_TABLE)
        return QcnCpConfig(q_eq=self.q_eq_bytes, w=self.w, sample_table=table,
                           jitter=self.cp_jitter)

    def rp(self, line_rate_mbps: int, clk_hz: int) -> QcnRpConfig:
        """The reaction point at the NIC's line rate and the simulator's engine clock."""
        return QcnRpConfig(clk_hz=clk_hz, line_rate_mbps=line_rate_mbps,
                           min_rate_mbps=self.min_rate_mbps,
                           ai_rate_mbps=self.ai_rate_mbps, hai_rate_mbps=self.hai_rate_mbps,
                           gd=self.gd, min_dec_fac=self.min_dec_fac, threshold=self.threshold,
                           byte_reset=self.byte_reset, time_reset_us=self.time_reset_us,
                           tr_guard=self.tr_guard, jitter=self.rp_jitter)


#: QcnCpConfig / QcnRpConfig field -> the QcnParams field that sets it (where they differ)
_QCN_CP_FIELDS = {"q_eq": "q_eq_bytes", "sample_table": "sample_base_bytes",
                  "jitter": "cp_jitter"}
_QCN_RP_FIELDS = {"jitter": "rp_jitter"}


class QcnSenderEndpoint(_RateSender):
    _signal_kind = CNM

    def __init__(self, net, spec, host):
        line = _rate_mbps(net, host)
        cfg = net.params.rp(line, 10**12 // net.clk_ps)
        cfg = cfg.replace(lfsr=net.seeded(cfg.lfsr, "rp", spec.flow_id))
        super().__init__(net, spec, host, qcn_model.QcnRpModel(cfg), line)

    def _rate(self) -> int:
        return self.rp.state.cr

    def _tx_event(self, n: int):
        return qcn_model.QcnTx(n)

    def _signal_event(self, pkt):
        return qcn_model.QcnCnm(pkt.count)


class QcnReceiverEndpoint(_InOrderReceiver):
    def __init__(self, net, spec, host):
        super().__init__(net, spec, host, net.params.ack_every)


def _no_marking(params, *, ports, mtu, buf_max, shared_buffer, sample_at):
    """QCN frames are Not-ECT: the DCTCP profile forwards them; K at the buffer size."""
    return MarkerConfig.dctcp(ports=ports, priorities=2, k=buf_max, buf_max=buf_max,
                              shared_buffer=shared_buffer, compare="gt", sample_at=sample_at)


# --------------------------------------------------------------------------------------------
# LDCP
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LdcpParams:
    """LDCP (draft-dai-tsvwg-pfc-free-congestion-control-00): PAWA ``alpha``/``beta``, sub-1
    ``gamma``, receiver delayed-ACK limit
    ``m`` (1: an ACK per packet), window cap, the base RTT of the sub-1 timer and of the BDP
    (``base_rtt_ns``; 0, the default: each flow's own, from its path as the topology knows it,
    :meth:`sim.net.network.Network.base_rtt_ps`), fast start's initial window ``iw`` (0: the BDP
    from the NIC's line rate and the base RTT), the transport's BDP ``bdp`` (packets: the window
    loaded when fast start ends with its whole IW acknowledged; 0: ceil(line rate x base RTT /
    MTU)), the receiver's delayed-ACK flush timer ``ack_delay_ns`` (only with ``m`` > 1; 0: a
    quarter of the base RTT), the retransmission timeout ``rto_ns`` (0: the
    larger of 8 base RTTs and the base RTT plus the path's worst queueing, :meth:`transport`);
    switch marking: the WRED ramp ``kmin/kmax/pmax`` for ECN-capable packets and the Not-ECT
    drop threshold ``k_bytes`` (fast start's packets).  Each flow's chosen base RTT, IW, BDP
    and timeout are in its ``FlowRecord.settings``.

    ``k_bytes`` defaults to ``kmax_bytes``: a fast-start packet is dropped exactly when the queue
    is past the ramp, where every ECN-capable packet is marked anyway.  A K below the standing
    queue that PAWA settles at (the ramp's fixed point, ~100-130 KB for 2-16 flows here) drops
    every fast-start packet of every new flow: ``docs/results.md`` (reproduction 5) measures
    the web-search p99 slowdown at 95 with K = 40 KB and 3.4 with K = 200 KB."""

    alpha: float = 1.0
    beta: float = 0.5
    gamma: float = 0.125
    m: int = 1
    cw_max: float = 1024.0
    base_rtt_ns: int = 0
    iw: int = 0
    bdp: float = 0.0
    ack_delay_ns: int = 0
    rto_ns: int = 0
    kmin_bytes: int = 20_000
    kmax_bytes: int = 200_000
    pmax: float = 0.2
    k_bytes: int = 200_000

    def __post_init__(self):
        check_int(self, "base_rtt_ns", self.base_rtt_ns, 0, 10**8)
        if 0 < self.base_rtt_ns < 4:
            check_int(self, "base_rtt_ns", self.base_rtt_ns, 4, 10**8)   # (0 or a clock cycle)
        check_int(self, "iw", self.iw, 0, 65535)
        check_real(self, "bdp", self.bdp, 0.0, self.cw_max)
        if 0 < self.bdp < 1:
            check_real(self, "bdp", self.bdp, 1.0, self.cw_max)      # (0, or at least 1 packet)
        check_int(self, "ack_delay_ns", self.ack_delay_ns, 0, 10**8)
        check_int(self, "rto_ns", self.rto_ns, 0, 10**10)
        check_int(self, "kmin_bytes", self.kmin_bytes, 0, (1 << 24) - 1)
        check_int(self, "kmax_bytes", self.kmax_bytes, self.kmin_bytes + 1, (1 << 24) - 1,
                  lo_name="kmin_bytes + 1")
        check_real(self, "pmax", self.pmax, 0.0, 1.0)
        check_int(self, "k_bytes", self.k_bytes, 0, (1 << 24) - 1)
        self.transport(100.0, 1024, 250_000_000, 10_000_000)

    def transport(self, line_rate_gbps: float, mtu: int, clk_hz: int, path_rtt_ps: int,
                  path_queueing_ps: int = 0):
        """The transport configuration of one flow (``path_rtt_ps``: its path's base RTT, used
        when ``base_rtt_ns`` is 0).  The retransmission timeout, when ``rto_ns`` is 0, is the
        larger of 8 base RTTs and the base RTT plus ``path_queueing_ps`` (the longest a packet
        can wait in the path's queues, every egress full): a timeout below that fires for
        packets that are only queued (256-sender incast behind a 2 MB queue: 747 KB, 60 us,
        against 8 RTTs = 33 us)."""
        from hw.nic.ldcp_transport_config import LdcpTransportConfig
        from hw.nic.ldcp_window_config import LdcpWindowConfig
        rtt_ps = self.base_rtt_ns * 1000 or path_rtt_ps
        window = LdcpWindowConfig(alpha=self.alpha, beta=self.beta, gamma=self.gamma, m=self.m,
                                  cw_max=self.cw_max, cw_init=min(16.0, self.cw_max),
                                  rtt_us=rtt_ps / 10**6, clk_hz=clk_hz, mtu=mtu)
        rto_ps = self.rto_ns * 1000 or max(8 * rtt_ps, rtt_ps + path_queueing_ps)
        return LdcpTransportConfig(window=window, line_rate_gbps=line_rate_gbps,
                                   iw=self.iw or None, bdp=self.bdp or None,
                                   rto_us=rto_ps / 10**6,
                                   ack_delay_us=self.ack_delay_ns / 1000 or None, lsn_width=48)


@functools.cache
def _ldcp_transport_cached(params: LdcpParams, rate_bps: int, mtu: int, clk_hz: int,
                           path_rtt_ps: int, path_queueing_ps: int):
    """One validated transport configuration per (parameters, line rate, path), shared by
    every sender and receiver with those (thousands in an incast)."""
    return params.transport(rate_bps / 1e9, mtu, clk_hz, path_rtt_ps, path_queueing_ps)


def _ldcp_transport(net, spec, host):
    """The flow's transport configuration: its base RTT from its path unless the scenario sets
    ``base_rtt_ns``; its timeout above the path's worst queueing unless it sets ``rto_ns``."""
    p = net.params
    rtt = 0 if p.base_rtt_ns else net.base_rtt_ps(spec.src, spec.dst, spec.flow_id)
    queueing = 0 if p.rto_ns else net.max_queueing_ps(spec.src, spec.dst, spec.flow_id)
    return _ldcp_transport_cached(p, host.nic.rate_bps, net.mtu, 10**12 // net.clk_ps, rtt,
                                  queueing)


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


class LdcpSenderEndpoint(_Endpoint, _CycleClock):
    """The flow's message is one LDCP message (a long-lived flow: the longest one the 48-bit
    LSN holds, released until ``stop_ps``).  The sender model is asked for a packet whenever
    the NIC's data queue has room (the NIC's serialization is fast start's line rate).

    Wake-ups: after every input (start, ACK, the NIC's queue drained) and every released
    packet, the endpoint asks the model for its exact ``next_wakeup`` (the next cycle at which
    it offers a packet, becomes done, or a timer fires) and keeps one alarm there, replacing the
    one before; nothing else wakes it.  A wake-up at any other time (:meth:`_pump` called
    spuriously) finds nothing to release and recomputes the same alarm, which keeps its place
    in the event order: the run does not depend on when, or whether, a timer that does not fire
    would have fired (the retransmission timeout's value, for instance)."""

    def __init__(self, net, spec, host):
        super().__init__(net, spec, host)
        cfg = _ldcp_transport(net, spec, host)
        self.cfg = cfg
        self.model = FastLdcpSenderModel(cfg)
        self.length = spec.size_bytes or cfg.max_message
        self.cycle = 0
        self.alarm = Alarm(self.sim, self._pump)
        self.waiting = False
        self.rtos = 0
        self.below_one = False
        # per-flow measurements (:meth:`measured`), sampled at ACK arrivals only (inputs, not
        # wake-ups, so that they do not depend on when the endpoint is woken)
        self.gamma = cfg.window.registers().gamma
        self.last_ack_ps: int | None = None
        self.last_cw: int | None = None   # the engine's cw at the last ACK (before its update)
        self.min_cw: int | None = None
        self.below_one_ps = 0             # time with cw < 1 packet
        self.at_floor_ps = 0              # time with cw at the floor gamma
        self.sub1_from_ps: int | None = None   # first ACK that found cw < 1
        self.fs_exit_ps: int | None = None     # when fast start ended (a loss or a full IW)

    def start(self) -> None:
        self.model.start_message(self._cycle(), self.length)
        self._pump(True)

    def _pump(self, fresh: bool = False) -> None:
        """Release the packet the model offers now, if the NIC has room, and set the alarm at
        the model's next wake-up.  ``fresh``: after an input, the alarm is set anew even at the
        same time (its place among same-time events then does not depend on an alarm from
        before the input, which may have been a timer's that will not fire)."""
        m = self.model
        if m.stats.rtos != self.rtos:
            self.net.counters["timeouts"] += m.stats.rtos - self.rtos
            self.rtos = m.stats.rtos
        stop = self.spec.stop_ps
        if m.done or (stop is not None and self.sim.now >= stop):
            self.alarm.cancel()
            return
        nic = self.host.nic
        if self.waiting:
            return
        if nic.data_backlog() >= 2:
            self.waiting = True
            nic.waiters.append(self._drained)
            return
        cycle = self._cycle()
        p = m.release(cycle)
        if p is not None:
            f = self.spec
            self.transmit(Packet(DATA, f.flow_id, f.src, f.dst, p.lsn, p.length,
                                 Ecn.ECT0 if p.ect else Ecn.NOT_ECT, retx=p.retx, last=p.last,
                                 payload=p.length))
        w = m.next_wakeup()
        t = self._time(None if w is None else max(w, cycle + 1))
        if fresh or p is not None:
            self.alarm.set(t)
        else:
            self.alarm.keep(t)

    def _drained(self) -> None:
        self.waiting = False
        self._pump(True)

    def settings(self) -> dict:
        """The flow's base RTT and what derives from it (for its ``FlowRecord``)."""
        cfg = self.cfg
        r = cfg.registers()
        return {"base_rtt_us": round(cfg.window.rtt_us, 4),
                "rtt_cycles": cfg.window.registers().rtt, "iw_packets": r.iw,
                "bdp_packets": round(r.cw_bdp / CW_ONE, 3),
                "rto_us": round(r.rto / cfg.window.clk_hz * 1e6, 3)}

    def measured(self) -> dict:
        """What was measured of the flow's window and fast start (described at
        :meth:`_note_ack`), times in microseconds; read at the end of a run."""
        below, floor = self.below_one_ps, self.at_floor_ps
        if self.last_cw is not None and not self.model.done:   # (still open at the end)
            tail = self.sim.now - self.last_ack_ps
            below += tail if self.last_cw < CW_ONE else 0
            floor += tail if self.last_cw <= self.gamma else 0
        st = self.model.stats
        fs_exit = self.fs_exit_ps
        if fs_exit is None and self._fs_exited():
            fs_exit = self.last_ack_ps

        def us(ps):
            return round(ps / PS_PER_US, 4)

        def since_start(ps):
            return None if ps is None else us(ps - self.spec.start_ps)
        return {"below_one_us": us(below), "at_floor_us": us(floor),
                "below_one_from_us": since_start(self.sub1_from_ps),
                "min_cw_packets": None if self.min_cw is None else round(self.min_cw / CW_ONE, 5),
                "fast_start_exit": 1 if st.exits[1] else 2 if st.exits[2] else 0,
                "fast_start_exit_us": since_start(fs_exit), "naks": st.naks,
                "timeouts": st.rtos}

    def window_packets(self) -> float:
        """The window engine's ``cw`` in packets now (sampled for tracked flows)."""
        self.model.advance(self._cycle())
        return self.model.cw / CW_ONE

    def _note_sub1(self) -> None:
        if not self.below_one and self.model.cw < CW_ONE:
            self.below_one = True
            self.net.counters["flows_below_one_packet"] += 1

    def _note_ack(self) -> None:
        """At an ACK's arrival, once the engine has reached its cycle (the window before this
        ACK's own update, which commits a few cycles later): the time since the previous ACK
        counts as below one packet (``below_one_us``) if this window is below one packet, and
        as at the floor (``at_floor_us``) if it is gamma, the smallest window.  Also the
        smallest window after fast start (``min_cw_packets``), the first ACK that found the
        window below one packet (``below_one_from_us``, from the flow's start), and when fast
        start ended (``fast_start_exit_us``: the arrival of the ACK or NAK that ended it;
        ``fast_start_exit`` 1 by a loss, 2 with the whole IW acknowledged; the engine takes an
        ACK at the edge after its arrival, so the exit is seen at the next ACK).  A window's
        change is seen at the next ACK: the error is one update's latency per crossing,
        against hundreds of microseconds measured."""
        now, cw = self.sim.now, self.model.cw
        if self.last_ack_ps is not None:
            if cw < CW_ONE:
                self.below_one_ps += now - self.last_ack_ps
            if cw <= self.gamma:
                self.at_floor_ps += now - self.last_ack_ps
        if cw < CW_ONE and self.sub1_from_ps is None:
            self.sub1_from_ps = now
        if self.fs_exit_ps is None and self._fs_exited():
            self.fs_exit_ps = self.last_ack_ps      # (the ACK before: it was taken since)
        elif self.fs_exit_ps is not None and (self.min_cw is None or cw < self.min_cw):
            self.min_cw = cw        # (the stable stage's window: fast start has none)
        self.last_ack_ps, self.last_cw = now, cw

    def _fs_exited(self) -> bool:
        ex = self.model.stats.exits
        return bool(ex[1] or ex[2])

    def on_control(self, pkt: Packet) -> None:
        if pkt.kind not in (ACK, NAK):
            return
        self.model.on_ack(self._cycle(), TAck(pkt.seq, pkt.ece, pkt.count, pkt.kind == NAK))
        self._note_ack()
        self._pump(True)
        self._note_sub1()


class LdcpReceiverEndpoint(_Endpoint, _CycleClock):
    def __init__(self, net, spec, host):
        super().__init__(net, spec, host)
        cfg = _ldcp_transport(net, spec, net.hosts[spec.src])
        self.model = FastLdcpReceiverModel(cfg)
        self.cycle = 0
        self.alarm = Alarm(self.sim, self._poll)
        self.delivered_bytes = 0
        self.done_ps = None

    def on_data(self, pkt: Packet) -> None:
        acks = self.model.receive(self._cycle(), RxPacket(pkt.seq, pkt.payload,
                                                          pkt.ecn == Ecn.CE, pkt.last))
        self._deliver()
        self._send(acks)

    def _deliver(self) -> None:
        got = self.model.delivered
        if got:
            for d in got:
                self.delivered_bytes += d.length
                if d.last:
                    self.done_ps = self.sim.now
            got.clear()

    def _send(self, acks) -> None:
        f = self.spec
        for a in acks:
            self.host.nic.send(control(NAK if a.nak else ACK, f.flow_id, f.dst, f.src, a.lsn,
                                       ece=a.ece, count=a.n))
        self.alarm.keep(self._time(self.model.next_wakeup()))

    def _poll(self) -> None:
        """The delayed-ACK flush timer's wake-up."""
        self._send(self.model.poll(self._cycle()))


def _ldcp_marker(params: LdcpParams, *, ports, mtu, buf_max, shared_buffer, sample_at):
    return MarkerConfig.ldcp(ports=ports, priorities=2,
                             k_min=min(params.kmin_bytes, buf_max - 1),
                             k_max=min(params.kmax_bytes, buf_max), p_max=params.pmax,
                             k_drop=min(params.k_bytes, buf_max),
                             buf_max=buf_max, shared_buffer=shared_buffer, sample_at=sample_at)


# --------------------------------------------------------------------------------------------
# The registry
# --------------------------------------------------------------------------------------------

ALGORITHMS: dict[str, AlgorithmSpec] = {
    "ldcp": AlgorithmSpec(
        "ldcp", LdcpParams, "LDCP: fast start, per-ACK window (PAWA), sub-1 window, go-back-N",
        LdcpSenderEndpoint, LdcpReceiverEndpoint, _ldcp_marker),
    "dctcp": AlgorithmSpec(
        "dctcp", DctcpParams, "DCTCP: window, per-window alpha, step marking at K",
        DctcpSenderEndpoint, DctcpReceiverEndpoint, _dctcp_marker),
    "dcqcn": AlgorithmSpec(
        "dcqcn", DcqcnParams, "DCQCN: rate-based RP/NP with RED-ECN marking",
        DcqcnSenderEndpoint, DcqcnReceiverEndpoint, _dcqcn_marker,
        l3qcn=lambda p: p.l3qcn),
    "l3qcn": AlgorithmSpec(
        "l3qcn", L3qcnParams, "DCQCN hosts, CNPs built by the congested switch (L3QCN)",
        DcqcnSenderEndpoint, DcqcnReceiverEndpoint, _dcqcn_marker,
        l3qcn=lambda p: p.l3qcn),
    "qcn": AlgorithmSpec(
        "qcn", QcnParams, "QCN: rate-based RP driven by the switches' congestion points",
        QcnSenderEndpoint, QcnReceiverEndpoint, _no_marking,
        cp_config=lambda p, mtu: p.cp(mtu)),
}

# The delay-based algorithms live in their own modules, which register themselves here (they
# import this module, so they are imported last: every entry point sees all six algorithms).
from . import swift as _swift  # noqa: E402, F401, I001
from . import timely as _timely  # noqa: E402, F401
