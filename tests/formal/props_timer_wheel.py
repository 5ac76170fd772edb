"""Formal properties of the timer service on its own (:mod:`hw.nic.timer_wheel`): the pop
contract the multi-flow engine relies on, checked (BMC) on a tiny wheel.

The contract (the docstring of :mod:`sim.models.timer_wheel`, "Latencies"): with ``pop.ready``
held high (the engine takes every pop in the cycle it is offered: ``flow_engine.pops``), an
entry accepted on ``ins`` in the cycle where ``now == n`` with deadline ``n + off`` is placed at
its target ``T = n + min(max(off, L), H)`` (``L`` the insert latency, ``H`` the horizon: a
deadline past it is parked there, so it pops early) or at most ``E - 1`` slots later (the slots
it skips hold other entries, at most ``E - 1`` of them with ``E`` entries in the wheel), and
pops (``pop.valid``) exactly when ``now`` reaches its slot.  So:

* **lateness**: it pops no later than ``now == n + max(off, L) + E - 1`` (``E - 1`` cycles after
  ``max(deadline, n + L)``), and not before ``n + min(max(off, L), H)``;
* **no entry lost or duplicated**: it pops exactly once; no pop comes that no insert explains.

The harness follows one entry, chosen by the solver (``pick``, any insert, at any time, whose
``{flow, gen}`` is a tag no entry in the wheel carries, and no later insert carries until it has
popped), against a count of the entries in the wheel (inserts minus pops taken), which the
harness keeps below ``E`` by withholding inserts (the user's side of the capacity rule: the
engine has at most ``wheel_entries_per_flow`` per flow).  Since the entry is any insert, the
claims hold for every entry.  The wheel's ports only: no internal signal is named, so the
property holds for any re-timing of the wheel that keeps the port contract.

Configuration (the smallest :class:`TimerWheelConfig` allows): 4-bit bitmap words, 32 slots
(8 words, so the two-level summary has 2 groups of 4 words), horizon 16, ``E`` = 2 entries,
2-bit flows and 1-bit generations (8 tags), 7-bit time, the engine's insert latency (4), no
reset after the initial state.  Deadlines from 1 cycle in the past to 6 ahead: a past one and
a near one pop at ``n + L``, the others at their deadline or one slot later (a collision).

The bound is what the solver manages: the first form (4 entries, deadlines -16 .. 47, BMC 22,
parking and the wrap of the wheel within reach) spent 1.5 minutes on step 11, 5 on step 12 and
did not finish in 10 minutes.  So this one checks the inserts of the first steps after reset
to their pops (``DEPTH``); parking, the horizon, the cursor's catch-up over a wrap and a full
wheel of more than two entries are left to the simulation tests (``tests/test_timer_wheel.py``).

Seeded bugs (``_harness(seeded_bug)``, each fails in seconds): ``"slow"`` a wheel built with
insert latency ``L + 1`` against the contract for ``L``; ``"tight"`` the late bound one cycle
tighter; ``"early"`` the early bound one cycle later (so both bounds are met exactly).
"""

from __future__ import annotations

from dataclasses import replace

from amaranth.hdl import Assert, Assume, Cover, Module, Mux, ResetSignal, Signal
from amaranth.hdl._ast import AnyConst, AnySeq

from hw.nic.timer_wheel import TimerWheel
from hw.nic.timer_wheel_config import INSERT_LATENCY, TimerWheelConfig

from .runner import Property

__all__ = ["PROPERTIES", "WHEEL", "ENTRIES"]

#: at most this many entries in the wheel at once
ENTRIES = 2
WHEEL = TimerWheelConfig(slots=32, horizon=16, max_entries=ENTRIES, flow_bits=2, gen_bits=1,
                         time_width=7, word_bits=4, insert_latency=INSERT_LATENCY)
#: deadline offsets: ``off = raw - OFF_BIAS`` for a ``OFF_BITS``-bit ``raw``: -1 .. 6.  An
#: offset of L + 2 lets an entry inserted a cycle earlier take the slot after the target of
#: a near one, so a wheel one stage slower than the contract (seeded bug "slow") fails; with
#: offsets up to L + 1 only, it passed
OFF_BITS = 3
OFF_BIAS = 1
#: the bound: an entry accepted at step s pops by step s + 6 + E - 1 = s + 7 (the largest
#: offset, two entries with one deadline: the second one slot late), so BMC 16 follows every
#: insert of steps 1 to 8 to its pop, while ``now`` crosses 4 bitmap words and into the second
#: group (slot 16).  Solver time (check and cover, one core, offsets -2 .. 5): BMC 10 4 s,
#: 14 4 s, 16 7 s, 20 36 s; -1 .. 6 at 16: 15 s.  Offsets -2 .. 13 at BMC 16 did not finish
#: in 140 s of CPU, -2 .. 29 (parking) at 20 in 100 s.
DEPTH = 16
#: the tracked entry's age saturates here (above every bound)
AGE_MAX = 64 + ENTRIES
#: the RAMs as flip-flops for the solver
SCRIPT = ("prep -top top", "flatten", "memory_map", "opt_clean")


def _harness(seeded_bug: str = "") -> Module:
    cfg = WHEEL
    L, H, W = cfg.insert_latency, cfg.horizon, cfg.time_width
    m = Module()
    # seeded bug "slow": a wheel one stage slower than the contract the harness checks
    m.submodules.dut = w = TimerWheel(cfg if seeded_bug != "slow"
                                      else replace(cfg, insert_latency=L + 1))
    m.d.comb += Assume(~ResetSignal())

    now = Signal(W)
    m.d.sync += now.eq(now + 1)
    m.d.comb += w.now.eq(now)

    # inputs: any insert, any tag, any deadline offset in range
    valid = AnySeq(1)
    flow = AnySeq(cfg.flow_bits)
    gen = AnySeq(cfg.gen_bits)
    raw = AnySeq(OFF_BITS)
    off = Signal(range(-OFF_BIAS, (1 << OFF_BITS) - OFF_BIAS))
    m.d.comb += off.eq(raw - OFF_BIAS)
    m.d.comb += [w.ins.valid.eq(valid), w.ins.p.flow.eq(flow), w.ins.p.gen.eq(gen),
                 w.ins.p.deadline.eq(now + off), w.pop.ready.eq(1)]

    # the entries in the wheel, by the ports: inserts minus pops taken
    inflight = Signal(range(ENTRIES + 2))
    popped = w.pop.valid & w.pop.ready
    m.d.sync += inflight.eq(inflight + valid - popped)
    m.d.comb += Assume(~valid | (inflight < ENTRIES))
    m.d.comb += Assert(inflight <= ENTRIES)

    # the tracked entry: its tag, the entries with that tag before it, when it was accepted
    tag_flow = AnyConst(cfg.flow_bits)
    tag_gen = AnyConst(cfg.gen_bits)
    pick = AnySeq(1)
    ins_tag = valid & (flow == tag_flow) & (gen == tag_gen)
    pop_tag = w.pop.valid & (w.pop.p.flow == tag_flow) & (w.pop.p.gen == tag_gen)
    tag_cnt = Signal(range(ENTRIES + 2))     # untracked entries with the tag in the wheel
    armed = Signal()                         # the tracked entry is in the wheel
    done = Signal()                          # ... and has popped
    age = Signal(range(AGE_MAX + 1))         # cycles since its insert (saturating)
    t_off = Signal(range(-OFF_BIAS, (1 << OFF_BITS) - OFF_BIAS))
    start = ins_tag & pick & ~armed & ~done & (tag_cnt == 0)
    # its tag is unique from the pick on
    m.d.comb += Assume(~(ins_tag & (armed | done)))
    with m.If(start):
        m.d.sync += [armed.eq(1), age.eq(1), t_off.eq(off)]
    with m.Elif(armed):
        m.d.sync += age.eq(Mux(age == AGE_MAX, age, age + 1))
    with m.If(armed & pop_tag):
        m.d.sync += [armed.eq(0), done.eq(1)]
    m.d.sync += tag_cnt.eq(tag_cnt + (ins_tag & ~start) - (pop_tag & ~armed))

    # the bounds: target = max(off, L), parked at H; placed at most E - 1 slots after it
    target = Signal(range(64))
    m.d.comb += target.eq(Mux(t_off > L, t_off, L))
    earliest = Signal(range(64))
    m.d.comb += earliest.eq(Mux(target > H, H, target) + (seeded_bug == "early"))
    slack = ENTRIES - 1 if seeded_bug != "tight" else ENTRIES - 2
    m.d.comb += [
        # not lost, not late: still in the wheel only while younger than the bound
        Assert(~armed | (age <= target + slack)),
        # not early: its pop comes no sooner than its (parked) target
        Assert(~(armed & pop_tag) | (age >= earliest)),
        # no duplicate, no phantom: a pop with the tag is the tracked one or an untracked one
        Assert(~pop_tag | armed | (tag_cnt != 0)),
        Assert(~(done & (tag_cnt != 0))),
        Assert(~w.overflow),
    ]

    # covers: a tracked pop at its deadline; a late one (displaced by E - 1); a past
    # deadline; the wheel full
    m.d.comb += [
        Cover(armed & pop_tag & (age == target) & (t_off > L) & (t_off <= H)),
        Cover(armed & pop_tag & (age == target + ENTRIES - 1)),
        Cover(armed & pop_tag & (t_off < 0)),
        Cover(inflight == ENTRIES),
    ]
    if (1 << OFF_BITS) - 1 - OFF_BIAS > H:       # deadlines past the horizon: one parked
        m.d.comb += Cover(armed & pop_tag & (t_off > H))
    return m


PROPERTIES = [
    Property("timer_wheel.pop_contract",
             "tiny wheel (32 slots, 4-bit words, horizon 16, 2 entries, deadlines -1 .. 6), "
             "pop.ready high: every entry pops once, by max(deadline, n + L) + 1, not before "
             "max(deadline, n + L); no pop without an insert",
             _harness, mode="bmc", depth=DEPTH, cover_depth=DEPTH, timeout=600,
             extra_script=SCRIPT),
]
