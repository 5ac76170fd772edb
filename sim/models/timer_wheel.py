"""Cycle-accurate, bit-exact model of the timer service :class:`hw.nic.timer_wheel.TimerWheel`.

The contract (what the engine may rely on; the RTL matches it on every output, every cycle)
------------------------------------------------------------------------------------------
Notation: S = ``slots``, H = ``horizon``, B = ``word_bits``, W = ``time_width``, L =
``insert_latency`` (4, the default ``INSERT_LATENCY``, 5 or 6); all times are W-bit stamps,
``le(a, b)`` is the wrap-safe ``(b - a) mod 2**W < 2**(W-1)``.  ``now`` is an input: the
engine's free-running cycle counter, which must be 0 in the first cycle after reset and
advance by exactly 1 per cycle.

A slot is one cycle; slot index = time mod S; each slot holds at most one entry {flow, gen}.
The *cursor* is the bitmap word (B slots) the wheel pops from; ``wbt`` is the time of its first
slot (0 after reset).  The window is the S slots from ``wbt`` on.

Ports (one call of :meth:`TimerWheelModel.step` per clock cycle)
- ``ins`` {flow, gen, deadline}: a stream that is ALWAYS ready (one insert per cycle).
- ``pop`` {flow, gen, slot}: a stream (valid/ready); ``pop_ready`` is the consumer's ready.
- ``occupancy`` (entries in the wheel), ``max_occupancy``, ``max_displacement`` (slot - target,
  the most any entry was pushed back because earlier slots were taken), ``overflow`` (sticky)
  and ``overflow_count`` (saturating at 2**16 - 1): outputs of registers.

The cursor's lag ``lag1 = (now + 1 - wbt) mod 2**W`` is never negative (``wbt <= now + 1``),
so every cursor compare below is an unsigned compare of ``lag1``: exact for any lag below
``2**W - B`` cycles (a consumer may hold ``pop.ready`` low that long without aliasing).

Insert rule.  An entry accepted in the cycle where ``now == n`` gets the target
``T = min(max(deadline, n + L), P)`` with the park point
``P = (n if lag1 <= B else wbt + B - 1) + H`` (i.e. ``n + H`` unless the cursor lags by more
than a word, then H after the cursor's word: a lagging cursor never lets the window alias);
the ``max`` is wrap-safe (``le``), the ``min`` compares distances from ``wbt``.  L - 2
cycles later (the decision stage: 2 cycles at L = 4, 3 at L = 5) it takes the first free slot
at or after T: displacement ``d`` = the smallest d >= 0 whose slot ``(T + d) mod S`` is free,
given every earlier decision and every pop issued before that cycle.
If there is none with ``d < room``, ``room = S - ((T - wbt1) mod S)`` (``wbt1``: the cursor one
cycle after acceptance), the entry is dropped and the overflow counter counts it; the capacity
rule of :class:`~hw.nic.timer_wheel_config.TimerWheelConfig` makes this unreachable.

Pop rule.  Every cycle, if the output register is free (``not pop_valid or pop_ready``), the
lowest occupied slot of the cursor's word, at time ``ts = wbt + offset``, is issued if
``le(ts, now + 1)``: it leaves the wheel and is presented on ``pop`` from the next cycle (when
``now == ts`` if nothing lagged), held until taken.  Then, if the cursor's word is empty and
its last slot time has come (``lag1 >= B - 1``, i.e. ``wbt + B - 1 <= now + 1``), the cursor
moves to the next word (``wbt += B``): so a lagging cursor skips empty slots at one word (B
slots) per cycle and drains due entries at one per cycle, at the consumer's rate.

Latencies.  Insert accepted at ``now == n`` with ``T >= n + L``: pops (``pop.valid``) at ``now
== T + d`` when the cursor keeps up (``d`` = displacement); deadlines < n + L pop at n + L
(late by ``n + L - deadline``).  With distinct deadlines >= n + L: lateness 0.  k entries with
one deadline T pop at T, T+1, ..., T+k-1 (the i-th, from 0, i cycles late), in insert order.

Pop buffer (L = 6).  As L = 5 for the insert side; the cursor looks one cycle further ahead
(``lag1`` above is ``now + 2 - wbt`` instead, so "its last slot time has come" and the park
point use it too, and a slot is issued once ``le(ts, now + 2)``), and an issued entry reaches
``pop`` two cycles later (the slot RAM's latency 2): straight through if the buffer of
``POP_BUFFER`` = 3 entries is empty, else behind the buffered ones, in issue order.  The
cursor issues only while ``entries buffered + pops issued in the last two cycles <=
POP_BUFFER - 1`` (registers only: ``pop_ready`` drains the buffer and never reaches the
cursor in the same cycle).  With ``pop_ready`` high the pops come exactly as at L = 4 and 5
(at ``T + d``); back-pressure reaches the cursor one cycle later.

Statistics timing: ``occupancy`` counts decisions minus issued pops, one cycle after the event;
``max_occupancy`` takes the max of ``occupancy`` one cycle later; ``max_displacement`` and the
overflow flag/counter take a decision's value two cycles after the decision.
"""

from __future__ import annotations

from typing import NamedTuple

from hw.nic.timer_wheel_config import POP_BUFFER, TimerWheelConfig

__all__ = ["TimerWheelModel", "TimerWheelOut", "wheel_le", "first_free"]

OVF_COUNT_MAX = (1 << 16) - 1


def wheel_le(a: int, b: int, width: int) -> bool:
    """Wrap-safe ``a <= b`` for ``width``-bit stamps."""
    return ((b - a) % (1 << width)) < (1 << (width - 1))


def first_free(occupied, target_slot: int, slots: int) -> int | None:
    """Displacement d >= 0 of the first free slot ``(target_slot + d) mod slots``, or None."""
    d = 0
    while d < slots:
        if (target_slot + d) % slots not in occupied:
            return d
        d += 1
    return None


class TimerWheelOut(NamedTuple):
    pop_valid: bool
    pop_flow: int
    pop_gen: int
    pop_slot: int
    occupancy: int
    max_occupancy: int
    max_displacement: int
    overflow: bool
    overflow_count: int


class TimerWheelModel:
    """Per cycle: ``out = m.step(now, ins, pop_ready)``, where ``ins`` is ``None`` or
    ``(flow, gen, deadline)`` and ``out`` (:class:`TimerWheelOut`) holds the outputs during that
    cycle (before the clock edge; they depend on registers only, so :attr:`out` gives them
    before ``pop_ready`` is chosen).  ``pop_flow``/``pop_gen``/``pop_slot`` are meaningful only
    while ``pop_valid``.  Extra: :attr:`events` logs (kind, cycle, ...) of decisions and pops."""

    def __init__(self, cfg: TimerWheelConfig):
        self.cfg = cfg
        self.S, self.B, self.H, self.W = cfg.slots, cfg.word_bits, cfg.horizon, cfg.time_width
        self.mask = (1 << self.W) - 1
        self.pending: dict[int, tuple[int, int]] = {}     # slot -> (flow, gen)
        self.wbt = 0                     # time of the cursor word's first slot
        self.L = cfg.insert_latency
        self.LA = cfg.lookahead          # the cursor issues slots due by now + LA
        self.buffered = cfg.pop_buffer
        self.fifo: list = []             # pop buffer (insert latency 6): entries waiting
        self.iss = [None, None]          # pops issued one and two cycles ago (slot RAM reads)
        self.s1 = None                   # (flow, gen, target): search stage
        self.s_read = None               # (flow, gen, target, room): read stage (L = 5)
        self.s2 = None                   # (flow, gen, target, room): decision stage
        self.pop_valid = False
        self.pop = (0, 0, 0)
        self.occ = 0
        self.max_occ = 0
        self.max_disp = 0
        self.disp_r = 0
        self.overflow = False
        self.ovf_count = 0
        self.ovf_r = False
        self.cycle = 0
        self.last_target = None          # target of the decision made in the last step
        self.last_decision = None        # (flow, gen, target, slot or None, displacement)

    # -- helpers ---------------------------------------------------------------------------
    def lag(self, now: int) -> int:
        """The cursor's lag in the cycle where ``now`` is the input: ``(now + LA - wbt) mod
        2**W`` (``LA``: the look-ahead, 1, or 2 with the pop buffer)."""
        return (now + self.LA - self.wbt) & self.mask

    def le(self, a: int, b: int) -> bool:
        return wheel_le(a, b, self.W)

    def target(self, deadline: int, now: int) -> int:
        """The target of an insert accepted now (before parking and displacement rules)."""
        m = self.mask
        earliest = (now + self.L) & m
        t = earliest if self.le(deadline, earliest) else deadline & m
        lag1 = self.lag(now)
        park = ((now if lag1 <= self.B else self.wbt + self.B - 1) + self.H) & m
        return t if ((t - self.wbt) & m) <= ((park - self.wbt) & m) else park

    @property
    def out(self) -> TimerWheelOut:
        if self.buffered:
            # the buffer's head, else the slot RAM's output (the pop issued two cycles ago)
            head = self.fifo[0] if self.fifo else self.iss[1]
            valid = head is not None
            f, g, s = head if valid else (0, 0, 0)
            return TimerWheelOut(valid, f, g, s, self.occ, self.max_occ, self.max_disp,
                                 self.overflow, self.ovf_count)
        f, g, s = self.pop
        return TimerWheelOut(self.pop_valid, f, g, s, self.occ, self.max_occ, self.max_disp,
                             self.overflow, self.ovf_count)

    # -- one clock cycle -------------------------------------------------------------------
    def step(self, now: int, ins=None, pop_ready: bool = False) -> TimerWheelOut:
        out = self.out
        S, B, m = self.S, self.B, self.mask
        now &= m
        # pop stage: the cursor's word as it stands before this cycle's decision
        if self.buffered:
            # room for everything in flight when this pop arrives, from registers only
            advance = len(self.fifo) + sum(x is not None for x in self.iss) <= POP_BUFFER - 1
        else:
            advance = (not self.pop_valid) or bool(pop_ready)
        base = self.wbt % S
        offs = [f for f in range(B) if base + f in self.pending]
        lag1 = self.lag(now)                # never "negative": the cursor stays <= now + LA
        issue = False
        if advance and offs and offs[0] <= lag1:
            issue = True
            slot = base + offs[0]
            fl, ge = self.pending.pop(slot)
            new_pop = (fl, ge, slot)
            offs = offs[1:]
        leave = (not offs) and lag1 >= B - 1
        # decision stage
        commit = False
        disp = 0
        ovf = False
        self.last_decision = None
        if self.s2 is not None:
            fl, ge, tgt, room = self.s2
            d = first_free(self.pending, tgt % S, S)
            if d is None or d >= room:
                ovf = True
                self.last_decision = (fl, ge, tgt, None, d)
            else:
                slot = (tgt + d) % S
                assert not (leave and slot // B == base // B), "insert into a word being left"
                self.pending[slot] = (fl, ge)
                commit, disp = True, d
                self.last_decision = (fl, ge, tgt, slot, d)
        # search stage: the room is measured from the cursor of this cycle
        s2 = None
        if self.s1 is not None:
            fl, ge, tgt = self.s1
            s2 = (fl, ge, tgt, S - ((tgt - self.wbt) % S))
        # insert stage
        s1 = None
        if ins is not None:
            fl, ge, dl = ins
            s1 = (int(fl), int(ge), self.target(int(dl) & m, now))
        # registers
        if self.buffered:
            taken = out.pop_valid and bool(pop_ready)
            arriving = self.iss[1]
            if self.fifo:
                if taken:
                    self.fifo.pop(0)
                if arriving is not None:
                    self.fifo.append(arriving)
            elif arriving is not None and not taken:
                self.fifo.append(arriving)
            assert len(self.fifo) <= POP_BUFFER
            self.iss = [new_pop if issue else None, self.iss[0]]
        elif advance:
            self.pop_valid = issue
            if issue:
                self.pop = new_pop
        if self.L >= 5:
            # the read stage only delays the decision by a cycle; the room stays the one
            # measured at the search stage
            self.s1, self.s_read, self.s2 = s1, s2, self.s_read
        else:
            self.s1, self.s2 = s1, s2
        if leave:
            self.wbt = (self.wbt + B) & m
        self.max_occ = max(self.max_occ, self.occ)
        self.occ += int(commit) - int(issue)
        self.max_disp = max(self.max_disp, self.disp_r)
        self.disp_r = disp
        if self.ovf_r:
            self.overflow = True
            self.ovf_count = min(self.ovf_count + 1, OVF_COUNT_MAX)
        self.ovf_r = ovf
        self.cycle += 1
        return out
