"""Cycle-accurate, bit-exact model of the calendar timer service
:class:`hw.nic.timer_calendar.TimerCalendar`.

The contract (what the user may rely on; the RTL matches it on every output, every cycle)
------------------------------------------------------------------------------------------
Notation: S = ``slots``, H = ``horizon``, B = ``word_bits``, W = ``time_width``, IL =
:data:`~hw.nic.timer_calendar_config.INSERT_LATENCY` (10), LA =
:data:`~hw.nic.timer_calendar_config.LOOKAHEAD` (5); all times are W-bit stamps, ``le(a, b)``
is the wrap-safe ``(b - a) mod 2**W < 2**(W-1)``.  ``now`` is an input that is 0 in the first
cycle after reset and advances by exactly 1 per cycle.

A slot is one cycle; slot index = time mod S; a slot holds ANY number of entries, a LIFO list.
An entry is an id {flow, gen}.  The USER guarantees that an id is in the calendar at most once
at a time (from the cycle it is accepted on ``ins`` to the cycle it is taken from ``pop``,
where it may be inserted again); the model asserts it.  Nothing can overflow: a slot's list
is unbounded, each id has its own link word, and parking keeps every target in the window.

Ports (one call of :meth:`TimerCalendarModel.step` per clock cycle)
- ``ins`` {flow, gen, deadline}: ALWAYS ready (one insert per cycle).
- ``pop`` {flow, gen, slot}: valid/ready, the payload held while not taken.
- ``occupancy`` (entries accepted and not yet moved to the pop buffer, one cycle after the
  event), ``max_occupancy`` (the max of ``occupancy``, one cycle later), ``max_lateness``
  (the most cycles an entry came after its slot's time, saturating at 2**log2(S) - 1; an
  entry's lateness is ``k + 1 - time`` for the cycle k it enters the pop buffer, i.e. the
  cycle it is on ``pop`` if the buffer ahead of it drains; it reaches the output 3 cycles
  after k).  No ``overflow``: nothing can overflow (above).

The cursor's lag ``(now + LA - wbt) mod 2**W`` must stay below ``2**(W-1)``: a deadline is
compared wrap-safe with ``now``, and with a larger lag its distance from the cursor aliases (a
consumer may not hold ``pop.ready`` low, nor keep the calendar overloaded, that long).

Insert rule (the wheel's).  An entry accepted when ``now == n`` gets the target ``T =
min(max(deadline, n + IL), P)``, ``P = (n if lag <= B else wbt + B - 1) + H``, ``lag = (n +
LA - wbt) mod 2**W`` (``wbt``: the time of the cursor word's first slot, 0 after reset); the
``max`` is wrap-safe, the ``min`` compares distances from ``wbt``.  The entry joins the FRONT
of slot T's list, and the cursor sees it from the cycle ``now == n + 5``.

Cursor.  It holds one bitmap word (B slots from ``wbt``).  Every cycle, if ``advance`` (head
queue + heads in flight <= HEAD_QUEUE - 1, from registers), the lowest non-empty slot of its
word, at time ``ts = wbt + offset``, is ISSUED if ``ts <= now + LA`` (``offset <= lag``): its
whole list leaves the bitmap.  Then, if its word is empty and its last slot is due (``lag >=
B - 1``) and a look-ahead word is ready (always, in practice: see the RTL), the cursor moves
to the next word (``wbt += B``): one word per cycle through empty words.

Pop side.  An issued list's head reaches the sequencer 4 cycles after the issue (head RAM
read one cycle later, latency 2, then registered); every further entry comes from a
link-RAM read issued the cycle after the entry before it enters the pop buffer (its id from
a register), 3 cycles after that entry.  Per cycle ONE entry may enter the
pop buffer, if its registered level is below POP_BUFFER, the first of: the held link result;
the link result arriving now; nothing while a link read is in flight (the list is not done);
the head queue's first head; the head arriving now.  A link result that cannot enter is held;
a head that does not enter joins the head queue.  Entries are on ``pop`` from the cycle after
they enter the buffer, in order.  So pops leave in slot order; a list of k entries, with the
pop ready, pops at T, T + 3, ..., T + 3(k - 1) (its head at its time, each further entry 3
cycles after the previous one: the registered link address and the read's latency 2), and
the next slot's head at the earliest one cycle after the list's last entry.  With one entry
per slot and ``pop.ready`` high, every entry inserted with ``deadline >= n + IL`` pops
exactly at its deadline (lateness 0), one per cycle for consecutive slots.
"""

from __future__ import annotations

from typing import NamedTuple

from hw.nic.timer_calendar_config import (
    HEAD_QUEUE,
    INSERT_LATENCY,
    LOOKAHEAD,
    LOOKAHEAD_WORDS,
    POP_BUFFER,
    TimerCalendarConfig,
)
from sim.models.timer_wheel import wheel_le

__all__ = ["TimerCalendarModel", "TimerCalendarOut"]


class TimerCalendarOut(NamedTuple):
    pop_valid: bool
    pop_flow: int
    pop_gen: int
    pop_slot: int
    occupancy: int
    max_occupancy: int
    max_lateness: int


class TimerCalendarModel:
    """Per cycle: ``out = m.step(now, ins, pop_ready)``, ``ins`` None or ``(flow, gen,
    deadline)``; ``out`` holds the outputs during that cycle (registers only: :attr:`out`
    gives them before ``pop_ready`` is chosen).  Extra: :attr:`events` logs ("ins", cycle,
    flow, gen, target) and ("push", cycle, flow, gen, time) for the tests."""

    def __init__(self, cfg: TimerCalendarConfig):
        self.cfg = cfg
        self.S, self.B, self.H, self.W = cfg.slots, cfg.word_bits, cfg.horizon, cfg.time_width
        self.mask = (1 << self.W) - 1
        self.lat_max = (1 << cfg.slot_bits) - 1
        self.lists: dict[int, list] = {}   # slot -> ids, newest first (what the cursor sees)
        self.ins_pipe = [None] * 5         # accepted 1..5 cycles ago: (slot, id)
        self.wbt = 0
        self.lq = 0                        # look-ahead words ready, reads in flight
        self.rf = [False, False, False]  # look-ahead reads 1, 2, 3 cycles old
        self.iss = [None] * 4             # issued 1 ... 4 cycles ago: (time, ids)
        self.hq: list = []                 # head queue: (time, ids)
        self.chase = None                  # (time, ids not yet pushed) of the list in chase
        self.lk = [False, False, False]    # link read due 1, 2, 3 cycles ago
        self.hold = False                  # the chase's next entry is held (buffer full)
        self.pb: list = []                 # pop buffer: (flow, gen, slot)
        self.occ = 0
        self.max_occ = 0
        self.push_r = None                 # time of the entry pushed last cycle
        self.lat_r = 0
        self.max_lat = 0
        self.inside: set = set()           # ids in the calendar (the user's guarantee)
        self.cycle = 0
        self.events: list = []

    def _id(self, flow, gen):
        return (gen << self.cfg.flow_bits) | flow

    def _fg(self, i):
        return i & ((1 << self.cfg.flow_bits) - 1), i >> self.cfg.flow_bits

    def lag(self, now: int) -> int:
        return (now + LOOKAHEAD - self.wbt) & self.mask

    def target(self, deadline: int, now: int) -> int:
        m, B = self.mask, self.B
        earliest = (now + INSERT_LATENCY) & m
        t = earliest if wheel_le(deadline, earliest, self.W) else deadline & m
        park = ((now if self.lag(now) <= B else self.wbt + B - 1) + self.H) & m
        return t if ((t - self.wbt) & m) <= ((park - self.wbt) & m) else park

    @property
    def out(self) -> TimerCalendarOut:
        if self.pb:
            f, g, s = self.pb[0]
            return TimerCalendarOut(True, f, g, s, self.occ, self.max_occ, self.max_lat)
        return TimerCalendarOut(False, 0, 0, 0, self.occ, self.max_occ, self.max_lat)

    def step(self, now: int, ins=None, pop_ready: bool = False) -> TimerCalendarOut:
        out = self.out
        S, B, m = self.S, self.B, self.mask
        now &= m
        # the insert accepted 5 cycles ago is visible to the cursor from this cycle
        vis = self.ins_pipe[4]
        if vis is not None:
            slot, eid = vis
            self.lists.setdefault(slot, []).insert(0, eid)
        # -- cursor -----------------------------------------------------------------------
        in_flight = sum(x is not None for x in self.iss)
        advance = len(self.hq) + in_flight <= HEAD_QUEUE - 1
        base = self.wbt % S
        offs = [f for f in range(B) if base + f in self.lists]
        lag = self.lag(now)
        new_iss = None
        if advance and offs and offs[0] <= lag:
            new_iss = ((self.wbt + offs[0]) & m, self.lists.pop(base + offs[0]))
            offs = offs[1:]
        leave = not offs and lag >= B - 1 and self.lq >= 1
        # -- pop side: one entry into the pop buffer per cycle ----------------------------
        room = len(self.pb) < POP_BUFFER
        arriving = self.iss[3]
        cand = None                  # (time, ids), the entry is ids[0]
        src = None
        if self.hold:
            cand, src = self.chase, "hold"
        elif self.lk[2]:
            cand, src = self.chase, "link"
        elif self.lk[0] or self.lk[1]:
            pass
        elif self.hq:
            cand, src = self.hq[0], "hq"
        elif arriving is not None:
            cand, src = arriving, "head"
        push = cand is not None and room
        link_rd = False
        if push:
            ts, ids = cand
            f, g = self._fg(ids[0])
            self.events.append(("push", self.cycle, f, g, ts))
            self.pb_new = (f, g, ts % S)
            if len(ids) > 1:
                link_rd = True
                self.chase = (ts, ids[1:])
            else:
                self.chase = None
        hold = src in ("hold", "link") and not push
        # -- registers --------------------------------------------------------------------
        taken = out.pop_valid and bool(pop_ready)
        if taken:
            f, g, _ = self.pb.pop(0)
            self.inside.discard(self._id(f, g))
        if push:
            self.pb.append(self.pb_new)
        assert len(self.pb) <= POP_BUFFER
        if src == "hq" and push:
            self.hq.pop(0)
        if arriving is not None and not (src == "head" and push):
            self.hq.append(arriving)
        assert len(self.hq) <= HEAD_QUEUE
        self.hold = hold
        self.lk = [link_rd, self.lk[0], self.lk[1]]
        self.iss = [new_iss] + self.iss[:3]
        rd = self.lq + sum(self.rf) <= LOOKAHEAD_WORDS - 1
        self.lq += int(self.rf[2]) - int(leave)
        self.rf = [rd, self.rf[0], self.rf[1]]
        # -- insert stage -----------------------------------------------------------------
        new_ins = None
        if ins is not None:
            fl, ge, dl = (int(x) for x in ins)
            eid = self._id(fl, ge)
            assert eid not in self.inside, f"id {eid} (flow {fl}, gen {ge}) inserted twice"
            self.inside.add(eid)
            t = self.target(dl & m, now)
            self.events.append(("ins", self.cycle, fl, ge, t))
            new_ins = (t % S, eid)
        self.ins_pipe = [new_ins] + self.ins_pipe[:4]
        if leave:
            self.wbt = (self.wbt + B) & m
        # -- statistics -------------------------------------------------------------------
        self.max_occ = max(self.max_occ, self.occ)
        self.occ += int(ins is not None) - int(push)
        self.max_lat = max(self.max_lat, self.lat_r)
        self.lat_r = 0 if self.push_r is None else min((now - self.push_r) & m,
                                                       self.lat_max)
        self.push_r = cand[0] if push else None
        self.cycle += 1
        return out
