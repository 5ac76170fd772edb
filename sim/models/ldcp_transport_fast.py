"""Transaction-level twins of the LDCP transport golden models, for the network simulator.

:class:`FastLdcpSenderModel` and :class:`FastLdcpReceiverModel` have the constructors and the
event-driven interface of :class:`sim.models.ldcp_transport.LdcpSenderModel` /
:class:`~sim.models.ldcp_transport.LdcpReceiverModel` (see that module's docstring) and give
identical results for every call sequence with non-decreasing cycles: every returned packet,
ACK list and wakeup cycle, and ``done``, ``active``, ``stage``, ``cw``, ``stats`` after every
call.  ``tests/test_ldcp_fast.py`` checks this differentially against the cycle model.

Both share the registers (plain attributes) and the per-cycle update: one edge is
:meth:`sim.models.ldcp_transport.LdcpSenderCore._edge` (the sender's rules, then the window
engine's :meth:`sim.models.ldcp_window.LdcpWindowModel.edge`).  How the twin is faster (the
cycle model steps every edge in which work is in flight, and its ``next_wakeup`` simulates
ahead and throws the result away):

- Stretches of edges in which nothing happens but counting (an update crossing the datapath's
  ``UPDATE_LATENCY``, the window-load ``settle`` countdown, a load waiting for the engine, the
  retransmission-timeout counter, the sub-1 timer's phase accumulator) are taken in O(1) by
  the skip the cycle model uses for its idle stretches (:meth:`LdcpSenderCore._skip`, on the
  window engine's :meth:`sim.models.ldcp_window.LdcpWindowModel.skip`).  The twin differs only
  in how far it skips (:meth:`FastLdcpSenderModel._idle_edges`): also while an update is in
  flight (up to its commit, or through it and the gate's two pipeline edges when the window
  is at or above one packet before and after: :meth:`LdcpWindowModel.idle_edges`), during
  ``settle`` and while a load waits.  Only the edges that take an ACK, a packet or a start,
  commit an update that changes the timer, load the window or fire a timer are stepped.
- ``next_wakeup`` runs the same search as the cycle model (step until quiet, then the timers in
  closed form) from saved registers (:meth:`LdcpSenderCore._save`), restores them, and keeps
  the registers it reached: if the next call comes at or after that cycle with no input in
  between, the sender restores those instead of recomputing them.

Measured on the 4-sender dumbbell (100 Gb/s, long flows, 2 ms of simulated time; CPU time,
on a shared 2-core machine, so within ~10 %): the whole run takes ~2.6 s with the twins and
~4.4 s with the cycle models (identical results); the sender's calls alone, timed around each
call, ~1.5 s and ~3.1 s.
"""

from __future__ import annotations

from hw.nic.ldcp_transport_config import LdcpTransportConfig

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
                self._skip(min(k, cycle - self.cycle))
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
                self._skip(min(k, _SEARCH))
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
        """How many edges from now only count (:meth:`LdcpSenderCore._skip`); 0 if the next
        one does more: the window engine's bound (:meth:`LdcpWindowModel.idle_edges`), a
        pending window load (it waits for the engine to become idle), ``settle`` and the
        timeout."""
        if (self._taken_at == self.cycle or self._start is not None
                or (not self.load_pending and self._ack_i < len(self._acks))
                or self.ev_rto or self.ev_bad_ack or self.ev_exit
                or (self.active and self.una == self.msg_len)):
            return 0
        k = self.eng.idle_edges()
        if not k:
            return 0
        if self.load_pending:
            busy = self.eng.busy_left
            if not busy:
                return 0              # the load is applied at the next edge
            if busy < k:
                k = busy              # through the commit, up to the window load
        if self.settle and self.settle < k:
            k = self.settle
        j = self._rto_edges()
        if j is not None and j < k:
            k = j
        return k


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

