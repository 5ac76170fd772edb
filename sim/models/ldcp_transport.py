"""Bit-exact golden models of the LDCP transport: the sender (fast start, LSN sliding window,
go-back-N, retransmission timeout) and the receiver (expected LSN, ACK/delayed ACK with the CE
echo, NAK).  ``docs/ldcp-transport.md`` has the rules and the rationale; the RTL is
:mod:`hw.nic.ldcp_transport`.

Units: LSNs and lengths in bytes (a message is MTU-sized packets except the last), time in
integer clock cycles (``cfg.window.clk_hz``; 4 ns at 250 MHz).  A *flow* is one message: the
sender is started with the message length, LSNs count from 0, and the flow ends (``done``) when
every byte is acknowledged.  A receiver instance (or :meth:`LdcpReceiverModel.clear`) per message.

Interface for an event-driven simulator (integer cycles, non-decreasing across calls)
------------------------------------------------------------------------------------------
Sender, :class:`LdcpSenderModel` ``s = LdcpSenderModel(cfg)``:

``s.start_message(cycle, length)``
    Start a message of ``length`` bytes (1..``cfg.max_message``, else ``ConfigError``).  Only
    when the previous one is done (``s.active`` is False).
``s.on_ack(cycle, ack)``
    An ACK/NAK (:class:`TAck`) arrives.  ACKs are queued and taken one per cycle (the RTL takes
    one per clock and none while it loads the window engine), so several in one cycle are fine.
``s.release(cycle) -> TxPacket | None``
    Take the packet the sender offers at ``cycle`` (LSN, length, ECN-capable, retransmission,
    last of message), or None if it offers none.  At most one per cycle.  The sender does not
    pace at line rate: call it when the NIC's link is free (the caller's serialisation is the
    line-rate pacing of fast start).
``s.next_wakeup() -> int | None``
    The next cycle (>= the current one) at which the sender offers a packet, becomes ``done``
    (the queued ACKs applied), or a timer (sub-1 pacing, retransmission timeout) fires and
    changes its state, if no further input arrives; None if never (idle, or waiting for ACKs
    with no timer running).  After a wakeup at which ``release`` gives None (a timer fired),
    ask again.  The answer is exact and the same from every cycle before it (no input in
    between): a simulator may ask at any time, and a timer that does not fire first (a
    retransmission timeout behind the sub-1 timer, say) is not reported.
``s.done``, ``s.active``, ``s.stage``, ``s.cw`` (UQ16.16), ``s.stats`` (counters)
    Read after advancing to the cycle of interest (any call above advances; ``s.advance(cycle)``
    does only that).

Idle cycles are skipped in O(1) per timer expiry; cycles with work in flight (an ACK being
applied by the window engine, a window load) are stepped one by one (at most ~20 per ACK).

Receiver, :class:`LdcpReceiverModel` ``r = LdcpReceiverModel(cfg)``:

``r.receive(cycle, pkt) -> list[TAck]``
    A data packet (:class:`RxPacket`: LSN, length, CE, last of message) arrives; returns the
    ACK/NAKs to send now (0, 1 or 2: a CE-marked packet flushes the delayed unmarked packets in
    their own ACK before its ECE ACK).  In-order bytes are appended to ``r.delivered``.
``r.poll(cycle) -> list[TAck]``
    The delayed-ACK flush timer: the ACK due at or before ``cycle`` (only with ``m > 1``).
``r.next_wakeup() -> int | None``
    The cycle at which the flush timer will fire, or None.

The cycle-level views used by the cocotb comparison are :meth:`LdcpSenderModel.outputs` /
:meth:`LdcpSenderModel.edge` and :class:`LdcpReceiverCycleModel` (``outputs`` / ``edge``).
"""

from __future__ import annotations

import dataclasses
from collections import deque
from dataclasses import dataclass, field

from hw.layouts import LdcpTxLoad, LdcpTxStage
from hw.nic.ldcp_transport_config import (
    RTO_WIDTH,
    SETTLE_CYCLES,
    LdcpTransportConfig,
    LdcpTransportReg,
)
from hw.nic.ldcp_window_config import ONE, LdcpWindowReg
from hw.params import ConfigError

from .ldcp_window import Ack, LdcpWindowModel

__all__ = ["TxPacket", "RxPacket", "TAck", "TxState", "TxOutputs", "LdcpSenderModel",
           "LdcpReceiverModel", "LdcpReceiverCycleModel", "RxState", "RxOutputs", "Deliver",
           "rx_core"]

_SAT16 = (1 << 16) - 1
_RTO_MASK = (1 << RTO_WIDTH) - 1
#: ``next_wakeup`` steps at most this many busy edges (no sane register set reaches it).
_SEARCH = 1 << 20


@dataclass(frozen=True)
class TxPacket:
    lsn: int
    length: int
    ect: bool
    retx: bool
    last: bool


@dataclass(frozen=True)
class RxPacket:
    lsn: int
    length: int
    ce: bool
    last: bool


@dataclass(frozen=True)
class TAck:
    """Cumulative ``lsn`` (next byte expected), ECN-Echo, packets newly confirmed ``n``,
    NAK (go back to ``lsn``)."""
    lsn: int
    ece: bool = False
    n: int = 0
    nak: bool = False


@dataclass(frozen=True)
class Deliver:
    lsn: int
    length: int
    last: bool


@dataclass(frozen=True)
class TxState:
    """The sender's registers (the RTL's ``state`` port, :func:`ldcp_tx_state_layout`)."""
    active: bool = False
    done: bool = False
    stage: LdcpTxStage = LdcpTxStage.FAST
    first_ack: bool = False
    load_pending: bool = False
    load_kind: LdcpTxLoad = LdcpTxLoad.ACKED
    settle: int = 0
    msg_len: int = 0
    nxt: int = 0
    una: int = 0
    snd_max: int = 0
    new_cnt: int = 0
    fs_acked: int = 0
    rto_cnt: int = 0
    ev_rto: bool = False
    ev_bad_ack: bool = False
    ev_exit: int = 0          # 0 none, 1 loss in fast start, 2 all IW packets acknowledged


@dataclass(frozen=True)
class TxOutputs:
    pkt: TxPacket | None      # the packet offered this cycle
    ack_ready: bool
    start_ready: bool
    csr_ready: bool
    state: TxState
    cw: int                   # the window engine's committed window, UQ16.16


@dataclass
class TxStats:
    packets: int = 0
    retransmissions: int = 0
    naks: int = 0
    rtos: int = 0
    bad_acks: int = 0
    exits: dict = field(default_factory=lambda: {1: 0, 2: 0})


def check_message_length(cfg: LdcpTransportConfig, length) -> None:
    """A message holds 1 .. 2**lsn_width - 1 bytes (the LSN never wraps)."""
    if not isinstance(length, int) or not 1 <= length <= cfg.max_message:
        raise ConfigError("LdcpSenderModel", "length", length,
                          f"1 <= length <= 2**lsn_width - 1 (= {cfg.max_message})")


class LdcpSenderModel:
    """Cycle-accurate model of :class:`hw.nic.ldcp_transport.LdcpSenderModel` (one flow), with the
    event-level interface of the module docstring on top.

    Per cycle: :meth:`outputs`, then :meth:`edge` with that cycle's inputs.  At an edge, from the
    values of the cycle before it (``s`` the state, ``o`` the outputs):

    1. Window engine inputs: the ACK (``ece, n``) if one is taken, the flow is active, in the
       stable stage, valid and ``n > 0``; ``sent`` if a packet is taken; a window load
       (``LdcpWindowReg.CW``) if one is pending and the engine is idle (value: ``fs_acked``
       packets, ``CW_BDP``, or ``min(cw, 1)``) -- then ``settle = SETTLE_CYCLES``, counting down
       at each later edge; the stable-stage gate stays closed until it is 0.
    2. ACK (taken when ``ack_ready`` = no pending load; ignored while inactive; ``lsn >
       snd_max`` is a bad ACK, ignored): ``una = max(una, lsn)``.  Fast start: ``first_ack``,
       ``fs_acked += n`` (saturating); a NAK is exit 1 (load ``fs_acked``), else ``una >=
       iw_bytes`` is exit 2 (load ``CW_BDP``); both enter the stable stage.  NAK: go back N
       (``nxt = una``).
    3. Release (the offered packet taken): ``nxt += length``; a new packet (``nxt == snd_max``)
       also moves ``snd_max`` and counts ``new_cnt``.  A go-back-N at the same edge wins for
       ``nxt``, and ``nxt`` never stays below ``una`` (an ACK of packets sent before a
       go-back-N can arrive after it: the acknowledged bytes are skipped).
    4. Retransmission timeout: ``rto_cnt`` counts edges while active, no load pending and
       ``una < nxt`` (bytes in flight); it restarts on progress (``lsn > una``); at
       ``rto_cnt == RTO - 1`` it fires: go back N, and load ``fs_acked`` (fast start, exit 1)
       or ``min(cw, 1)`` (stable).
    5. ``una == msg_len``: the flow is done.  A start (only while inactive, no load pending)
       resets the flow: fast start, LSNs from 0.  A register write (only while inactive).

    Offered packet: active, ``nxt < msg_len``, and the gate: fast start ``nxt - una <
    iw_bytes``; stable ``not load_pending and settle == 0`` and the engine's ``may_send(nxt -
    una)``.  ECN-capable: stable stage, or after the first ACK, or the IW-th new packet, or the
    last packet of the message.
    """

    def __init__(self, cfg: LdcpTransportConfig):
        self.cfg = cfg
        r = cfg.registers()
        self.mtu = r.mtu
        self.iw, self.iw_bytes, self.cw_bdp, self.rto = r.iw, r.iw_bytes, r.cw_bdp, r.rto
        self.eng = LdcpWindowModel(cfg.window)
        self.s = TxState()
        self.cycle = 0
        self.stats = TxStats()
        # event-level interface
        self._acks: deque[TAck] = deque()
        self._start: int | None = None
        self._taken_at: int | None = None

    # ------------------------------------------------------------------ cycle level ---------
    def _offer(self) -> TxPacket | None:
        s = self.s
        if not s.active or s.nxt >= s.msg_len:
            return None
        inflight = s.nxt - s.una
        assert inflight >= 0
        if s.stage == LdcpTxStage.FAST:
            gate = inflight < self.iw_bytes
        else:
            gate = (not s.load_pending and s.settle == 0
                    and self.eng.outputs().may_send(inflight))
        if not gate:
            return None
        remaining = s.msg_len - s.nxt
        last = remaining <= self.mtu
        ect = (s.stage == LdcpTxStage.STABLE or s.first_ack or s.new_cnt + 1 == self.iw
               or last)
        return TxPacket(s.nxt, min(self.mtu, remaining), ect, s.nxt < s.snd_max, last)

    def outputs(self) -> TxOutputs:
        s = self.s
        return TxOutputs(self._offer(), not s.load_pending,
                         not s.active and not s.load_pending, not s.active, s, self.eng.cw)

    def edge(self, ack: TAck | None = None, pkt_ready: bool = False, start: int | None = None,
             write: tuple[int, int] | None = None) -> tuple[bool, bool, bool, bool]:
        """One clock edge with the inputs offered during the cycle before it.  Returns which
        were taken: ``(ack, packet, start, write)``."""
        s = self.s
        offer = self._offer()
        ack_t = ack is not None and not s.load_pending
        pkt_t = offer is not None and pkt_ready
        start_t = start is not None and not s.active and not s.load_pending
        write_t = write is not None and not s.active
        st = dataclasses.replace(s, ev_rto=False, ev_bad_ack=False, ev_exit=0)

        # 1. window engine
        valid = ack_t and s.active and ack.lsn <= s.snd_max
        eng_ack = (Ack(ack.ece, ack.n) if valid and s.stage == LdcpTxStage.STABLE and ack.n
                   else None)
        eng_write = None
        if s.load_pending and self.eng.idle:
            value = {LdcpTxLoad.ACKED: s.fs_acked << 16, LdcpTxLoad.BDP: self.cw_bdp,
                     LdcpTxLoad.MIN1: min(self.eng.cw, ONE)}[s.load_kind]
            eng_write = (LdcpWindowReg.CW, value)
            st = dataclasses.replace(st, load_pending=False, settle=SETTLE_CYCLES)
        elif s.settle:
            st = dataclasses.replace(st, settle=s.settle - 1)

        # 2. ACK
        una, progress, goback = s.una, False, False
        if ack_t and s.active and not valid:
            st = dataclasses.replace(st, ev_bad_ack=True)
            self.stats.bad_acks += 1
        if valid:
            progress = ack.lsn > s.una
            una = max(s.una, ack.lsn)
            goback = ack.nak
            self.stats.naks += ack.nak
            if s.stage == LdcpTxStage.FAST:
                fs = min(s.fs_acked + ack.n, _SAT16)
                st = dataclasses.replace(st, first_ack=True, fs_acked=fs)
                if ack.nak:
                    st = self._exit(st, 1, LdcpTxLoad.ACKED)
                elif una >= self.iw_bytes:
                    st = self._exit(st, 2, LdcpTxLoad.BDP)
        nxt, snd_max, new_cnt = s.nxt, s.snd_max, s.new_cnt

        # 3. release
        if pkt_t:
            nxt = s.nxt + offer.length
            self.stats.packets += 1
            if offer.retx:
                self.stats.retransmissions += 1
            else:
                snd_max, new_cnt = nxt, min(s.new_cnt + 1, _SAT16)

        # 4. retransmission timeout
        counting = s.active and not s.load_pending and s.una < s.nxt
        rto_cnt = s.rto_cnt + 1
        if not counting or progress:
            rto_cnt = 0
        elif s.rto_cnt == (self.rto - 1) & _RTO_MASK:
            rto_cnt, goback = 0, True
            self.stats.rtos += 1
            st = dataclasses.replace(st, ev_rto=True)
            if s.stage == LdcpTxStage.FAST:
                if not st.ev_exit:          # (a NAK at this edge already took exit 1)
                    st = self._exit(st, 1, LdcpTxLoad.ACKED)
            else:
                st = dataclasses.replace(st, load_pending=True, load_kind=LdcpTxLoad.MIN1)
        if goback or nxt < una:      # (a late ACK can pass nxt after a go-back-N)
            nxt = una
        st = dataclasses.replace(st, nxt=nxt, una=una, snd_max=snd_max, new_cnt=new_cnt,
                                 rto_cnt=rto_cnt)

        # 5. end of flow, start, registers
        if s.active and una == s.msg_len:
            st = dataclasses.replace(st, active=False, done=True, rto_cnt=0)
        if start_t:
            st = dataclasses.replace(st, active=start > 0, done=start == 0,
                                     stage=LdcpTxStage.FAST, first_ack=False, msg_len=start,
                                     nxt=0, una=0, snd_max=0, new_cnt=0, fs_acked=0, rto_cnt=0)
        if write_t:
            self._write(*write)

        self.eng.edge(eng_ack, pkt_t, eng_write)
        self.eng.issued.clear()
        self.s = st
        self.cycle += 1
        return ack_t, pkt_t, start_t, write_t

    def _exit(self, st: TxState, which: int, kind: LdcpTxLoad) -> TxState:
        self.stats.exits[which] += 1
        return dataclasses.replace(st, stage=LdcpTxStage.STABLE, ev_exit=which,
                                   load_pending=True, load_kind=kind)

    def _write(self, addr: int, value: int) -> None:
        if addr == LdcpTransportReg.IW:
            self.iw = value & _SAT16
            self.iw_bytes = self.iw * self.mtu
        elif addr == LdcpTransportReg.CW_BDP:
            self.cw_bdp = value & 0xFFFF_FFFF
        elif addr == LdcpTransportReg.RTO:
            self.rto = value & _RTO_MASK

    # ------------------------------------------------------------------ event level ---------
    @property
    def done(self) -> bool:
        return self.s.done

    @property
    def active(self) -> bool:
        return self.s.active

    @property
    def stage(self) -> LdcpTxStage:
        return self.s.stage

    @property
    def cw(self) -> int:
        return self.eng.cw

    def start_message(self, cycle: int, length: int) -> None:
        check_message_length(self.cfg, length)
        self.advance(cycle)
        if self.s.active or self._start is not None:
            raise RuntimeError("LdcpSenderModel: a message is still active")
        self._start = length

    def on_ack(self, cycle: int, ack: TAck) -> None:
        self.advance(cycle)
        self._acks.append(ack)

    def release(self, cycle: int) -> TxPacket | None:
        self.advance(cycle)
        if self._taken_at == self.cycle:
            return None
        pkt = self._offer()
        if pkt is not None:
            self._taken_at = self.cycle
        return pkt

    def advance(self, cycle: int) -> None:
        """Run the edges up to ``cycle`` with the queued inputs (idle stretches skipped)."""
        if cycle < self.cycle:
            raise ValueError(f"LdcpSenderModel: time went back ({cycle} < {self.cycle})")
        while self.cycle < cycle:
            k = self._skippable()
            if k:
                self._skip(min(k, cycle - self.cycle))
            else:
                self._step()

    def _step(self) -> None:
        ack = self._acks[0] if self._acks else None
        taken = self.edge(ack, self._taken_at == self.cycle, self._start)
        if taken[0]:
            self._acks.popleft()
        if taken[2]:
            self._start = None

    # -- quiescence: nothing changes but the RTO counter and the sub-1 timer's phase ----------
    def _quiet(self) -> bool:
        s, e = self.s, self.eng
        if (self._acks or self._start is not None or self._taken_at == self.cycle
                or s.load_pending or s.settle or not e.idle):
            return False
        frac = e.cw & (ONE - 1)
        return (e.cw_d == frac and e.sub1_d == (e.cw < ONE) and e.sub1 == e.sub1_d
                and e.gate_prod == e.cw * e.regs.mtu
                and e.win_bytes == (e.gate_prod + ONE - 1) >> 16
                and e.thr == ((e.regs.rtt << 16) - frac) & ((1 << self.cfg.window.phase_width) - 1)
                and not s.ev_rto and not s.ev_bad_ack and not s.ev_exit and not e.tick)

    def _timers(self) -> tuple[int | None, int | None]:
        """Edges (from now) until the RTO and the sub-1 timer fire (the fire is at the edge at
        the end of cycle ``self.cycle + j``), in a quiet state."""
        s, e = self.s, self.eng
        j_rto = None
        if s.active and s.una < s.nxt:
            j_rto = ((self.rto - 1) - s.rto_cnt) & _RTO_MASK
        j_tmr = None
        if e.sub1_d:
            j_tmr = 0 if e.phase >= e.thr else -(-(e.thr - e.phase) // e.cw_d)
        return j_rto, j_tmr

    def _skippable(self) -> int:
        if not self._quiet():
            return 0
        fires = [j for j in self._timers() if j is not None]
        return min(fires) if fires else 1 << 62

    def _skip(self, k: int) -> None:
        """``k`` quiet edges in which no timer fires."""
        s, e = self.s, self.eng
        if s.active and s.una < s.nxt:
            self.s = dataclasses.replace(s, rto_cnt=s.rto_cnt + k)
        elif s.rto_cnt:
            self.s = dataclasses.replace(s, rto_cnt=0)
        if e.sub1_d:
            e.phase += k * e.cw_d
        else:
            e.phase, e.credit = 0, False
        e.cycle += k
        self.cycle += k

    def next_wakeup(self) -> int | None:
        if self._taken_at != self.cycle and self._offer() is not None:
            return self.cycle
        saved = self._save()
        was_done = self.s.done
        try:
            for _ in range(_SEARCH):
                if self._quiet():
                    break
                self._step()
                if self._offer() is not None or self.s.done != was_done:
                    return self.cycle
            else:
                raise RuntimeError("LdcpSenderModel: busy without end")   # (bad registers)
            j_rto, j_tmr = self._timers()
            s = self.s
            cands = []
            if j_rto is not None:
                cands.append(self.cycle + j_rto + 1)
            if (j_tmr is not None and s.active and s.nxt < s.msg_len
                    and s.stage == LdcpTxStage.STABLE):
                cands.append(self.cycle + j_tmr + 1)
            return min(cands) if cands else None
        finally:
            self._restore(saved)

    def _save(self):
        return (dict(self.__dict__), dict(self.eng.__dict__), deque(self._acks),
                dataclasses.replace(self.stats, exits=dict(self.stats.exits)))

    def _restore(self, saved) -> None:
        mine, eng, acks, stats = saved
        self.__dict__.update(mine)
        self.eng.__dict__.update(eng)
        self._acks, self.stats = acks, stats


# ------------------------------------------------------------------------------ receiver -------
@dataclass(frozen=True)
class RxState:
    """The receiver's registers (the RTL's ``state`` port, :func:`ldcp_rx_state_layout`)."""
    expected: int = 0
    pending: int = 0
    nak_sent: bool = False
    age: int = 0
    ev_bad: bool = False


def rx_core(cfg: LdcpTransportConfig, s: RxState, p: RxPacket
            ) -> tuple[RxState, list[TAck], Deliver | None, bool]:
    """The receiver's per-packet rule: ``(state, ACKs to send, bytes delivered, malformed)``.

    Malformed (flagged, dropped, no ACK): ``length`` 0 or above the MTU, or ``lsn + length``
    beyond ``2**lsn_width - 1``.  In order (``lsn == expected``): delivered; CE: flush the
    pending unmarked packets (``ACK(expected, n=pending)``) then ``ACK(expected', ece, n=1)``;
    unmarked: ``pending += 1``, ACK when it reaches ``m`` or on the last packet.  A gap
    (``lsn > expected``): dropped; the first one since the last in-order packet sends
    ``NAK(expected, n=pending)``.  A duplicate (``lsn < expected``): dropped, ``ACK(expected,
    n=pending)`` (``n = 0``: a duplicate ACK that only repeats the cumulative LSN).
    """
    m = cfg.window.m
    if not 1 <= p.length <= cfg.window.mtu or p.lsn + p.length > cfg.max_message:
        return s, [], None, True
    e, k = s.expected, s.pending
    if p.lsn == e:
        e2 = e + p.length
        dlv = Deliver(p.lsn, p.length, p.last)
        if p.ce:
            acks = ([TAck(e, False, k)] if k else []) + [TAck(e2, True, 1)]
            return RxState(e2, 0, False, 0), acks, dlv, False
        k += 1
        if k == m or p.last:
            return RxState(e2, 0, False, 0), [TAck(e2, False, k)], dlv, False
        return RxState(e2, k, False, s.age), [], dlv, False
    if p.lsn > e:
        if s.nak_sent:
            return s, [], None, False
        return RxState(e, 0, True, 0), [TAck(e, False, k, True)], None, False
    return RxState(e, 0, s.nak_sent, 0), [TAck(e, False, k)], None, False


class LdcpReceiverModel:
    """Event-level receiver (the module docstring's interface) on :func:`rx_core`, with the
    flush timer of the RTL: pending packets are ACKed at cycle ``c + 1 + ack_delay`` after the
    cycle ``c`` at which the first of them arrived, if nothing flushed them before (the RTL
    does so in that cycle when no packet arrives in it and its ACK output is free)."""

    def __init__(self, cfg: LdcpTransportConfig):
        self.cfg = cfg
        self.ack_delay = cfg.registers().ack_delay
        self.clear()

    def clear(self) -> None:
        self.s = RxState()
        self.deadline: int | None = None
        self.delivered: list[Deliver] = []
        self.malformed = 0
        self.duplicates = 0
        self.out_of_order = 0

    def receive(self, cycle: int, p: RxPacket) -> list[TAck]:
        acks = self.poll(cycle - 1) if cycle else []
        before = self.s
        s, new, dlv, bad = rx_core(self.cfg, before, p)
        self.malformed += bad
        if not bad and dlv is None:
            if p.lsn < before.expected:
                self.duplicates += 1
            else:
                self.out_of_order += 1
        if dlv is not None:
            self.delivered.append(dlv)
        if s.pending == 0:
            self.deadline = None
        elif before.pending == 0:
            self.deadline = cycle + 1 + self.ack_delay
        self.s = s
        return acks + new

    def poll(self, cycle: int) -> list[TAck]:
        if self.deadline is None or cycle < self.deadline:
            return []
        ack = TAck(self.s.expected, False, self.s.pending)
        self.s = dataclasses.replace(self.s, pending=0, age=0)
        self.deadline = None
        return [ack]

    def next_wakeup(self) -> int | None:
        return self.deadline


@dataclass(frozen=True)
class RxOutputs:
    data_ready: bool
    ack: TAck | None          # the ACK offered this cycle
    deliver: Deliver | None   # bytes accepted at the last edge (pulse)
    state: RxState


class LdcpReceiverCycleModel:
    """Cycle-accurate model of :class:`hw.nic.ldcp_transport.LdcpReceiverModel`.

    The ACK output is a register (``out``) with a second one (``hold``) for the second ACK of a
    CE flush.  ``data_ready = hold is None and (out is None or ack_ready)``.  At an edge: ``out``
    is consumed if ``ack_ready`` (``hold`` moves into it); a taken packet goes through
    :func:`rx_core` and its ACKs fill ``out`` then ``hold``; with no packet taken, pending
    packets, ``age >= ack_delay`` and a free output, the pending packets are ACKed (flush
    timer).  ``age``: 0 while nothing is pending and at the edge that makes the first packet
    pending, else ``+1`` per edge (saturating at ``2**24 - 1``).  ``clear`` (a new message)
    resets the expected LSN and drops a packet taken at the same edge.
    """

    AGE_MAX = (1 << 24) - 1

    def __init__(self, cfg: LdcpTransportConfig):
        self.cfg = cfg
        self.ack_delay = cfg.registers().ack_delay
        self.s = RxState()
        self.out: TAck | None = None
        self.hold: TAck | None = None
        self.deliver: Deliver | None = None
        self.cycle = 0

    def outputs(self, ack_ready: bool) -> RxOutputs:
        ready = self.hold is None and (self.out is None or ack_ready)
        return RxOutputs(ready, self.out, self.deliver, self.s)

    def edge(self, pkt: RxPacket | None, ack_ready: bool, clear: bool = False) -> bool:
        """One edge; returns whether ``pkt`` (offered) was taken."""
        s = self.s
        ready = self.hold is None and (self.out is None or ack_ready)
        taken = pkt is not None and ready
        if self.out is not None and ack_ready:
            self.out, self.hold = self.hold, None
        acks: list[TAck] = []
        self.deliver = None
        st = dataclasses.replace(s, ev_bad=False)
        if taken and not clear:
            st, acks, self.deliver, bad = rx_core(self.cfg, s, pkt)
            st = dataclasses.replace(st, ev_bad=bad)
        elif ready and s.pending and s.age >= self.ack_delay:
            acks = [TAck(s.expected, False, s.pending)]
            st = dataclasses.replace(st, pending=0)
        if st.pending == 0 or s.pending == 0:
            st = dataclasses.replace(st, age=0)
        else:
            st = dataclasses.replace(st, age=min(s.age + 1, self.AGE_MAX))
        if clear:
            st = RxState()
        if acks:
            assert self.out is None
            self.out = acks[0]
            self.hold = acks[1] if len(acks) > 1 else None
        self.s = st
        self.cycle += 1
        return taken
