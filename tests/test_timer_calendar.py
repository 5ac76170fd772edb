"""Calendar timer service: RTL (:class:`hw.nic.timer_calendar.TimerCalendar`) against the
cycle-accurate model (:class:`sim.models.timer_calendar.TimerCalendarModel`) on every output
every cycle, and directed runs whose pop times are derived by hand from the documented rules
(docs/flow-engine.md, "The calendar (per-slot lists)"), not computed by either.

CC_SEED reproduces a random run (the seed is printed); CC_LONG=1 runs >= 10**5 random cycles."""

from __future__ import annotations

import os
import random

import pytest

from hw.nic.timer_calendar import TimerCalendar
from hw.nic.timer_calendar_config import INSERT_LATENCY, TimerCalendarConfig
from hw.params import ConfigError
from sim.models.timer_calendar import TimerCalendarModel
from tests.timer_harness import drive, random_seed

IL = INSERT_LATENCY
LONG = bool(os.environ.get("CC_LONG"))

# 8 words of 32 slots, time wraps every 2048 cycles
CFG = TimerCalendarConfig(slots=256, horizon=160, flow_bits=4, gen_bits=2, time_width=11,
                          word_bits=32)
# 8-bit words, 8 words: many word crossings, the ring wraps every 64 cycles, time every 1024
# (the cursor's lag must stay below 2**(W-1): see Source)
CFG8 = TimerCalendarConfig(slots=64, horizon=40, flow_bits=3, gen_bits=2, time_width=10,
                           word_bits=8)
NAMES = ["occupancy", "max_occupancy", "max_lateness"]


class Run:
    """Drive the DUT and the model with the same inputs; compare every output every cycle.
    ``source(cyc, now, run)`` returns None or (flow, gen, deadline); ``ready(cyc)`` the pop
    ready.  ``pops``: (cycle, flow, gen, slot) of every pop taken."""

    def __init__(self, cfg, cycles, source, ready=lambda cyc: True, sim=True):
        self.cfg, self.cycles, self.source, self.ready = cfg, cycles, source, ready
        self.model = TimerCalendarModel(cfg)
        self.pops: list[tuple[int, int, int, int]] = []
        self.sim = sim

    def _step(self, cyc, now):
        ins = self.source(cyc, now, self)
        rdy = bool(self.ready(cyc))
        exp = self.model.step(now, ins, rdy)
        if exp.pop_valid and rdy:
            self.pops.append((cyc, exp.pop_flow, exp.pop_gen, exp.pop_slot))
        return ins, rdy, exp

    def run(self):
        cfg = self.cfg
        if self.sim:
            drive(TimerCalendar(cfg), self.cycles, cfg.time_width, self._step, NAMES)
        else:
            mask = (1 << cfg.time_width) - 1
            for cyc in range(self.cycles):
                self._step(cyc, cyc & mask)
        return self


def _schedule(plan):
    """A source from {cycle: (flow, gen, deadline)}."""
    return lambda cyc, now, run: plan.get(cyc)


class Source:
    """Random inserts of free ids (an id comes back when its pop is taken: the user's
    guarantee).  ``mode``: "spread" (deadlines from the past to beyond the horizon: late
    inserts, parking), "hot" (a few slot times shared by many entries: long lists)."""

    def __init__(self, cfg, rng, rate, mode):
        self.cfg, self.rng, self.rate, self.mode = cfg, rng, rate, mode
        self.free = set(range(1 << cfg.id_bits))
        self.seen = 0
        self.hot = []

    def __call__(self, cyc, now, run):
        cfg, rng = self.cfg, self.rng
        while self.seen < len(run.pops):
            _, f, g, _ = run.pops[self.seen]
            self.seen += 1
            self.free.add((g << cfg.flow_bits) | f)
        # the contract: the cursor's lag stays below 2**(W-1) (a deadline's wrap-safe compare
        # aliases beyond); a user that keeps the calendar overloaded breaks it sooner or
        # later, so this one stops inserting while the lag exceeds 2**(W-2)
        if run.model.lag(now) > 1 << (cfg.time_width - 2):
            return None
        if not self.free or rng.random() >= self.rate:
            return None
        e = rng.choice(sorted(self.free))
        self.free.discard(e)
        if self.mode == "hot":
            if not self.hot or rng.random() < 0.05:
                self.hot = [cyc + rng.randrange(IL, 3 * IL + 40) for _ in range(3)]
            dl = rng.choice(self.hot)
        else:
            dl = now + rng.randrange(-20, cfg.horizon + 3 * cfg.word_bits)
        return e & ((1 << cfg.flow_bits) - 1), e >> cfg.flow_bits, dl


def _ready(rng, pattern):
    """Back-pressure: "high", "random" (70 %), "bursts" (long low stretches: the head queue
    fills and the cursor lags by more than a word, then catches up)."""
    if pattern == "high":
        return lambda cyc: True
    if pattern == "random":
        return lambda cyc: rng.random() < 0.7
    state = {"low_until": -1}

    def ready(cyc):
        if cyc > state["low_until"] and rng.random() < 0.004:
            state["low_until"] = cyc + rng.randrange(50, 250)
        return cyc > state["low_until"]
    return ready


# -- configuration ------------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [
    {"slots": 100}, {"word_bits": 24}, {"word_bits": 4}, {"slots": 128, "word_bits": 32},
    {"horizon": 64}, {"horizon": 159, "word_bits": 32}, {"horizon": 65536 - 63},
    {"time_width": 17}, {"flow_bits": 0}, {"gen_bits": 5}, {"slots": True},
])
def test_config_rejects(kw):
    with pytest.raises(ConfigError) as e:
        TimerCalendarConfig(**kw)
    assert "TimerCalendarConfig." in str(e.value)


def test_config_defaults_roundtrip():
    c = TimerCalendarConfig()
    assert (c.slots, c.horizon, c.id_bits, c.n_words, c.insert_latency) == (
        65536, 32768, 14, 2048, 10)
    assert TimerCalendarConfig.from_json(CFG.to_json()) == CFG


# -- directed runs: pop times derived by hand from the rules -----------------------------------

def test_consecutive_slots_pop_at_their_deadlines():
    # one entry per slot, slots 40 ... 49: each pops exactly at its deadline, one per cycle
    plan = {i: (i, 0, 40 + i) for i in range(10)}
    r = Run(CFG, 70, _schedule(plan)).run()
    assert r.pops == [(40 + i, i, 0, 40 + i) for i in range(10)]
    assert r.model.max_lat == 0


def test_three_entries_in_one_slot_pop_lifo():
    # flows 1, 2, 3 into slot 50: LIFO, 3 cycles apart (the registered link address and the
    # read's latency 2): 3 at 50, 2 at 53, 1 at 56; flow 4 at slot 51 waits for the list: 57
    plan = {0: (1, 0, 50), 1: (2, 1, 50), 2: (3, 2, 50), 3: (4, 0, 51)}
    r = Run(CFG, 70, _schedule(plan)).run()
    assert r.pops == [(50, 3, 2, 50), (53, 2, 1, 50), (56, 1, 0, 50), (57, 4, 0, 51)]
    # lateness 6 (flow 1: 56 - 50, flow 4: 57 - 51)
    assert r.model.max_lat == 6


def test_deadline_in_the_past_pops_at_n_plus_il():
    # IL = 10 (5 cycles until the cursor sees the insert + the look-ahead 5): at n = 10, 11,
    # 12 deadlines 3 (past), 11 (now) and 19 (< n + IL) pop at 20, 21, 22; at n = 30 a
    # deadline one cycle before n + IL (39) pops at n + IL = 40
    assert IL == 10
    plan = {10: (1, 0, 3), 11: (2, 0, 11), 12: (3, 0, 19), 30: (4, 1, 39)}
    r = Run(CFG, 60, _schedule(plan)).run()
    assert r.pops == [(20, 1, 0, 20), (21, 2, 0, 21), (22, 3, 0, 22), (40, 4, 1, 40)]


def test_parking():
    # a deadline beyond now + H is parked at now + H (H = 160): pops at 5 + 160 = 165, its
    # slot 165 mod 256
    plan = {5: (1, 0, 5 + 160 + 50), 6: (2, 0, 6 + 120)}
    r = Run(CFG, 180, _schedule(plan)).run()
    assert r.pops == [(126, 2, 0, 126), (165, 1, 0, 165)]


def test_pop_held_by_ready_low():
    # due at 30, ready low from 28 to 34: valid from 30, the payload held, taken at 35; the
    # next (due 31) follows at 36
    plan = {0: (1, 0, 30), 1: (2, 0, 31)}
    r = Run(CFG, 50, _schedule(plan), ready=lambda cyc: not 28 <= cyc <= 34).run()
    assert r.pops == [(35, 1, 0, 30), (36, 2, 0, 31)]


def test_slot_ring_and_time_wrap():
    # CFG8: 64 slots, time wraps at 1024: one insert every 5 cycles, deadline 30 ahead, over
    # 1100 cycles: every pop exactly 30 cycles after its insert
    plan = {c: (c // 5 % 8, c // 40 % 4, (c + 30) & 1023) for c in range(0, 1060, 5)}
    r = Run(CFG8, 1100, _schedule(plan)).run()
    assert [p[0] for p in r.pops] == [c + 30 for c in range(0, 1060, 5)]
    assert all(s == (c % 64) for c, _, _, s in r.pops)


# -- random runs: RTL == model every cycle ------------------------------------------------------

@pytest.mark.parametrize("cfg,mode,pattern,cycles", [
    (CFG, "spread", "random", 2500),
    (CFG8, "hot", "high", 2000),
    (CFG8, "spread", "bursts", 3000),
    (CFG, "hot", "bursts", 2500),
], ids=["spread-random", "hot-high", "spread8-bursts", "hot-bursts"])
def test_random_rtl_equals_model(cfg, mode, pattern, cycles):
    seed = random_seed()
    rng = random.Random(seed)
    if LONG:
        cycles = 100_000
    src = Source(cfg, rng, rate=0.45, mode=mode)
    r = Run(cfg, cycles, src, ready=_ready(rng, pattern)).run()
    assert len(r.pops) > cycles // 10


def test_model_properties_long():
    """The model alone (fast) over many cycles, against the rules: every entry pops with the
    target the insert rule gave it, never before its time, and in slot-time order."""
    seed = random_seed()
    rng = random.Random(seed)
    cycles = 200_000 if LONG else 20_000
    for cfg, mode in ((CFG8, "hot"), (CFG, "spread")):
        src = Source(cfg, rng, rate=0.3, mode=mode)
        r = Run(cfg, cycles, src, ready=_ready(rng, "random"), sim=False).run()
        m = r.model
        mask, half = (1 << cfg.time_width) - 1, 1 << (cfg.time_width - 1)
        ins = {}
        for ev in m.events:
            if ev[0] == "ins":
                ins.setdefault((ev[2], ev[3]), []).append(ev[4])
        pushes = [ev for ev in m.events if ev[0] == "push"]
        prev = None
        for _, cyc, f, g, t in pushes:
            assert t == ins[(f, g)].pop(0)
            # never before its time: pushed at cycle k, on pop from k + 1
            assert ((cyc + 1 - t) & mask) < half, (cyc, t)
            if prev is not None:
                assert ((t - prev) & mask) < half, (cyc, prev, t)     # slot order
            prev = t
        assert len(pushes) > cycles // 10
