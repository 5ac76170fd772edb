"""Bit-exact golden model of the LDCP window engine (PAWA, sub-1 window, pacing timer, gate).

Two levels, as in the RTL (:mod:`hw.nic.ldcp_window`):

- :func:`update` is the **datapath**: window + event + parameters -> new window, with the same
  integer widths, rounding (always toward zero) and order of operations as
  :class:`hw.nic.ldcp_window.LdcpWindowUpdate`.  An event is ``n_marked`` packets confirmed
  with ECE followed by ``n_unmarked`` packets confirmed without; a single ACK has one of the two
  equal to zero.
- :class:`LdcpWindowModel` is the **single-flow wrapper**, cycle by cycle: the window register,
  the coalescing of ACKs that arrive while an update is in flight, the sub-1 pacing timer and
  the send gate, exactly as :class:`hw.nic.ldcp_window.LdcpWindow` does them.

The rules (``docs/ldcp-window.md`` has the rationale), with ``cw`` in UQ16.16 and ``ONE = 2**16``:

Marked part (``n = n_marked > 0``), regime decided by ``cw`` before the event:
    ``cw >= ONE``: ``t = cw - n * beta``; result ``max(gamma, t)`` (LINEAR if ``t >= ONE``,
    CROSS if ``gamma <= t < ONE``, CROSS_FLOOR if ``t < gamma``).
    ``cw < ONE``: ``h = cw >> min(n, 16)`` (``eta**n`` with ``eta = 1/2``); result
    ``max(gamma, h)`` (HALVE if ``h > gamma``, else HALVE_FLOOR).
Unmarked part (``n = n_unmarked > 0``), regime decided by the window after the marked part:
    ``cw >= ONE``: ``cw + n * alpha * R(cw)`` with the table reciprocal :func:`reciprocal`,
    truncated; capped at ``cw_max`` (RECIP or RECIP_CAP).
    ``cw < ONE``: ``cw + n * gamma``, capped at ``cw_max`` (GAMMA if the result is below ONE,
    CROSS if at or above, CROSS_CAP if capped).
"""

from __future__ import annotations

import dataclasses
from collections import deque
from dataclasses import dataclass

from hw.layouts import LdcpDecRule, LdcpIncRule, ldcp_ack_layout, ldcp_update_layout
from hw.nic.ldcp_window_config import (
    FRAC_BITS,
    ONE,
    RECIP_BITS,
    RECIP_INDEX_BITS,
    RECIP_INTERP_BITS,
    UPDATE_LATENCY,
    LdcpWindowConfig,
    LdcpWindowRegisters,
    recip_table,
)

__all__ = ["Ack", "Update", "reciprocal", "update", "LdcpWindowModel", "CycleOutputs",
           "pack_ack", "unpack_update"]

_TABLE = recip_table()
_SHIFT_MAX = FRAC_BITS  # cw < ONE, so cw >> 16 == 0: larger shifts change nothing
_FAR = 1 << 62          # (idle_edges: no end in sight)


@dataclass(frozen=True)
class Ack:
    ece: bool
    n: int


@dataclass(frozen=True)
class Update:
    cw: int
    n_marked: int
    n_unmarked: int
    dec: LdcpDecRule
    inc: LdcpIncRule


def pack_ack(cfg: LdcpWindowConfig, ack: Ack) -> int:
    return ldcp_ack_layout(cfg).const({"ece": int(ack.ece), "n": ack.n}).as_bits()


def unpack_update(cfg: LdcpWindowConfig, bits: int) -> Update:
    v = ldcp_update_layout(cfg).from_bits(bits)
    return Update(cw=v.cw, n_marked=v.n_marked, n_unmarked=v.n_unmarked,
                  dec=LdcpDecRule(v.dec), inc=LdcpIncRule(v.inc))


def reciprocal(cw: int) -> tuple[int, int]:
    """Table reciprocal of ``cw >= ONE`` (UQ16.16): returns ``(r, e)`` with
    ``cw = x * 2**(e + 16)``, ``1 <= x < 2`` and ``r ~= 2**18 / x`` (19 bits, 2**18 = 1.0), so that
    ``1 / cw ~= r * 2**-(18 + e)`` in packets**-1.

    ``norm = cw << (15 - e)`` puts the leading one at bit 31; bits 30..23 index the table,
    bits 22..13 interpolate along the chord: ``r = T[i] - (D[i] * f >> 10)``."""
    assert ONE <= cw < 1 << 32
    e = (cw >> FRAC_BITS).bit_length() - 1
    norm = cw << (15 - e)
    idx = (norm >> (31 - RECIP_INDEX_BITS)) & ((1 << RECIP_INDEX_BITS) - 1)
    f = (norm >> (31 - RECIP_INDEX_BITS - RECIP_INTERP_BITS)) & ((1 << RECIP_INTERP_BITS) - 1)
    t, d = _TABLE[idx]
    r = t - ((d * f) >> RECIP_INTERP_BITS)
    assert 1 << (RECIP_BITS - 1) <= r <= 1 << RECIP_BITS
    return r, e


def update(regs: LdcpWindowRegisters, cw: int, n_marked: int, n_unmarked: int) -> Update:
    """The datapath: apply ``n_marked`` ECE packets, then ``n_unmarked`` plain ones."""
    alpha, beta, gamma, cap = regs.alpha, regs.beta, regs.gamma, regs.cw_max

    # -- marked part ----------------------------------------------------------------------------
    if n_marked == 0:
        c, dec = cw, LdcpDecRule.NONE
    elif cw >= ONE:
        t = cw - n_marked * beta
        if t >= ONE:
            c, dec = t, LdcpDecRule.LINEAR
        elif t >= gamma:
            c, dec = t, LdcpDecRule.CROSS
        else:
            c, dec = gamma, LdcpDecRule.CROSS_FLOOR
    else:
        h = cw >> min(n_marked, _SHIFT_MAX)
        if h > gamma:
            c, dec = h, LdcpDecRule.HALVE
        else:
            c, dec = gamma, LdcpDecRule.HALVE_FLOOR

    # -- unmarked part --------------------------------------------------------------------------
    if n_unmarked == 0:
        new, inc = c, LdcpIncRule.NONE
    elif c >= ONE:
        r, e = reciprocal(c)
        s = c + ((n_unmarked * alpha * r) >> (RECIP_BITS + e))
        new, inc = (cap, LdcpIncRule.RECIP_CAP) if s >= cap else (s, LdcpIncRule.RECIP)
    else:
        s = c + n_unmarked * gamma
        if s >= cap:
            new, inc = cap, LdcpIncRule.CROSS_CAP
        elif s >= ONE:
            new, inc = s, LdcpIncRule.CROSS
        else:
            new, inc = s, LdcpIncRule.GAMMA
    return Update(new, n_marked, n_unmarked, dec, inc)


@dataclass(frozen=True)
class CycleOutputs:
    """What the wrapper shows during one cycle (before the next edge)."""
    cw: int                 # committed window, UQ16.16
    update: Update | None   # the update committed at the coming edge (upd_valid / upd)
    tick: bool              # the timer fired at the previous edge
    credit: bool            # a timer release not yet used
    sub1: bool              # gate regime (registered: cw < 1 one cycle earlier)
    win_bytes: int          # gate window ceil(cw * mtu / 2**16) (registered)

    def may_send(self, inflight: int) -> bool:
        return self.credit if self.sub1 else inflight < self.win_bytes


class LdcpWindowModel:
    """Cycle-accurate model of :class:`hw.nic.ldcp_window.LdcpWindow` (one flow).

    Call :meth:`outputs` to see a cycle, then :meth:`edge` with that cycle's inputs.

    At each edge, in this order (all from the values of the cycle before the edge):

    1. Timer, from the window of the cycle before (``cw_d``; RTT of the cycle before): if
       ``cw_d < ONE``, it fires when ``phase + cw_d >= rtt * 2**16`` and then
       ``phase += cw_d - rtt * 2**16``, else ``phase += cw_d``; if ``cw_d >= ONE`` the phase is
       0.  ``credit`` is set by a firing and cleared by ``sent`` (or when ``cw_d >= ONE``).
       Gate, from the window two cycles before: ``sub1 = cw < ONE`` and
       ``win_bytes = ceil(cw * mtu / 2**16)``.
    2. The update leaving the datapath (issued ``UPDATE_LATENCY`` edges ago) is committed.
    3. The ACK of this cycle (``n`` saturated at ``m``; ``n = 0`` ignored) is merged into the
       pending event: unmarked adds to ``n_unmarked``; marked makes
       ``n_marked += n_unmarked + n`` and ``n_unmarked = 0``.
    4. If no update is in flight (or the one in flight commits at this edge) and no register
       write is being applied, a non-empty pending event is issued with the newest window;
       otherwise it waits.

    A register write is accepted at one edge (only when idle) and applied at the next one,
    after the timer step: a window load is clamped to ``[gamma, cw_max]``.
    """

    LATENCY = UPDATE_LATENCY

    def __init__(self, cfg: LdcpWindowConfig):
        self.cfg = cfg
        self.regs = cfg.registers()
        self._csr = None
        r = self.regs
        self.cw = r.cw_init
        self.pend_m = 0
        self.pend_u = 0
        self.busy_left = 0          # edges until the in-flight update commits
        self.in_flight: Update | None = None
        init = cfg.timer_gate_init()
        self.phase = 0
        self.credit = False
        self.tick = False
        self.cw_d, self.sub1_d, self.thr = init["cw_d"], bool(init["sub1_d"]), init["thr"]
        self.gate_prod = r.cw_init * r.mtu
        self.sub1 = bool(init["gate_sub1"])
        self.win_bytes = init["win_bytes"]
        self.write_q: tuple[int, int] | None = None
        self.cycle = 0
        self.issued: deque[tuple[int, Update]] = deque()  # (issue cycle, update), for tests

    def outputs(self) -> CycleOutputs:
        upd = self.in_flight if self.busy_left == 1 else None
        return CycleOutputs(self.cw, upd, self.tick, self.credit, self.sub1, self.win_bytes)

    def edge(self, ack: Ack | None = None, sent: bool = False,
             write: tuple[int, int] | None = None) -> None:
        """One clock edge.  ``write = (addr, data)``: a register write accepted at this edge
        (the RTL accepts it only when :attr:`idle` and no ACK is offered); it takes effect at
        the next edge, which issues no update."""
        r = self.regs
        cw = self.cw
        # 1. timer (on the window of one cycle ago) and gate (two cycles ago)
        fire = self.sub1_d and self.phase >= self.thr
        if not self.sub1_d:
            self.phase = 0
        elif fire:
            self.phase -= self.thr
        else:
            self.phase += self.cw_d
        self.credit = self.sub1_d and (fire or (self.credit and not sent))
        self.tick = fire
        self.sub1 = self.sub1_d
        self.win_bytes = (self.gate_prod + ONE - 1) >> FRAC_BITS
        self.gate_prod = cw * r.mtu
        self.cw_d, self.sub1_d = cw & (ONE - 1), cw < ONE
        self.thr = ((r.rtt << FRAC_BITS) - self.cw_d) & ((1 << self.cfg.phase_width) - 1)
        if self.write_q is not None:          # taken at the previous edge, applied now
            self._write(*self.write_q)
        blocked = self.write_q is not None
        self.write_q = None
        if write is not None:
            assert self.idle and ack is None, "the RTL accepts writes only while idle"
            self.write_q = write
        # 2. commit
        done = self.in_flight if self.busy_left == 1 else None
        if done is not None:
            self.cw = done.cw
        # 3. coalesce
        pm, pu = self.pend_m, self.pend_u
        if ack is not None:
            n = min(ack.n, r.m)
            if n and ack.ece:
                pm, pu = pm + pu + n, 0
            elif n:
                pu += n
        # 4. issue
        if self.busy_left <= 1 and not blocked and (pm or pu):
            assert pm + pu <= self.cfg.n_max_event
            self.in_flight = update(r, self.cw, pm, pu)
            self.issued.append((self.cycle, self.in_flight))
            self.busy_left = self.LATENCY
            self.pend_m = self.pend_u = 0
        else:
            self.pend_m, self.pend_u = pm, pu
            if self.busy_left:
                self.busy_left -= 1
            if self.busy_left == 0:
                self.in_flight = None
        self.cycle += 1

    # -- closed forms for event-level callers (the LDCP transport models skip idle edges) ----
    def steady(self) -> bool:
        """The timer's and the gate's pipeline registers already hold what the window gives
        them (it has not changed for two edges) and the timer did not fire at the last edge."""
        cw = self.cw
        frac = cw & (ONE - 1)
        return (self.cw_d == frac and self.sub1_d == (cw < ONE) and self.sub1 == self.sub1_d
                and self.gate_prod == cw * self.regs.mtu
                and self.win_bytes == (self.gate_prod + ONE - 1) >> FRAC_BITS
                and self.thr == ((self.regs.rtt << FRAC_BITS) - frac)
                & ((1 << self.cfg.phase_width) - 1)
                and not self.tick)

    def timer_edges(self) -> int | None:
        """Edges from now before the one at which the sub-1 timer fires (it fires at the edge
        that ends cycle ``self.cycle + j``, with no window change before it); None while the
        window is at or above one packet (the timer is idle)."""
        if not self.sub1_d:
            return None
        gap = self.thr - self.phase
        return 0 if gap <= 0 else -(-gap // self.cw_d)

    def idle_edges(self) -> int:
        """How many edges from now :meth:`skip` can take at once (if no input comes): 0 unless
        the pipeline is :meth:`steady`, no write is being applied and nothing pending waits
        to issue; then up to the timer's firing, and up to the commit of the update in flight
        or, if that commit may be skipped (nothing pending, the window at or above one packet
        before and after it), through it and the gate's two edges after it; ``2**62`` when
        nothing is in flight and the timer is idle."""
        if self.write_q is not None or not self.steady():
            return 0
        busy = self.busy_left
        if busy == 0:
            if self.pend_m or self.pend_u:
                return 0                      # an update issues at the next edge
            k = _FAR
        elif self.pend_m or self.pend_u or self.sub1_d or self.in_flight.cw < ONE:
            k = busy - 1                      # up to the commit (which issues, or moves the timer)
        else:
            k = busy + 2
        if self.sub1_d:
            gap = self.thr - self.phase
            if gap <= 0:
                return 0
            j = -(-gap // self.cw_d)
            if j < k:
                k = j
        return k

    def skip(self, k: int) -> None:
        """``k`` edges at once, the same as ``k`` calls of :meth:`edge` with no input (no ACK,
        no ``sent``, no write) when none of them fires the timer (``k <= timer_edges()``) and,
        from a :meth:`steady` pipeline: the timer's phase moves on (or stays 0) and an update in
        flight counts down.  The update may commit within the ``k`` edges only with nothing
        pending and the window at or above one packet before and after it (the timer stays
        idle); the gate's pipeline then follows it over the two edges after the commit."""
        if self.sub1_d:
            self.phase += k * self.cw_d
        else:
            self.phase = 0
            self.credit = False
        self.tick = False
        busy = self.busy_left
        if busy:
            if k < busy:
                self.busy_left = busy - k
            else:                             # the commit, then the gate's two edges
                cw = self.in_flight.cw
                assert not (self.pend_m or self.pend_u or self.sub1_d) and cw >= ONE
                self.cw = cw
                self.busy_left = 0
                self.in_flight = None
                if k > busy:
                    self.cw_d = cw_d = cw & (ONE - 1)
                    self.sub1_d = False
                    self.thr = (((self.regs.rtt << FRAC_BITS) - cw_d)
                                & ((1 << self.cfg.phase_width) - 1))
                    self.gate_prod = cw * self.regs.mtu
                    if k > busy + 1:
                        self.win_bytes = (self.gate_prod + ONE - 1) >> FRAC_BITS
                        self.sub1 = False
        self.cycle += k

    def _register_file(self):
        # the map declared once in LdcpWindowConfig.register_map; values read from the model
        if self._csr is None:
            live = {"CW": lambda: self.cw}
            for name in ("ALPHA", "BETA", "GAMMA", "CW_MAX", "RTT", "MTU"):
                live[name] = (lambda n: lambda: getattr(self.regs, n))(name.lower())
            self._csr = self.cfg.register_map().model(live)
        return self._csr

    def _write(self, addr: int, value: int) -> None:
        csr = self._register_file()
        hit = csr.write(addr, value)
        if hit is None:
            return
        name = hit[0].name
        if name == "CW":
            self.cw = min(max(csr[name], self.regs.gamma), self.regs.cw_max)
        else:
            self.regs = dataclasses.replace(self.regs, **{name.lower(): csr[name]})

    def read(self, addr: int) -> int:
        """The word the RTL reads back at ``addr`` (0 where nothing is mapped)."""
        return self._register_file().read(addr)

    @property
    def idle(self) -> bool:
        """No update in flight and nothing pending."""
        return (self.busy_left == 0 and not (self.pend_m or self.pend_u)
                and self.write_q is None)
