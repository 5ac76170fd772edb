"""Transaction-level twins of the LDCP transport golden models, for the network simulator.

:class:`FastLdcpSenderModel` and :class:`FastLdcpReceiverModel` have the constructors and the
event-driven interface of :class:`sim.models.ldcp_transport.LdcpSenderModel` /
:class:`~sim.models.ldcp_transport.LdcpReceiverModel` (see that module's docstring) and give
identical results for every call sequence with non-decreasing cycles: every returned packet,
ACK list and wakeup cycle, and ``done``, ``active``, ``stage``, ``cw``, ``stats`` after every
call.  ``tests/test_ldcp_fast.py`` checks this differentially against the cycle model.

How it is faster (the cycle model steps every cycle in which work is in flight, each step
building new frozen dataclasses, and ``next_wakeup`` simulates ahead with a full save/restore):

- The registers are plain attributes and one edge is the cycle model's own
  (:class:`sim.models.ldcp_transport.LdcpSenderCore`: the sender's rules, then the window
  engine's :meth:`sim.models.ldcp_window.LdcpWindowModel.edge`): the twin shares the per-cycle
  update and differs only in which edges it steps.
- Stretches of edges in which nothing happens but counting (an update crossing the datapath's
  ``UPDATE_LATENCY``, the window-load ``settle`` countdown, a load waiting for the engine, the
  retransmission-timeout counter, the sub-1 timer's phase accumulator) are jumped in O(1): the
  next edge that does something is the first of the update commit (``busy_left == 1``), the
  end of ``settle``, the timer's firing (``ceil((thr - phase) / cw_d)`` additions, the phase
  accumulator's closed form) and the timeout (``rto - 1 - rto_cnt``).  Only the edges that
  take an ACK, a packet or a start, commit an update, load the window or move the gate's
  pipeline registers (two edges after the window changes) are stepped.
- ``next_wakeup`` runs the same search as the cycle model (step until quiet, then the timers in
  closed form) from saved registers (:meth:`LdcpSenderCore._save`), restores them, and keeps
  the registers it reached: if the next call comes at or after that cycle with no input in
  between, the sender restores those instead of recomputing them.

Measured on the 4-sender dumbbell (100 Gb/s, long flows, 2 ms): the model calls the simulator
makes take ~1.3 s instead of ~26 s (replayed alone); the whole run ~3.5 s instead of ~23 s,
of which ~3.1 s is the simulator itself (the same run with the model answers replayed).
"""

from __future__ import annotations

from hw.nic.ldcp_transport_config import RTO_WIDTH, LdcpTransportConfig
from hw.nic.ldcp_window_config import FRAC_BITS, ONE

from .ldcp_transport import (
    _SEARCH,
    _TX_SAVED,
    Deliver,
    LdcpReceiverModel,
    LdcpSenderCore,
    RxPacket,
    RxState,
    TAck,
    TxPacket,
)

__all__ = ["FastLdcpSenderModel", "FastLdcpReceiverModel"]

_RTO_MASK = (1 << RTO_WIDTH) - 1
_FRAC = ONE - 1
_FAR = 1 << 62
_CYCLE = _TX_SAVED.index("cycle")


class FastLdcpSenderModel(LdcpSenderCore):
    """Drop-in for :class:`sim.models.ldcp_transport.LdcpSenderModel` (event-level interface
    only): the same registers and edge, idle stretches jumped, look-aheads kept."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self._spec: tuple | None = None   # the saved registers at a later cycle (next_wakeup)
        self._wk: tuple[int, int | None] | None = None  # (cycle, next_wakeup's answer)

    # ------------------------------------------------------------------ interface -----------
    def start_message(self, cycle: int, length: int) -> None:
        super().start_message(cycle, length)
        self._spec = self._wk = None

    def on_ack(self, cycle: int, ack: TAck) -> None:
        super().on_ack(cycle, ack)
        self._spec = self._wk = None

    def release(self, cycle: int) -> TxPacket | None:
        pkt = super().release(cycle)
        if pkt is not None:
            self._spec = self._wk = None
        return pkt

    def advance(self, cycle: int) -> None:
        if cycle <= self.cycle:
            if cycle < self.cycle:
                raise ValueError(f"LdcpSenderModel: time went back ({cycle} < {self.cycle})")
            return
        spec = self._spec
        if spec is not None and spec[0][_CYCLE] <= cycle:
            self._spec = None
            self._restore(spec)
        while self.cycle < cycle:
            k = self._idle_edges()
            if k:
                self._jump(min(k, cycle - self.cycle))
            else:
                self._step()

    def next_wakeup(self) -> int | None:
        if self._taken_at != self.cycle and self._can_send():
            return self.cycle
        cycle = self.cycle
        wk = self._wk
        if wk is not None and wk[0] == cycle:
            return wk[1]
        if self._quiet():
            result = self._timer_wakeup()
            self._wk = (cycle, result)
            return result
        saved = self._save()
        was_done = self.done
        i = 0
        while True:
            if i >= _SEARCH:
                raise RuntimeError("LdcpSenderModel: busy without end")   # (bad registers)
            if i and self._quiet():
                result = self._timer_wakeup()
                break
            k = self._idle_edges()
            if k:
                # (a stretch never passes a timer's firing: the answer found from any edge of
                # a quiet stretch is the same cycle)
                self._jump(min(k, _SEARCH))
                i += k
            else:
                self._step()
                i += 1
            if self._can_send() or self.done != was_done:
                result = self.cycle
                break
        future = self._save() if self.cycle > cycle else None
        self._restore(saved)
        self._spec = future
        self._wk = (cycle, result)
        return result

    # ------------------------------------------------------------------ counting stretches --
    def _idle_edges(self) -> int:
        """How many edges from now only count (see :meth:`_jump`); 0 if the next one does
        more."""
        lp = self.load_pending
        e = self.eng
        if (self._taken_at == self.cycle or self._start is not None or e.write_q is not None
                or (not lp and self._ack_i < len(self._acks))):
            return 0
        if not self._steady():
            return 0
        busy = e.busy_left
        if busy == 0:
            if lp or e.pend_m or e.pend_u:
                return 0              # a window load or an update issues at the next edge
            k = _FAR
        elif e.pend_m or e.pend_u or e.sub1_d or e.in_flight.cw < ONE:
            k = busy - 1              # up to the commit (which issues, or moves the timer)
            if not k:
                return 0
        elif lp:
            k = busy                  # through the commit, up to the window load
        else:
            k = busy + 2              # through the commit and the gate's two pipeline edges
        if self.active and self.una == self.msg_len:
            return 0
        if self.settle and self.settle < k:
            k = self.settle
        if e.sub1_d:
            gap = e.thr - e.phase
            if gap <= 0:
                return 0
            j = -(-gap // e.cw_d)
            if j < k:
                k = j
        if self.active and not lp and self.una < self.nxt:
            j = (self.rto - 1 - self.rto_cnt) & _RTO_MASK
            if j < k:
                k = j
        return k

    def _jump(self, k: int) -> None:
        """``k`` edges that only count: settle, the update in flight, the timer's phase, the
        timeout counter; and an update's commit with the gate's two pipeline edges after it when
        the window is not below one packet before and after (the timer stays idle)."""
        e = self.eng
        if e.sub1_d:
            e.phase += k * e.cw_d
        else:
            e.phase = 0
            e.credit = False
        if self.settle:
            self.settle -= k
        busy = e.busy_left
        if busy:
            if k < busy:
                e.busy_left = busy - k
            else:                     # the commit, then the gate's pipeline (timer idle)
                e.cw = cw = e.in_flight.cw
                e.busy_left = 0
                e.in_flight = None
                if k > busy:
                    e.cw_d = cw_d = cw & _FRAC
                    e.sub1_d = cw < ONE
                    e.thr = ((e.regs.rtt << FRAC_BITS) - cw_d) & self.phase_mask
                    e.gate_prod = cw * e.regs.mtu
                    if k > busy + 1:
                        e.win_bytes = (e.gate_prod + _FRAC) >> FRAC_BITS
                        e.sub1 = e.sub1_d
        if self.active and not self.load_pending and self.una < self.nxt:
            self.rto_cnt += k
        else:
            self.rto_cnt = 0
        e.cycle += k
        self.cycle += k


class FastLdcpReceiverModel(LdcpReceiverModel):
    """Drop-in for :class:`sim.models.ldcp_transport.LdcpReceiverModel`: the same rules
    (:func:`sim.models.ldcp_transport.rx_core`) over plain integers instead of a new
    ``RxState`` per packet (``s`` builds one on demand)."""

    def __init__(self, cfg: LdcpTransportConfig):
        self.m = cfg.window.m
        self.mtu = cfg.window.mtu
        self.max_message = cfg.max_message
        super().__init__(cfg)

    @property
    def s(self) -> RxState:
        """The registers as the cycle model's ``RxState`` (``age`` is always 0 at event level)."""
        return RxState(self.expected, self.pending, self.nak_sent)

    @s.setter
    def s(self, st: RxState) -> None:
        self.expected, self.pending, self.nak_sent = st.expected, st.pending, st.nak_sent

    def receive(self, cycle: int, p: RxPacket) -> list[TAck]:
        acks = self.poll(cycle - 1) if cycle and self.deadline is not None else []
        lsn, length = p.lsn, p.length
        if not 1 <= length <= self.mtu or lsn + length > self.max_message:
            self.malformed += 1
            return acks
        e, k = self.expected, self.pending
        if lsn == e:
            e2 = e + length
            self.delivered.append(Deliver(lsn, length, p.last))
            self.expected = e2
            self.nak_sent = False
            if p.ce:
                if k:
                    acks.append(TAck(e, False, k))
                acks.append(TAck(e2, True, 1))
                k = 0
            else:
                k += 1
                if k == self.m or p.last:
                    acks.append(TAck(e2, False, k))
                    k = 0
                elif k == 1:
                    self.deadline = cycle + 1 + self.ack_delay
            self.pending = k
            if k == 0:
                self.deadline = None
            return acks
        if lsn > e:
            self.out_of_order += 1
            if self.nak_sent:
                return acks
            self.nak_sent = True
            acks.append(TAck(e, False, k, True))
        else:
            self.duplicates += 1
            acks.append(TAck(e, False, k))
        self.pending = 0
        self.deadline = None
        return acks

    def poll(self, cycle: int) -> list[TAck]:
        if self.deadline is None or cycle < self.deadline:
            return []
        ack = TAck(self.expected, False, self.pending)
        self.pending = 0
        self.deadline = None
        return [ack]

