"""LDCP hosts (draft-dai-tsvwg-pfc-free-congestion-control-00): the window engine and its
transport in hardware, behind :class:`sim.net.engine_api.WindowSenderEngine` /
:class:`~sim.net.engine_api.WindowReceiverEngine`; the default engine is the fast twin
(``"fast"``), the cycle models are ``"golden"``, the Verilated RTL ``"rtl"``."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from hw.layouts import Ecn
from hw.nic.ldcp_window_config import ONE as CW_ONE
from hw.params import check_int, check_real
from hw.switch.marker_config import MarkerConfig
from sim.models.ldcp_transport import RxPacket, TAck

from ..engine import PS_PER_US, Alarm
from ..engine_api import (
    FastLdcpReceiver,
    FastLdcpSender,
    GoldenLdcpReceiver,
    GoldenLdcpSender,
    ldcp_receiver_rtl_engine,
    ldcp_sender_rtl_engine,
)
from ..packet import ACK, DATA, NAK, Packet, control
from .common import THRESHOLD_MAX, AlgorithmSpec, _CycleClock, _Endpoint, engine_for

#: engine kind -> (sender, receiver) factories; "fast" is the default; "rtl" the Verilated
#: sender and receiver (:mod:`sim.rtl.ldcp`)
ENGINES = {"fast": (FastLdcpSender, FastLdcpReceiver),
           "golden": (GoldenLdcpSender, GoldenLdcpReceiver),
           "rtl": (ldcp_sender_rtl_engine, ldcp_receiver_rtl_engine)}
DEFAULT_ENGINE = "fast"


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
        check_int(self, "kmin_bytes", self.kmin_bytes, 0, THRESHOLD_MAX)
        check_int(self, "kmax_bytes", self.kmax_bytes, self.kmin_bytes + 1, THRESHOLD_MAX,
                  lo_name="kmin_bytes + 1")
        check_real(self, "pmax", self.pmax, 0.0, 1.0)
        check_int(self, "k_bytes", self.k_bytes, 0, THRESHOLD_MAX)
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
        self.model = engine_for(net, ENGINES, DEFAULT_ENGINE)[0](cfg)
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
        self.model = engine_for(net, ENGINES, DEFAULT_ENGINE)[1](cfg)
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


SPEC = AlgorithmSpec(
    "ldcp", LdcpParams, "LDCP: fast start, per-ACK window (PAWA), sub-1 window, go-back-N",
    LdcpSenderEndpoint, LdcpReceiverEndpoint, _ldcp_marker, engines=ENGINES)
