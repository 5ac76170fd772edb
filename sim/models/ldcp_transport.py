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
from dataclasses import dataclass, field
from operator import attrgetter

from hw.layouts import LdcpTxLoad, LdcpTxStage
from hw.nic.ldcp_transport_config import (
    RTO_WIDTH,
    SETTLE_CYCLES,
    LdcpTransportConfig,
    LdcpTransportReg,
)
from hw.nic.ldcp_window_config import FRAC_BITS, ONE, LdcpWindowReg
from hw.params import ConfigError

from .ldcp_window import LdcpWindowModel

__all__ = ["TxPacket", "RxPacket", "TAck", "TxState", "TxOutputs", "LdcpSenderModel",
           "LdcpReceiverModel", "LdcpReceiverCycleModel", "RxState", "RxOutputs", "Deliver",
           "rx_core", "offer_packet", "load_value"]

_SAT16 = (1 << 16) - 1
_RTO_MASK = (1 << RTO_WIDTH) - 1


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


def offer_packet(mtu: int, iw: int, stable: bool, first_ack: bool, new_cnt: int, nxt: int,
                 msg_len: int, snd_max: int) -> TxPacket:
    """The packet at ``nxt`` (the sender's offer when its gate is open): MTU-sized except the
    last; ECN-capable in the stable stage, after the first ACK, for the IW-th new packet and
    the last one; a retransmission below ``snd_max``.  Shared with the multi-flow sender
    (:mod:`sim.models.ldcp_engine`)."""
    remaining = msg_len - nxt
    last = remaining <= mtu
    ect = stable or first_ack or new_cnt + 1 == iw or last
    return TxPacket(nxt, min(mtu, remaining), ect, nxt < snd_max, last)


def load_value(kind: LdcpTxLoad, fs_acked: int, cw_bdp: int, cw: int) -> int:
    """The window a fast-start exit or a timeout loads (before the window engine's clamp to
    ``[gamma, cw_max]``): the packets acknowledged in fast start (exit 1), ``CW_BDP`` (exit 2),
    ``min(cw, 1)`` (a timeout in the stable stage)."""
    if kind is _ACKED:
        return fs_acked << FRAC_BITS
    if kind is _BDP:
        return cw_bdp
    return min(cw, ONE)


#: The sender's registers (``TxState``'s fields), its statistics counters and the event-level
#: state: what a look-ahead (``next_wakeup``) saves and restores, with the window engine's.
_TX_REGS = ("active", "done", "stage", "first_ack", "load_pending", "load_kind", "settle",
            "msg_len", "nxt", "una", "snd_max", "new_cnt", "fs_acked", "rto_cnt", "ev_rto",
            "ev_bad_ack", "ev_exit")
_TX_SAVED = _TX_REGS + ("n_packets", "n_retx", "n_naks", "n_rtos", "n_bad", "n_exit1",
                        "n_exit2", "_stats", "cycle", "_ack_i", "_start", "_taken_at")
_ENG_SAVED = ("cw", "pend_m", "pend_u", "busy_left", "in_flight", "phase", "credit", "tick",
              "cw_d", "sub1_d", "thr", "gate_prod", "sub1", "win_bytes", "write_q", "cycle",
              "regs")
_get_tx, _get_eng = attrgetter(*_TX_SAVED), attrgetter(*_ENG_SAVED)
_FAST, _STABLE = LdcpTxStage.FAST, LdcpTxStage.STABLE
_ACKED, _BDP, _MIN1 = LdcpTxLoad.ACKED, LdcpTxLoad.BDP, LdcpTxLoad.MIN1
#: ``next_wakeup`` steps at most this many busy edges (no sane register set reaches it).
_SEARCH = 1 << 20


class LdcpSenderCore:
    """The sender's registers and its per-cycle update, shared by the cycle model
    (:class:`LdcpSenderModel`) and its transaction-level twin
    (:class:`sim.models.ldcp_transport_fast.FastLdcpSenderModel`): one edge is :meth:`_edge`
    (the sender's rules, then the window engine's :meth:`LdcpWindowModel.edge`).  The registers
    are plain attributes named like ``TxState``'s fields; :attr:`s` is their snapshot."""

    def __init__(self, cfg: LdcpTransportConfig):
        self.cfg = cfg
        r = cfg.registers()
        self.mtu = r.mtu
        self.iw, self.iw_bytes, self.cw_bdp, self.rto = r.iw, r.iw_bytes, r.cw_bdp, r.rto
        self.eng = LdcpWindowModel(cfg.window)
        self.phase_mask = (1 << cfg.window.phase_width) - 1
        for name, value in dataclasses.asdict(TxState()).items():
            setattr(self, name, value)
        self.stage, self.load_kind = _FAST, _ACKED
        self.n_packets = self.n_retx = self.n_naks = self.n_rtos = self.n_bad = 0
        self.n_exit1 = self.n_exit2 = 0
        self._stats: TxStats | None = None
        self.cycle = 0
        # event level: ACKs queued (append-only list, _ack_i its head), start, packet taken
        self._acks: list[TAck] = []
        self._ack_i = 0
        self._start: int | None = None
        self._taken_at: int | None = None

    # ------------------------------------------------------------------ observables ---------
    @property
    def s(self) -> TxState:
        """The registers (the RTL's ``state`` port)."""
        return TxState(*_get_tx(self)[:len(_TX_REGS)])

    @property
    def cw(self) -> int:
        return self.eng.cw

    @property
    def stats(self) -> TxStats:
        st = self._stats
        if st is None:                # (made again whenever a counter moved)
            st = self._stats = TxStats(self.n_packets, self.n_retx, self.n_naks, self.n_rtos,
                                       self.n_bad, {1: self.n_exit1, 2: self.n_exit2})
        return st

    # ------------------------------------------------------------------ the offered packet --
    def _can_send(self) -> bool:
        """The gate (this cycle): active, bytes left, and the stage's window."""
        if not self.active or self.nxt >= self.msg_len:
            return False
        inflight = self.nxt - self.una
        if self.stage is _FAST:
            return inflight < self.iw_bytes
        if self.load_pending or self.settle:
            return False
        e = self.eng
        return e.credit if e.sub1 else inflight < e.win_bytes

    def _offer(self) -> TxPacket | None:
        if not self._can_send():
            return None
        return offer_packet(self.mtu, self.iw, self.stage is _STABLE, self.first_ack,
                            self.new_cnt, self.nxt, self.msg_len, self.snd_max)

    # ------------------------------------------------------------------ one edge ------------
    def _edge(self, ack: TAck | None, pkt_ready: bool, start: int | None
              ) -> tuple[bool, bool, bool]:
        """One clock edge with the inputs offered in the cycle before it (see
        :class:`LdcpSenderModel` for the rules, in the order applied here).  Returns which were
        taken: ``(ack, packet, start)``."""
        active, lp, stage = self.active, self.load_pending, self.stage
        una0, nxt0 = self.una, self.nxt
        eng = self.eng
        ack_t = ack is not None and not lp
        pkt_t = pkt_ready and self._can_send()
        start_t = start is not None and not active and not lp
        ev_rto = ev_bad = False
        ev_exit = 0

        # 1. window engine inputs
        valid = ack_t and active and ack.lsn <= self.snd_max
        # (a TAck is the engine's Ack too: it has ``ece`` and ``n``)
        eng_ack = ack if valid and stage is _STABLE and ack.n else None
        eng_write = None
        if lp and eng.idle:
            eng_write = (LdcpWindowReg.CW,
                         load_value(self.load_kind, self.fs_acked, self.cw_bdp, eng.cw))
            self.load_pending = False
            self.settle = SETTLE_CYCLES
        elif self.settle:
            self.settle -= 1

        # 2. ACK
        una, progress, goback = una0, False, False
        if ack_t and active and not valid:
            ev_bad = True
            self.n_bad += 1
            self._stats = None
        if valid:
            progress = ack.lsn > una0
            if progress:
                una = ack.lsn
            goback = ack.nak
            if ack.nak:
                self.n_naks += 1
                self._stats = None
            if stage is _FAST:
                self.fs_acked = min(self.fs_acked + ack.n, _SAT16)
                self.first_ack = True
                if ack.nak:
                    ev_exit = self._exit(1, _ACKED)
                elif una >= self.iw_bytes:
                    ev_exit = self._exit(2, _BDP)

        # 3. release
        nxt = nxt0
        if pkt_t:
            nxt = nxt0 + min(self.mtu, self.msg_len - nxt0)
            self.n_packets += 1
            self._stats = None
            if nxt0 < self.snd_max:
                self.n_retx += 1
            else:
                self.snd_max = nxt
                self.new_cnt = min(self.new_cnt + 1, _SAT16)

        # 4. retransmission timeout
        if not (active and not lp and una0 < nxt0) or progress:
            self.rto_cnt = 0
        elif self.rto_cnt == (self.rto - 1) & _RTO_MASK:
            self.rto_cnt = 0
            goback = ev_rto = True
            self.n_rtos += 1
            self._stats = None
            if stage is _FAST:
                if not ev_exit:       # (a NAK at this edge already took exit 1)
                    ev_exit = self._exit(1, _ACKED)
            else:
                self.load_pending = True
                self.load_kind = _MIN1
        else:
            self.rto_cnt += 1
        if goback or nxt < una:       # (a late ACK can pass nxt after a go-back-N)
            nxt = una
        self.nxt, self.una = nxt, una

        # 5. end of flow, start
        if active and una == self.msg_len:
            self.active, self.done, self.rto_cnt = False, True, 0
        if start_t:
            self.active, self.done = start > 0, start == 0
            self.stage, self.first_ack, self.msg_len = _FAST, False, start
            self.nxt = self.una = self.snd_max = self.new_cnt = self.fs_acked = 0
            self.rto_cnt = 0
        self.ev_rto, self.ev_bad_ack, self.ev_exit = ev_rto, ev_bad, ev_exit

        eng.edge(eng_ack, pkt_t, eng_write)
        eng.issued.clear()
        self.cycle += 1
        return ack_t, pkt_t, start_t

    def _exit(self, which: int, kind: LdcpTxLoad) -> int:
        if which == 1:
            self.n_exit1 += 1
        else:
            self.n_exit2 += 1
        self._stats = None
        self.stage = _STABLE
        self.load_pending = True
        self.load_kind = kind
        return which

    # ------------------------------------------------------------------ event level ---------
    def start_message(self, cycle: int, length: int) -> None:
        check_message_length(self.cfg, length)
        self.advance(cycle)
        if self.active or self._start is not None:
            raise RuntimeError("LdcpSenderModel: a message is still active")
        self._start = length

    def on_ack(self, cycle: int, ack: TAck) -> None:
        if cycle != self.cycle:
            self.advance(cycle)
        i = self._ack_i
        if i == len(self._acks):
            self._acks, self._ack_i = [ack], 0
        elif i > 64:                  # (a new list: a saved state may still index the old one)
            self._acks, self._ack_i = self._acks[i:] + [ack], 0
        else:
            self._acks.append(ack)

    def release(self, cycle: int) -> TxPacket | None:
        if cycle != self.cycle:
            self.advance(cycle)
        if self._taken_at == self.cycle:
            return None
        pkt = self._offer()
        if pkt is not None:
            self._taken_at = self.cycle
        return pkt

    def _step(self) -> None:
        """One edge with the queued inputs."""
        i = self._ack_i
        ack = self._acks[i] if i < len(self._acks) else None
        ack_t, _, start_t = self._edge(ack, self._taken_at == self.cycle, self._start)
        if ack_t:
            self._ack_i = i + 1
        if start_t:
            self._start = None

    # -- quiescence: nothing changes but the RTO counter and the sub-1 timer's phase ----------
    def _steady(self) -> bool:
        """The window engine's pipeline is steady (:meth:`LdcpWindowModel.steady`) and no
        event flag is up."""
        return not (self.ev_rto or self.ev_bad_ack or self.ev_exit) and self.eng.steady()

    def _quiet(self) -> bool:
        """Idle: nothing queued, no load, the engine idle and its pipeline steady."""
        return (self._ack_i == len(self._acks) and self._start is None
                and self._taken_at != self.cycle and not self.load_pending and not self.settle
                and self.eng.idle and self._steady())

    def _rto_edges(self) -> int | None:
        """Edges from now before the retransmission timeout fires (at the edge that ends cycle
        ``self.cycle + j``) if no input comes; None while it does not count."""
        if self.active and not self.load_pending and self.una < self.nxt:
            return ((self.rto - 1) - self.rto_cnt) & _RTO_MASK
        return None

    def _timer_wakeup(self) -> int | None:
        """In a quiet state: the cycle after the timeout or the sub-1 timer (if it can release
        a packet) fires."""
        j_rto, j_tmr = self._rto_edges(), self.eng.timer_edges()
        if j_tmr is not None and not (self.active and self.nxt < self.msg_len
                                      and self.stage is _STABLE):
            j_tmr = None
        if j_tmr is None:
            return None if j_rto is None else self.cycle + j_rto + 1
        if j_rto is not None and j_rto < j_tmr:
            j_tmr = j_rto
        return self.cycle + j_tmr + 1

    def _skip(self, k: int) -> None:
        """``k`` edges that only count, with no input and no timer firing in them: the window
        engine's (:meth:`LdcpWindowModel.skip`: the timer's phase, an update in flight), the
        ``settle`` countdown (``k <= settle`` if it runs) and the timeout counter."""
        self.eng.skip(k)
        if self.settle:
            self.settle -= k
        if self.active and not self.load_pending and self.una < self.nxt:
            self.rto_cnt += k
        else:
            self.rto_cnt = 0
        self.cycle += k

    # -- look-ahead: the registers saved and restored explicitly -----------------------------
    def _save(self) -> tuple:
        return _get_tx(self), _get_eng(self.eng), self._acks

    def _restore(self, saved: tuple) -> None:
        tx, eng, self._acks = saved
        self.__dict__.update(zip(_TX_SAVED, tx, strict=True))    # (at C speed)
        self.eng.__dict__.update(zip(_ENG_SAVED, eng, strict=True))


class LdcpSenderModel(LdcpSenderCore):
    """Cycle-accurate model of :class:`hw.nic.ldcp_transport.LdcpSender` (one flow), with the
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

    # ------------------------------------------------------------------ cycle level ---------
    def outputs(self) -> TxOutputs:
        lp = self.load_pending
        return TxOutputs(self._offer(), not lp, not self.active and not lp, not self.active,
                         self.s, self.eng.cw)

    def edge(self, ack: TAck | None = None, pkt_ready: bool = False, start: int | None = None,
             write: tuple[int, int] | None = None) -> tuple[bool, bool, bool, bool]:
        """One clock edge with the inputs offered during the cycle before it.  Returns which
        were taken: ``(ack, packet, start, write)``."""
        write_t = write is not None and not self.active
        ack_t, pkt_t, start_t = self._edge(ack, pkt_ready, start)
        if write_t:
            self._write(*write)
        return ack_t, pkt_t, start_t, write_t

    def _write(self, addr: int, value: int) -> None:
        if addr == LdcpTransportReg.IW:
            self.iw = value & _SAT16
            self.iw_bytes = self.iw * self.mtu
        elif addr == LdcpTransportReg.CW_BDP:
            self.cw_bdp = value & 0xFFFF_FFFF
        elif addr == LdcpTransportReg.RTO:
            self.rto = value & _RTO_MASK

    # ------------------------------------------------------------------ event level ---------
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

    def _skippable(self) -> int:
        """Edges from now that :meth:`_skip` can take: only from a quiet state, up to the
        first timer's firing."""
        if not self._quiet():
            return 0
        k = self.eng.idle_edges()
        j = self._rto_edges()
        return k if j is None or k < j else j

    def next_wakeup(self) -> int | None:
        if self._taken_at != self.cycle and self._can_send():
            return self.cycle
        saved = self._save()
        was_done = self.done
        try:
            for _ in range(_SEARCH):
                if self._quiet():
                    break
                self._step()
                if self._can_send() or self.done != was_done:
                    return self.cycle
            else:
                raise RuntimeError("LdcpSenderModel: busy without end")   # (bad registers)
            return self._timer_wakeup()
        finally:
            self._restore(saved)


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
    """Cycle-accurate model of :class:`hw.nic.ldcp_transport.LdcpReceiver`.

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
