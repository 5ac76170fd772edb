"""Timer wheel: RTL (:class:`hw.nic.timer_wheel.TimerWheel`) against the cycle-accurate model
(:class:`sim.models.timer_wheel.TimerWheelModel`) on every output every cycle, directed checks of
the pop times computed independently of both, and a property test of the model's slot choice
against a brute-force reference (a sorted list of occupied times).

CC_SEED reproduces a random run (the seed is printed); CC_LONG=1 runs 10**5 random cycles."""

from __future__ import annotations

import bisect
import dataclasses
import os
import random

import pytest

from hw.nic.timer_wheel import TimerWheel, summary_group_words
from hw.nic.timer_wheel_config import INSERT_LATENCY, TimerWheelConfig
from hw.params import ConfigError
from sim.models.timer_wheel import TimerWheelModel
from tests.streams import run_testbenches
from tests.timer_harness import drive, random_seed

L = INSERT_LATENCY

# 16 words of 16 slots, time wraps every 1024 cycles
CFG = TimerWheelConfig(slots=256, horizon=128, max_entries=112, flow_bits=4, gen_bits=2,
                       time_width=10, word_bits=16)
# 32-bit words (the default width), 8 words
CFG32 = TimerWheelConfig(slots=256, horizon=128, max_entries=96, flow_bits=4, gen_bits=2,
                         time_width=11, word_bits=32)
# tiny words: many word crossings, wraps every 256 cycles
CFG4 = TimerWheelConfig(slots=64, horizon=16, max_entries=44, flow_bits=4, gen_bits=2,
                        time_width=8, word_bits=4)
# the same with the read stage (insert latency 5, three candidate words)
CFG_L5 = dataclasses.replace(CFG, insert_latency=5)
CFG4_L5 = dataclasses.replace(CFG4, insert_latency=5)
# and with the pop buffer (insert latency 6: the slot RAM read with latency 2, the cursor one
# cycle further ahead, pop.ready only drains the buffer)
CFG_L6 = dataclasses.replace(CFG, insert_latency=6)
CFG4_L6 = dataclasses.replace(CFG4, insert_latency=6)


class Run:
    """Drive the DUT and the model with the same inputs; compare every output every cycle.

    ``source(cyc, now, run)`` returns None or (flow, gen, deadline); ``ready(cyc)`` the pop
    ready.  ``pops`` collects (cycle, flow, gen, slot) of every pop taken; ``decisions`` the
    model's (cycle, flow, gen, target, slot, displacement, absolute slot time)."""

    def __init__(self, cfg, cycles, source, ready=lambda cyc: True, group_words=None):
        self.cfg, self.cycles, self.source, self.ready = cfg, cycles, source, ready
        self.group_words = group_words
        self.model = TimerWheelModel(cfg)
        self.pops: list[tuple[int, int, int, int]] = []
        self.decisions = []
        self.outstanding = 0
        self.wbt_abs = 0

    def _step(self, cyc, now):
        cfg, model = self.cfg, self.model
        ins = self.source(cyc, now, self)
        rdy = bool(self.ready(cyc))
        if ins is not None:
            self.outstanding += 1
        wbt_pre, abs_pre = model.wbt, self.wbt_abs
        exp = model.step(now, ins, rdy)
        if model.wbt != wbt_pre:
            self.wbt_abs += cfg.word_bits
        if exp.pop_valid and rdy:
            self.pops.append((cyc, exp.pop_flow, exp.pop_gen, exp.pop_slot))
            self.outstanding -= 1
        if model.last_decision is not None:
            fl, ge, tgt, slot, d = model.last_decision
            # absolute slot time: at or after the cursor, within the window
            t_abs = abs_pre + ((tgt + d - wbt_pre) & ((1 << cfg.time_width) - 1))
            self.decisions.append((cyc, fl, ge, tgt, slot, d, t_abs))
        return ins, rdy, exp

    def run(self):
        cfg = self.cfg
        drive(TimerWheel(cfg, group_words=self.group_words), self.cycles, cfg.time_width,
              self._step, ["occupancy", "max_occupancy", "max_displacement", "overflow",
                           "overflow_count"])
        assert not self.model.overflow
        return self


def _schedule(plan):
    """A source from {cycle: (flow, gen, deadline)}."""
    return lambda cyc, now, run: plan.get(cyc)


# -- configuration ------------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [
    {"slots": 100}, {"word_bits": 24}, {"slots": 64, "word_bits": 64},
    {"horizon": 64}, {"max_entries": 65536 - 32768 - 32 + 1}, {"time_width": 17},
    {"flow_bits": 0}, {"slots": True}, {"insert_latency": 3}, {"insert_latency": 7},
])
def test_config_rejects(kw):
    with pytest.raises(ConfigError) as e:
        TimerWheelConfig(**kw)
    assert "TimerWheelConfig." in str(e.value)


def test_config_capacity_rule():
    c = TimerWheelConfig()
    assert c.check_capacity(65536 - 32768 - 32) == 65536 - 32768 - 32
    with pytest.raises(ConfigError):
        c.check_capacity(65536 - 32768 - 31)
    assert TimerWheelConfig.from_json(CFG.to_json()) == CFG


# -- directed RTL == model runs with independent expectations ----------------------------------

@pytest.mark.parametrize("cfg", [CFG, CFG_L5, CFG_L6], ids=["L4", "L5", "L6"])
def test_distinct_deadlines_pop_on_time(cfg):
    """Distinct deadlines >= now + L: every entry pops exactly at its deadline (lateness 0),
    including deadlines exactly L ahead, in the cursor's word, across word boundaries."""
    L = cfg.latency
    rng = random.Random(1)
    plan, deadlines = {}, {}
    used = set()
    for cyc in range(0, 600, 3):
        while True:
            dl = cyc + L + rng.randrange(0, 60)
            if dl not in used:
                break
        used.add(dl)
        flow = len(plan) % 16
        plan[cyc] = (flow, cyc & 3, dl)
        deadlines[dl] = (flow, cyc & 3, dl % cfg.slots)
    r = Run(cfg, 700, _schedule(plan)).run()
    assert len(r.pops) == len(plan)
    assert [now for now, *_ in r.pops] == sorted(deadlines)          # each at its deadline
    assert [tuple(p[1:]) for p in r.pops] == [deadlines[d] for d in sorted(deadlines)]


@pytest.mark.parametrize("cfg,n,T", [(CFG, 16, 46), (CFG32, 16, 62), (CFG4, 10, 26),
                                     (CFG_L5, 16, 46), (CFG4_L5, 10, 26), (CFG_L6, 16, 46),
                                     (CFG4_L6, 10, 26)],
                         ids=["B16", "B32", "B4", "B16-L5", "B4-L5", "B16-L6", "B4-L6"])
def test_same_deadline_burst_edf(cfg, n, T):
    """n inserts, one per cycle from cycle 10, all with deadline T (two slots before a word
    boundary): slots T .. T+n-1 in insert order; the i-th pops at T + i (i cycles late)."""
    L = cfg.latency
    assert T % cfg.word_bits == cfg.word_bits - 2 and 10 + n - 1 + L <= T <= 10 + cfg.horizon
    plan = {10 + i: (i, 1, T) for i in range(n)}
    r = Run(cfg, T + 40, _schedule(plan)).run()
    assert [(now, f) for now, f, _, _ in r.pops] == [(T + i, i) for i in range(n)]
    assert [s for *_, s in r.pops] == [(T + i) % cfg.slots for i in range(n)]
    assert r.model.max_disp == n - 1


def test_burst_of_all_flows_worst_case():
    """Every flow (16) due in the same cycle, inserted in a random order with different
    earlier deadlines in between: the worst lateness is n_flows - 1 = 15 cycles."""
    rng = random.Random(7)
    T = 120
    order = list(range(16))
    rng.shuffle(order)
    plan = {5 + 2 * i: (f, 0, T) for i, f in enumerate(order)}
    plan.update({6 + 2 * i: (f, 1, T - 1 - i) for i, f in enumerate(order)})
    r = Run(CFG, T + 60, _schedule(plan)).run()
    late = [now - T for now, f, g, s in r.pops if g == 0]
    assert sorted(late) == list(range(16))
    assert [f for now, f, g, s in r.pops if g == 0] == order        # EDF, then insert order
    assert max(late) == 15


@pytest.mark.parametrize("cfg", [CFG, CFG_L5, CFG_L6], ids=["L4", "L5", "L6"])
def test_parking_beyond_horizon(cfg):
    """Deadlines beyond now + H are parked at now + H; same-cycle parks get consecutive
    slots; a deadline in the past goes to now + L."""
    H, L = cfg.horizon, cfg.latency
    plan = {20: (1, 0, 20 + H + 50), 21: (2, 0, 21 + H + 1), 22: (3, 0, 22 + H),
            23: (4, 0, 5), 24: (5, 0, 24 + L - 1)}
    r = Run(cfg, 20 + H + 40, _schedule(plan)).run()
    got = {f: now for now, f, g, s in r.pops}
    assert got == {1: 20 + H, 2: 21 + H, 3: 22 + H, 4: 23 + L, 5: 24 + L}


def test_wrap_of_slot_index_and_time():
    """Entries every few cycles over four wraps of the 10-bit time (16 wraps of the slot
    index), deadlines across the wrap: each pops at its deadline mod 2**W."""
    mask = (1 << CFG.time_width) - 1
    plan = {}
    for i, cyc in enumerate(range(0, 4 * 1024, 7)):
        plan[cyc] = (i % 16, i % 4, (cyc + L + (i * 37) % 100) & mask)
    expected = sorted(((dl) & mask, f) for f, g, dl in plan.values())
    r = Run(CFG, 4 * 1024 + 120, _schedule(plan)).run()
    # distinct deadlines? (i*37 % 100 + 7i is injective here) then every one is on time
    dls = [cyc + L + (i * 37) % 100 for i, cyc in enumerate(range(0, 4 * 1024, 7))]
    assert len(set(dls)) == len(dls)
    assert len(r.pops) == len(plan)
    want = sorted((cyc + L + (i * 37) % 100) for i, cyc in enumerate(range(0, 4 * 1024, 7)))
    assert [cyc for cyc, *_ in r.pops] == want
    assert len(expected) == len(plan)


def test_lagging_consumer_catch_up():
    """pop.ready low until cycle 150 with 10 entries due meanwhile (in adjacent words): they
    drain one per cycle in deadline order once ready rises; the cursor then skips the empty
    words at one word (16 slots) per cycle, closing 15 cycles of lag per cycle, so an entry
    inserted during the catch-up pops exactly at its deadline."""
    plan = {i: (i, 0, 40 + 3 * i) for i in range(10)}
    # after the last backlog pop (issued at 159) the cursor is at time 64: lag 96 -> caught up
    # after ceil(96 / 15) = 7 cycles, well before 175
    plan[162] = (11, 2, 175)
    r = Run(CFG, 230, _schedule(plan), ready=lambda cyc: cyc >= 150).run()
    assert [(now, f) for now, f, *_ in r.pops[:10]] == [(150 + i, i) for i in range(10)]
    assert r.pops[10][:2] == (175, 11)


def test_lag_beyond_horizon_parks_at_cursor():
    """When the cursor lags by more than a word, the park point is H after the cursor's word
    (not now + H), so the window never aliases: after a stall until 340 and a backlog drained
    at 340..349 (the last one, time 67, issued at 348; the cursor then moves one word per
    cycle from time 80), an insert at 352 (cursor at 128) with deadline 370 is parked at
    128 + 15 + H = 271 (slot 15) and pops early, when the cursor reaches it (word 256 at cycle
    360), i.e. at 361.  An insert at 353 (cursor at 144) with a deadline in the past (the
    target's other candidate, now + L = 357, against the park point 144 + 15 + H = 287) is
    parked too: slot 31, issued as the cursor reaches word 272 after leaving word 256, at
    361, i.e. it pops at 362."""
    plan = {i: (i, 0, 40 + 3 * i) for i in range(10)}
    plan[352] = (11, 2, 370)
    plan[353] = (12, 1, 300)
    r = Run(CFG, 400, _schedule(plan), ready=lambda cyc: cyc >= 340).run()
    assert [(now, f) for now, f, *_ in r.pops[:10]] == [(340 + i, i) for i in range(10)]
    assert r.pops[10] == (361, 11, 2, 15)
    assert r.pops[11] == (362, 12, 1, 31)


def test_long_stall_catch_up_bound():
    """After a stall with the cursor held at an entry, it lags by ~600 cycles over empty
    words: at one word (16 slots) per cycle it catches up within 600/16 + 2 cycles, so an
    entry due 45 cycles after the release pops on time."""
    release = 700
    plan = {0: (1, 0, 60), release - 5: (2, 0, release + 45)}
    r = Run(CFG, release + 80, _schedule(plan), ready=lambda cyc: cyc >= release).run()
    assert r.pops == [(release, 1, 0, 60), (release + 45, 2, 0, (release + 45) % 256)]


def test_inserts_into_cursor_word_every_cycle():
    """One insert per cycle with deadlines 0..12 cycles ahead (most land in the cursor's word
    or the next, many collide, some are in the past): RTL == model; pops are EDF-ordered."""
    rng = random.Random(3)
    mask = (1 << CFG.time_width) - 1

    def src(cyc, now, run):
        if cyc < 1500 and run.outstanding < 60:
            return (rng.randrange(16), rng.randrange(4), (now + rng.randrange(-2, 13)) & mask)
        return None

    r = Run(CFG, 1700, src, ready=lambda cyc: rng.random() < 0.8).run()
    assert len(r.pops) == len(r.decisions) > 1000
    _check_pops_against_decisions(CFG, r)


def _check_pops_against_decisions(cfg, r):
    """Each decision's slot pops exactly once, never before its slot time, in time order."""
    times = {}
    for _cyc, flow, gen, _tgt, slot, _d, t_abs in r.decisions:
        times.setdefault((flow, gen, slot), []).append(t_abs)
    last = -1
    for cyc, flow, gen, slot in r.pops:
        t = times[(flow, gen, slot)].pop(0)
        assert last <= t <= cyc, (cyc, t, last)
        last = t
    assert all(not v for v in times.values())


# -- the two-level summary: searches across groups ------------------------------------------

def test_summary_structure():
    """The default split of the 2048 words of the default wheel: 32 groups of 64 words; the
    small test configurations get several groups (so the tests here cross groups)."""
    assert summary_group_words(TimerWheelConfig().n_words) == 64
    assert summary_group_words(CFG.n_words) == 4        # 16 words: 4 groups of 4
    assert summary_group_words(CFG32.n_words) == 4      # 8 words: 2 groups of 4
    assert summary_group_words(CFG4.n_words) == 4
    assert summary_group_words(2) == 2                  # the smallest wheel: one group
    assert summary_group_words(16, 1) == 1 and summary_group_words(16, 16) == 16
    for bad in (3, 32, 0):
        with pytest.raises(ValueError):
            summary_group_words(16, bad)


def _fill_then_burst(fill, burst_at, T, n, group_words=None):
    """Entries with distinct increasing deadlines ``fill`` (one per cycle, each at cycle
    max(4 + i, deadline - H + 6), so on time), then n entries with deadline T, one per
    cycle from ``burst_at``.  Returns the run and the expected pops (cycle, flow, gen, slot):
    the fill entries at their deadlines; the burst takes the free times from T on in insert
    order (a sorted-list reference, independent of the wheel), each popping at its time."""
    H, S = CFG.horizon, CFG.slots
    plan = {}
    cyc = 0
    for i, dl in enumerate(fill):
        cyc = max(4 + i, dl - H + 6)
        assert cyc + L <= dl <= cyc + H and cyc not in plan
        plan[cyc] = (dl % 16, 0, dl)
    assert cyc < burst_at and burst_at + n - 1 + L <= T <= burst_at + H
    taken = set(fill)
    want = [(dl, dl % 16, 0, dl % S) for dl in fill]
    t = T
    for i in range(n):
        plan[burst_at + i] = (i % 16, 1, T)
        while t in taken:
            t += 1
        taken.add(t)
        want.append((t, i % 16, 1, t % S))
    r = Run(CFG, max(taken) + 20, _schedule(plan), group_words=group_words).run()
    return r, sorted(want)


@pytest.mark.parametrize("group_words", [None, 2])
def test_search_skips_a_full_group(group_words):
    """CFG: words of 16 slots, groups of 4 words (64 slots).  Group 2 (times 128..191) is
    filled completely, then a burst with deadline 120 (the last word of group 1): 8 entries
    take 120..127, the next ones find their target word full and the next group full, and
    land in group 3 from 192 on."""
    r, want = _fill_then_burst(range(128, 192), 70, 120, 20, group_words)
    assert r.pops == want
    assert [p[0] for p in want if p[2] == 1] == list(range(120, 128)) + list(range(192, 204))
    assert r.model.max_disp == 192 + 11 - 120


@pytest.mark.parametrize("group_words", [None, 1])
def test_search_wraps_from_last_group_to_first(group_words):
    """Group 3 (the last: times 192..255, slots 192..255) filled completely, then a burst
    with deadline 184 (the last word of group 2): 8 entries take 184..191, the rest skip the
    full last group and wrap to slot 0 (time 256), the first word of the first group."""
    r, want = _fill_then_burst(range(192, 256), 140, 184, 20, group_words)
    assert r.pops == want
    assert [p[3] for p in want if p[2] == 1] == list(range(184, 192)) + list(range(0, 12))


def test_search_within_group_and_to_next_group_word_boundary():
    """Words 5 and 6 (times 80..111, inside group 1) filled, a burst with deadline 76 (word
    4): 4 entries take 76..79, the next skip the two full words of the same group and land in
    word 7 (112..), and, once that word is full too, in the next group (128..)."""
    r, want = _fill_then_burst(range(80, 112), 40, 76, 24)
    assert r.pops == want
    assert [p[0] for p in want if p[2] == 1] == list(range(76, 80)) + list(range(112, 132))


@pytest.mark.parametrize("cfg,group_words,sh", [(CFG, None, 0), (CFG_L5, None, 0),
                                                (CFG_L6, None, 0), (CFG, 8, 16)],
                         ids=["L4", "L5", "L6", "L4-K8"])
def test_search_sees_the_last_decision(cfg, group_words, sh):
    """The summary flags take a decision a cycle after it; the search must still see it.
    CFG (16-slot words): word 7 (times 112..127) full, words 8, 9, 10 full but their last
    slots (143, 159, 175); then those three slots are inserted on three consecutive cycles and
    on the next an entry X with deadline 117 (its word full): words 8, 9, 10 fill by the
    decisions just before X's, so X must land at 176 (the first free slot after 117, word
    11).  A search that missed the decision of the cycle before it would offer the three
    just-filled words as X's candidates (or two of them at insert latency 4) and drop X.
    L4-K8: every time 16 later (words 8 ... 11, X at 133 lands at 192) with 8 words per
    group, so the just-filled words are in X's own group, whose flags the insert stage
    registered a cycle early (before the last decision): it must enter them there too."""
    last = {143 + sh, 159 + sh, 175 + sh}
    fill = [t for t in range(112 + sh, 176 + sh) if t not in last]
    plan = {}
    for i, dl in enumerate(fill):
        cyc = 10 + i
        assert cyc + cfg.insert_latency <= dl <= cyc + cfg.horizon
        plan[cyc] = (dl % 16, 0, dl)
    for j, dl in enumerate(sorted(last)):
        plan[71 + j] = (j, 1, dl)
    plan[74] = (9, 3, 117 + sh)
    r = Run(cfg, 200 + sh, _schedule(plan), group_words=group_words).run()
    x = [p for p in r.pops if p[1:3] == (9, 3)]
    assert x == [(176 + sh, 9, 3, 176 + sh)], x
    assert len(r.pops) == 65


@pytest.mark.parametrize("cfg", [CFG, CFG_L5, CFG_L6], ids=["L4", "L5", "L6"])
def test_word_first_written_by_the_decision_before_the_search(cfg):
    """An empty word (times 96..111) gets its first entry P (deadline 100) from the decision
    of the cycle before the search of R (deadline 100 too); the decisions in between are in
    another word (Q, deadline 150), so no later forwarding carries P's bit: the word's ``nz``
    flag, sampled by R's search, must include P although the flags take it a cycle late.
    R lands at 101."""
    c = 40
    plan = {c: (1, 0, 100), c + 1: (2, 0, 150), c + min(cfg.insert_latency, 5) - 2: (3, 0, 100)}
    r = Run(cfg, 170, _schedule(plan)).run()
    assert r.pops == [(100, 1, 0, 100), (101, 3, 0, 101), (150, 2, 0, 150)], r.pops


@pytest.mark.parametrize("cfg", [CFG, CFG_L5, CFG_L6], ids=["L4", "L5", "L6"])
def test_leave_clears_the_word_of_the_decision_before(cfg):
    """A late entry (deadline 0, accepted at 15 - L: target 15, the last slot of word 0, the
    wheel empty) is decided one cycle before the cursor pops it and leaves the word: the
    flags take the decision and the leave's clear at the same edge, and the clear must win
    (the word is empty; its RAM copy still holds the popped bit).  One pop at 15, none when
    the cursor passes word 0 again a revolution later (time 256 + 15)."""
    plan = {15 - cfg.insert_latency: (5, 1, 0)}
    r = Run(cfg, 300, _schedule(plan)).run()
    assert r.pops == [(15, 5, 1, 15)], r.pops


@pytest.mark.parametrize("group_words", [None, 8])
def test_search_right_after_a_leave_sees_the_word_free(group_words):
    """CFG4 (4-slot words, 64 slots): the consumer stalls for 70 cycles while 64 late
    entries arrive (one per cycle from cycle 0, deadline ``now``); the first pops (slot 4)
    before the stall holds the output, the other 63 fill every other slot of the window.
    Then, from the cursor's first leave after the release (cycle 72), 16 late entries, one
    per cycle: the only free slots in the window are those of the words the cursor has left
    (each the window's last word, a revolution later), so they take slots 4, 5, ..., 19 in
    insert order.  The entries accepted as the cursor leaves the full words 2, 3, 4 (cycles
    76, 80, 84) are searched in the next cycle, the first in which the left word's flags are
    clear (the group lists are encoded a cycle ahead: the leave's clear enters them as the
    last multiplexer): a search that missed it has no candidate in the room and drops the
    entry.  With 8 words per group (two groups) the targets of those entries (words 4, 5, 6:
    times 80, 84, 88) are in the left word's own group, so the left word is found by the
    search of the target's group, whose flags the insert stage registered a cycle early
    (before the leave): the leave's clear must enter them there too."""
    plan = {c: (1, 0, c) for c in range(64)}
    plan.update({72 + i: (2, 1, 72 + i) for i in range(16)})
    r = Run(CFG4, 180, _schedule(plan), ready=lambda cyc: cyc >= 70,
            group_words=group_words).run()
    assert [p[3] for p in r.pops if p[1] == 2] == list(range(4, 20)), r.pops
    assert len(r.pops) == 80


@pytest.mark.parametrize("group_words,gap", [(None, False), (8, False), (None, True)],
                         ids=["K4", "K8", "K4-gap"])
def test_search_right_after_a_leave_l6(group_words, gap):
    """The same at insert latency 6 (CFG4_L6: the cursor looks 2 ahead, 3-entry pop
    buffer), where the search's view takes the cursor's leave a cycle late (the flags and
    the group lists are registered without it; the search applies it from registers).
    The consumer stalls until cycle 72; 66 late entries (cycle c, deadline c) arrive from
    cycle 0: entry c takes time c + 6 (while the cursor keeps up, and, once it lags, from
    the park point 8 + 3 + 16 = 27 on, one after the other), so times 6 ... 71 are taken;
    the cursor issues 6, 7, 8 into the pipeline and buffer and stops in word 2 (times
    8 ... 11): its window 8 ... 71 is full.  From the release the cursor pops one per cycle
    and leaves word 2 + j at cycle 75 + 4j (the issue of its last time, 11 + 4j), which
    frees times 72 + 4j ... 75 + 4j, the window's last word.  16 late entries, one per
    cycle from 75: each is parked (target 27 + 4j < its time) and the only free times in
    its room are those freed, so the i-th takes time 72 + i (slot 8 + i) in insert order;
    the entries accepted at 75, 79, 83, 87 are searched in the cycle right after the leave
    that freed their word.  With 4 words per group their targets (words 6 ... 9) are in
    another group than the left words 2 ... 5: found only in the left word's group list,
    corrected by the delayed leave; with 8 words per group words 2 and 3 are in the targets'
    own group (its registered flags, corrected the same way).  ``gap``: without the entries
    of cycles 14 ... 17 (times 20 ... 23: word 5 stays empty, the parked entries still fill
    from 27 on), so the cursor leaves word 4 at 83 and the empty word 5 at once at 84; the
    entry of 84 (parked at word 9) must take time 81 in word 4, left the cycle before: the
    cursor's group's second encoding at 84 (selected at 85 as the cursor left word 5) must
    have the clear of word 4 that the flags take only at the next edge.  The same slots."""
    plan = {c: (1, 0, c) for c in range(66) if not (gap and 14 <= c <= 17)}
    # the late entries with distinct flows (gen 1): which one took which slot is visible
    plan.update({75 + i: (i, 1, 75 + i) for i in range(16)})
    r = Run(CFG4_L6, 170, _schedule(plan), ready=lambda cyc: cyc >= 72,
            group_words=group_words).run()
    first = [t % 64 for t in range(6, 72) if not (gap and 20 <= t <= 23)]
    assert [p[3] for p in r.pops if p[2] == 0] == first, r.pops
    assert [(p[1], p[3]) for p in r.pops if p[2] == 1] == [(i, 8 + i) for i in range(16)], \
        r.pops
    assert len(r.pops) == len(first) + 16


# -- random long run ----------------------------------------------------------------------------

# ``cycles``: the default run; CC_LONG=1 runs 100_000 // div.  The decision-count and load checks
# below hold for every seed only when a 16-bit-word run (time wraps every 1024 cycles, regimes of
# 256) has about 5,000 cycles (measured on the model over 400 seeds: at 2,500 cycles about 3 %
# of seeds fail ``decisions > cycles // 4``, at 4,000 about 0.5 %, at 5,000 none), so every B16
# run has 5,000; the 4-bit-word runs (wraps every 256 cycles, regimes of 64, about 40 regimes in
# 2,500 cycles) have 2,500, but for the pop buffer's (B4-L6: the run that caught planted bugs).
@pytest.mark.parametrize("cfg,group_words,div,cycles", [
    (CFG, None, 2, 5_000), (CFG4, None, 4, 2_500),
    # other summary structures (behaviour unchanged): one word per group (the group summary
    # is the whole search), two words per group, one group (no second level)
    (CFG, 1, 5, 5_000), (CFG, 2, 4, 5_000), (CFG, 16, 8, 5_000), (CFG4, 2, 4, 2_500),
    # with the read stage (three candidates; the summary structures that stress them)
    (CFG_L5, None, 4, 5_000), (CFG4_L5, None, 4, 2_500), (CFG_L5, 2, 4, 5_000),
    (CFG4_L5, 2, 4, 2_500),
    # with the pop buffer (back-pressure reaches the cursor a cycle later, through the buffer;
    # the 16-bit-word run under CC_LONG for the suite's time)
    (CFG4_L6, None, 4, 5_000)] + ([(CFG_L6, None, 2, 0)] if os.environ.get("CC_LONG") == "1"
                                  else []),
    ids=["B16", "B4", "B16-K1", "B16-K2", "B16-K16", "B4-K2", "B16-L5", "B4-L5", "B16-K2-L5",
         "B4-K2-L5", "B4-L6"] + (["B16-L6"] if os.environ.get("CC_LONG") == "1" else []))
def test_random_long_run(cfg, group_words, div, cycles):
    L = cfg.latency
    seed = random_seed()
    rng = random.Random(seed)
    if os.environ.get("CC_LONG") == "1":
        cycles = 100_000 // div
    mask = (1 << cfg.time_width) - 1
    H = cfg.horizon
    state = {"burst": None, "p_ins": 0.5, "p_rdy": 0.9}
    regime = 1 << (cfg.time_width - 2)

    drain = cfg.slots + cfg.horizon + cfg.max_entries      # quiet tail: everything pops

    def src(cyc, now, run):
        if cyc >= cycles - drain:
            return None
        if cyc % regime == 0:      # change the regime (short enough not to alias the lag)
            state["p_ins"] = rng.choice([0.1, 0.5, 0.9, 1.0])
            state["p_rdy"] = rng.choice([0.0, 0.3, 0.9, 1.0])
        if run.outstanding >= cfg.max_entries or rng.random() > state["p_ins"]:
            return None
        k = rng.random()
        if state["burst"] is not None and state["burst"][1] > 0:
            dl, n = state["burst"]
            state["burst"] = (dl, n - 1)
        elif k < 0.05:
            state["burst"] = ((now + rng.randrange(L, H)) & mask, rng.randrange(4, 40))
            dl = state["burst"][0]
        elif k < 0.15:
            dl = now + H + rng.randrange(0, 60)          # parked
        elif k < 0.25:
            dl = now + rng.randrange(-3, L + 2)           # late / in the cursor's word
        else:
            dl = now + rng.randrange(L, H)
        return (rng.randrange(1 << cfg.flow_bits), rng.randrange(1 << cfg.gen_bits), dl & mask)

    def ready(cyc):
        # the consumer may stall, but not so long that the cursor's lag nears 2**W - B
        return (rng.random() < state["p_rdy"] or r.model.lag(cyc & mask) > regime
                or cyc >= cycles - drain)

    r = Run(cfg, cycles, src, ready=ready, group_words=group_words)
    r.run()
    assert len(r.decisions) > cycles // 4
    _check_pops_against_decisions(cfg, r)
    assert r.model.max_occ > cfg.max_entries // 2        # the wheel was loaded
    print(f"decisions {len(r.decisions)} max occupancy {r.model.max_occ} "
          f"max displacement {r.model.max_disp}")


# -- pure model: slot choice against a brute-force reference -------------------------------------

@pytest.mark.parametrize("cfg", [CFG, CFG4, TimerWheelConfig(slots=4096, horizon=2048,
                                                                max_entries=2000, word_bits=32,
                                                                time_width=14, flow_bits=4)],
                         ids=["B16", "B4", "S4096"])
def test_model_slot_choice_property(cfg):
    """The model's decisions against a sorted list of the absolute times of the entries in
    the wheel: the slot is the first time >= target not in the list; pops leave in time
    order, each at or after its slot time, and each pops once."""
    seed = random_seed()
    rng = random.Random(seed)
    m = TimerWheelModel(cfg)
    W, mask, H = cfg.time_width, (1 << cfg.time_width) - 1, cfg.horizon
    now_abs = 0
    occupied: list[int] = []          # absolute times (unwrapped) of entries in the wheel
    wbt_abs = 0                       # the model's cursor, unwrapped
    outstanding = 0
    last_pop = -1
    p_rdy = 0.9
    for cyc in range(30_000):
        now = now_abs & mask
        if cyc % (1 << (W - 2)) == 0:
            p_rdy = rng.choice([0.0, 0.5, 1.0])
        ins = None
        if outstanding < cfg.max_entries and rng.random() < 0.7:
            kind = rng.random()
            delta = (rng.randrange(0, 6) if kind < 0.3 else rng.randrange(0, H + 100))
            ins = (rng.randrange(16), rng.randrange(4), (now + delta) & mask)
            outstanding += 1
        rdy = rng.random() < p_rdy or m.lag(now) > (1 << (W - 2))
        wbt_pre, abs_pre = m.wbt, wbt_abs
        out = m.step(now, ins, rdy)
        if m.wbt != wbt_pre:
            wbt_abs += cfg.word_bits
        if out.pop_valid and rdy:
            # unwrapped time of the popped slot: the occupied time with this slot index
            t = next(t for t in occupied if t % cfg.slots == out.pop_slot)
            assert t == occupied[0], "not the earliest entry"
            assert t <= now_abs and t >= last_pop
            last_pop = t
            occupied.remove(t)
            outstanding -= 1
        dec = m.last_decision
        if dec is not None:
            flow, gen, tgt, slot, d = dec
            assert slot is not None
            # unwrap the target: at or after the cursor, within the window
            base = abs_pre + ((tgt - wbt_pre) & mask)
            assert base - abs_pre < cfg.slots
            want = base
            i = bisect.bisect_left(occupied, want)
            while i < len(occupied) and occupied[i] == want:
                want += 1
                i += 1
            assert (want - base, want % cfg.slots) == (d, slot), (cyc, tgt, want, d, slot)
            bisect.insort(occupied, want)
        now_abs += 1
    assert not m.overflow


# -- overflow counter saturation --------------------------------------------------------------

def test_overflow_count_saturates_at_its_maximum():
    """The overflow statistics beyond the capacity rule (which a user breaks here on purpose):
    with ``pop.ready`` held low, the 32-slot wheel takes 32 entries (31 in the wheel, one held
    in the output register) and every later insert overflows, one per cycle.  Insert i is
    decided two cycles after it is accepted and counted two cycles after that, so in cycle c
    the counter reads c - 35 (an independent count).  Reaching 2**16 - 1 that way takes 65k
    cycles, so once a few overflows are counted the test presets the 16-bit counter 8 below
    its maximum (the RTL's register set by the simulator, the model's attribute): it must
    reach 2**16 - 1 and stay there for the next 40 overflows, not wrap to 0.  Every output
    is compared with the model every cycle."""
    from sim.models.timer_wheel import OVF_COUNT_MAX

    cfg = TimerWheelConfig(slots=32, horizon=16, max_entries=12, flow_bits=2, gen_bits=1,
                           time_width=10, word_bits=4)
    S = cfg.slots
    first = S + L                            # the first cycle the counter reads 1
    preset_at, preset = first + 10, OVF_COUNT_MAX - 8
    cycles = preset_at + 48
    assert OVF_COUNT_MAX == (1 << 16) - 1
    dut = TimerWheel(cfg)
    model = TimerWheelModel(cfg)
    names = ["pop_valid", "occupancy", "max_occupancy", "max_displacement", "overflow",
             "overflow_count"]
    seen = []

    async def bench(ctx):
        for cyc in range(cycles):
            ins = (cyc & 3, cyc & 1, cyc + L)
            if cyc == preset_at:
                assert ctx.get(dut.overflow_count) == model.ovf_count == preset_at - first + 1
                ctx.set(dut.overflow_count, preset)
                model.ovf_count = preset
            ctx.set(dut.now, cyc)
            ctx.set(dut.ins.valid, 1)
            ctx.set(dut.ins.payload, {"flow": ins[0], "gen": ins[1], "deadline": ins[2]})
            ctx.set(dut.pop.ready, 0)
            exp = model.step(cyc, ins, False)
            got = {n: ctx.get(dut.pop.valid if n == "pop_valid" else getattr(dut, n))
                   for n in names}
            assert got == {n: getattr(exp, n) for n in names}, (cyc, got, exp)
            seen.append(got["overflow_count"])
            await ctx.tick()

    run_testbenches(dut, bench)
    # independent expectation: one overflow a cycle from `first` on, the preset, saturation
    want = [max(0, c - first + 1) if c < preset_at else min(preset + c - preset_at,
                                                            OVF_COUNT_MAX)
            for c in range(cycles)]
    assert seen == want
    assert seen[preset_at + 8:] == [OVF_COUNT_MAX] * 40          # held at the maximum
    assert model.overflow and model.occ == S - 1
