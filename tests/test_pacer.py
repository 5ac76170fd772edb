"""The multi-flow pacer (hw/nic/pacer.py) inside the multi-flow engine.

- A Python-only run of the cycle-accurate MODEL (sim/models/pacer.py in FlowEngineModel) for
  >= 1.7 x 10^5 grants (10^6 with ``CC_LONG=1``) against the exact rational schedule
  (``fractions.Fraction``): every grant of lateness 0 is at ``ceil(t0 + k x I)``, every other
  one is late by exactly what the engine's counters say, and lateness does not accumulate (no
  drift).
- Amaranth simulation, RTL against the model every output every cycle (the engine's
  ``Harness``), with expected values derived by hand: all flows due in one slot, a rate change
  while queued, the slowest and fastest intervals, the wheel wrap, back-pressure on the grant
  stream, random traffic with hot flows; the burst cap (grant times derived by hand for
  burst 0, 30, 5 and the maximum); byte mode (a directed run with hand-derived grant times,
  random traffic mixing byte and packet flows with size reports and burst rewrites); the
  work-conserving mode (pulls: directed runs with hand-derived grant times in packet and byte
  mode, and pulls with ``wc`` toggled in both random runs).  Byte-mode tests build a byte-mode
  pacer (``PacerConfig.byte_mode``, datapath latency 3; the random run the tops' build, the
  three-cycle update after the product's two, latency 5), the others a packet-only one: the
  three-cycle update (``update_cycles`` 3, latency 3, the ``pacer_1k`` top's build) where they
  say ``small(cycles=3)``, else the one-cycle default (the two-cycle update: the corner test).
- Byte mode, model only: >= 10^5 grants (10^6 with ``CC_PACER_LONG=1`` or ``CC_LONG=1``)
  against the exact Fraction schedule of the sizes reported, no drift.

``CC_PACER_LONG=1``: 4 x the model grants and longer RTL runs.
"""

from __future__ import annotations

import math
import os
import random
from fractions import Fraction
from itertools import pairwise

import pytest

from hw.nic.flow_datapath import CtlOp
from hw.nic.flow_engine import pipe_depth
from hw.nic.flow_engine_config import FlowEngineConfig
from hw.nic.pacer import PacerDatapath
from hw.nic.pacer_config import PacerConfig
from hw.params import ConfigError
from sim.models.flow_engine import FlowEngineModel
from sim.models.pacer import GrantLog, PacerDatapathModel, ideal_time, ideal_times
from tests.test_flow_engine import SEED, Harness

LONG = os.environ.get("CC_PACER_LONG", "0") == "1"
#: the suite's long-run knob (the 10^6-grant runs)
CC_LONG = os.environ.get("CC_LONG", "0") not in ("", "0")
F = 16
#: state field numbers (ctl WRITE)
GRANTS, BACKLOG, ARMED, NEXT, IVAL, BYTES, WAIT, LAST = range(8)
#: register addresses
REG_IVAL_INIT, REG_BURST, REG_WC, REG_BYTES_INIT = range(4)
#: tx payload: {count (8 bits), size (the rest)}
COUNT_BITS = 8


def report(size: int, count: int = 0) -> int:
    """A tx payload: ``count`` packets enqueued and the size report ``size`` (bytes)."""
    return count | size << COUNT_BITS


def q(x) -> int:
    """An interval in UQ.16 (x a float or an int of cycles), truncated."""
    return int(x * (1 << F))


def biased(t: int) -> int:
    """A deadline written by hand: ideal time ``t`` (integer) in the biased form."""
    return (t << F) | ((1 << F) - 1)


def small(time_width=12, ival_int_bits=10, byte_mode=False, cycles=1, **kw) -> PacerConfig:
    # (the engine's output FIFO needs a place per pipeline stage plus two: its rule, from the
    # datapath latency, 1 ... 3 (the byte mode's 3 ... 5: the product's two cycles more))
    lat = cycles + (2 if byte_mode else 0)
    eng = dict(n_flows=16, time_width=time_width, wheel_horizon=256, wheel_slots=512,
               out_fifo_depth=pipe_depth(lat) + 2)
    eng.update(kw)
    return PacerConfig(engine=FlowEngineConfig(**eng), ival_int_bits=ival_int_bits,
                       frac_bits=F, byte_mode=byte_mode, update_cycles=cycles)


def tiny(cycles=1) -> PacerConfig:
    """W = 10 (the time wraps every 1024 cycles), a 128-cycle horizon, 256 slots."""
    return small(time_width=10, ival_int_bits=8, wheel_horizon=128, wheel_slots=256,
                 cycles=cycles)


def harness(cfg=None, seed=SEED) -> Harness:
    cfg = cfg or small()
    return Harness(cfg.engine, PacerDatapath(cfg), seed=seed, model_dp=PacerDatapathModel)


def grants_of(h: Harness, flow: int) -> list[tuple[int, int]]:
    """(grant cycle, grant number) of a flow, from the rate records taken (rate always ready:
    a record taken at c is the grant issued at c - 5 - latency: the table's four read
    cycles, the update's, the write-back's into the FIFO: c - 6, c - 8 in a byte-mode build
    and in the three-cycle update's)."""
    lat = 5 + h.dp.latency
    return [(c - lat, v) for c, f, v in h.rates if f == flow and v]


# -- configuration ----------------------------------------------------------------------------

def test_ival_init_reset_fits_its_register():
    """The ``ival_init`` register resets to 100 cycles where that fits: UQ24.16 at the defaults
    (a 40-bit interval, a 32-bit register: 100 x 2**16 = 6553600); in a build whose intervals
    are UQ4.16 (20 bits: at most 16 - 2**-16 cycles) 100 cycles does not fit and the reset is
    the register's maximum, 2**20 - 1, not a value that its 20 bits would truncate."""
    for cfg, width, reset in ((PacerConfig(), 32, 100 << 16),
                              (small(ival_int_bits=4), 20, (1 << 20) - 1),
                              (small(ival_int_bits=7), 23, 100 << 16)):
        assert PacerDatapath(cfg).regs[0] == ("ival_init", width, reset)
        reg = cfg.register_map()["IVAL_INIT"]
        assert (reg.fields[0].width, reg.reset) == (width, reset)


def test_config_errors():
    with pytest.raises(ConfigError, match="ival_int_bits"):
        PacerConfig(engine=FlowEngineConfig(time_width=20), ival_int_bits=19)
    with pytest.raises(ConfigError, match="count_width"):
        PacerConfig(backlog_width=8, count_width=9)
    with pytest.raises(ConfigError, match="frac_bits"):
        PacerConfig(frac_bits=0)
    with pytest.raises(ConfigError, match="engine"):
        PacerConfig(engine=None)
    with pytest.raises(ConfigError, match="size_width"):
        PacerConfig(size_width=17)
    with pytest.raises(ConfigError, match="byte_mode"):
        PacerConfig(byte_mode=1)                     # a bool, not an int
    for bad in (0, 4, True, 2.0):
        with pytest.raises(ConfigError, match="update_cycles"):
            PacerConfig(update_cycles=bad)
    # the update's cycles (the datapath latency) and the re-issue distance, by hand: the
    # pipeline (issue, the table's read over three cycles, the update's cycles, write-back)
    # plus the wheel's insert latency 4: 1 + 3 + 1 + 4 = 9, 10 at two cycles, 11 at three (the
    # byte mode's: the product's two cycles, then the update's: 1 + 3 + 3 + 4 = 11, 12 with
    # the two-cycle update: 1 + 3 + 4 + 4, 13 with the three-cycle one: 1 + 3 + 5 + 4)
    for kw, lat, reissue in (({}, 1, 9), ({"update_cycles": 2}, 2, 10),
                             ({"update_cycles": 3}, 3, 11), ({"byte_mode": True}, 3, 11),
                             ({"byte_mode": True, "update_cycles": 2}, 4, 12),
                             ({"byte_mode": True, "update_cycles": 3}, 5, 13)):
        c = PacerConfig(**kw)
        assert (c.latency, c.min_interval, PacerDatapath(c).latency) == (lat, reissue, lat)
    # a packet-only build (the default): no size in a tx payload, no byte-mode interval, no
    # byte-mode fields or register
    pk = PacerConfig()
    assert pk.byte_mode is False and pk.tx_width == 8
    with pytest.raises(ConfigError, match="size"):
        pk.tx_payload(1, 64)
    assert pk.tx_payload(3) == 3
    with pytest.raises(ConfigError, match="byte_mode"):
        pk.byte_interval_for(10e9)
    assert pk.state_bits() == 16 + 16 + 1 + 42 + 40
    dp = PacerDatapath(pk)
    assert [n for n, _ in dp.state_layout] == ["grants", "backlog", "armed", "next", "ival"]
    assert [r[0] for r in dp.regs] == ["ival_init", "burst", "wc"]
    cfg = PacerConfig(byte_mode=True)
    assert cfg.tx_width == 22
    assert [r[0] for r in PacerDatapath(cfg).regs] == ["ival_init", "burst", "wc", "bytes_init"]
    with pytest.raises(ConfigError, match="size"):
        cfg.tx_payload(1, 1 << 14)
    assert cfg.tx_payload(3, 1500) == 3 | 1500 << 8
    assert cfg.burst_width == 25 and cfg.burst_max == (1 << 25) - 1
    # 10 Gb/s at 156.25 MHz: 0.125 cycles per byte, exact; 100 Gb/s: 0.0125 rounded up
    assert cfg.byte_interval_for(10e9) == q(0.125)
    assert cfg.byte_interval_for(100e9) == 820
    assert cfg.state_bits() == 16 + 16 + 1 + 42 + 40 + 1 + 1 + 14
    # 100 Gb/s / 1024 flows, 1 KB packets, 156.25 MHz: 13107.2 cycles, exact in UQ.16
    assert cfg.interval_for(100e9 / 1024, 1024) == q(13107.2) + 1   # rounded up
    assert cfg.interval_for(100e9, 1024) == int(math.ceil(12.8 * 65536))
    with pytest.raises(ConfigError, match="rate_bps"):
        cfg.interval_for(1.0, 1024)                  # below 2**24 cycles
    with pytest.raises(ConfigError, match="rate_bps"):
        cfg.interval_for(float("nan"), 1024)


# -- the model against the ideal schedule ----------------------------------------------------------

def run_model_schedule(intervals, grants_wanted, *, time_width=18, ival_int_bits=16,
                       prefill=None, cycles=1):
    """Every flow of ``intervals`` (UQ.16) started and kept backlogged (never empty, so its
    schedule is one grid from its first grant): armed by one TX of 250 packets and refilled
    by TX events (``prefill=None``), or written with a backlog of 65535 and a first deadline
    at cycle ``prefill`` (no TX at all: under saturation the pops, which go first, would starve
    the TX stream).  Returns (model, grant log, first TX cycles)."""
    cfg = PacerConfig(engine=FlowEngineConfig(n_flows=16, time_width=time_width,
                                              wheel_horizon=4096, wheel_slots=8192),
                      ival_int_bits=ival_int_bits, frac_bits=F, update_cycles=cycles)
    m = FlowEngineModel(cfg.engine, PacerDatapathModel(PacerDatapath(cfg)))
    m.log_issue = False
    log = GrantLog(m)
    n = len(intervals)
    ctl = [(f, CtlOp.START, 0, 0) for f in range(n)]
    ctl += [(f, CtlOp.WRITE, IVAL, iv) for f, iv in enumerate(intervals)]
    if prefill is not None:
        ctl += [(f, CtlOp.WRITE, BACKLOG, 65535) for f in range(n)]
        ctl += [(f, CtlOp.WRITE, NEXT, biased(prefill)) for f in range(n)]
        ctl += [(f, CtlOp.WRITE, ARMED, 1) for f in range(n)]
    tx: list = []
    first_tx: dict[int, int] = {}
    started = False
    total = 0
    # the counters count a grant at its write-back (issue + 4), the log at its output (+ 5):
    # without prefill (below one grant per clock) the run ends when they cover the same grants
    while total < grants_wanted or (prefill is None and m.counters["expiries"] != total):
        c = m.cycle
        if started and not tx and c % 64 == 0 and prefill is None:
            tx = [(f, 250) for f in range(n) if m.flows[f].algo["backlog"] < 1000]
        o = m.step(tx=tx[0] if tx else None, ctl=ctl[0] if ctl else None)
        if ctl and o.ctl_ready:
            ctl.pop(0)
            if not ctl:
                started = True
                if prefill is None:
                    tx = [(f, 250) for f in range(n)] * 8
        elif tx and o.tx_ready:
            first_tx.setdefault(tx[0][0], c)
            tx.pop(0)
        if o.rate is not None:
            log.take(c, o.rate)
            total += 1
    return m, log, first_tx


def test_model_million_grants_no_drift():
    """>= 1.7 x 10^5 grants by default (10^6 with ``CC_LONG=1``, 4 x 10^6 with
    ``CC_PACER_LONG=1``; the full 10^6 is 23 s of CPU, over the suite's budget).  1.7 x 10^5
    grants are ~280,000 cycles: the time (W = 18) still wraps once and the no-drift check below
    still compares the first and the last tenth (1.7 x 10^4 grants each).  8 fast flows (9.25
    ... 15.3 cycles, fractions that are not short binary numbers; 0.71 grants per clock
    together), two slow ones beyond the wheel horizon (parked), time wrapping every 2^18
    cycles.  Every grant k of a flow is at
    ceil(t0 + k I) + late_k with late_k >= 0; sum and max of late_k equal the engine's
    counters; the lateness-0 grants equal the rounded ideal time exactly; the lateness does not
    grow over the run.

    The build: the tops' (``update_cycles`` 3, re-issue distance R = 11) by default,
    ``CC_PACER_CYCLES=1`` or ``2`` for the others (R = 9, 10); the fast intervals below plus
    R - 7 cycles, so the fastest keeps its 2.25 cycles of slack over the re-issue distance
    (at 9.25 cycles and R = 9 a flow makes up 0.25 cycles per grant after a collision: at 0.7
    grants per clock its lateness reaches hundreds of cycles)."""
    cycles = int(os.environ.get("CC_PACER_CYCLES", "3"))
    slack = {1: 2, 2: 3, 3: 4}[cycles]               # R - 7, by hand: R = cycles + 8
    intervals = [q(9.25), q(9.5) + 13, q(10.1), q(10.7) + 1, q(11.3), q(12.05), q(13.9),
                 q(15.3)]
    intervals = [iv + q(slack) for iv in intervals] + [q(5000.123), q(65535.999)]
    want = 4_000_000 if LONG else 1_000_000 if CC_LONG else 170_000
    print(f"{want} grants wanted (CC_LONG={int(CC_LONG)}, CC_PACER_LONG={int(LONG)}), "
          f"update_cycles {cycles}")
    m, log, first_tx = run_model_schedule(intervals, want, cycles=cycles)
    lates = []
    for f, iv in enumerate(intervals):
        g = log.times[f]
        t0 = first_tx[f]
        assert g[0] == t0                        # armed by its first TX: granted at once
        ideal = ideal_times(t0, iv, F, len(g))
        late = [a - b for a, b in zip(g, ideal, strict=True)]
        assert min(late) == 0
        lates += late
        # no drift: the lateness of the last tenth of the run is that of the first tenth
        tenth = max(1, len(late) // 10)
        head, tail = late[:tenth], late[-tenth:]
        assert sum(tail) / tenth <= sum(head) / tenth + 1, (f, sum(head), sum(tail))
        # the exact rational time of the last grant, against the cycle it came out
        k = len(g) - 1
        assert g[k] - ideal_time(t0, iv, F, k) < 1 + late[k]
    assert len(lates) == m.counters["expiries"] >= want
    assert sum(lates) == m.counters["late_sum"]
    assert max(lates) == m.counters["late_max"] <= 64
    assert lates.count(0) == m.hist[0] > 0.5 * len(lates)
    assert m.wheel.out.overflow_count == 0
    print(f"{len(lates)} grants in {m.cycle} cycles ({len(lates) / m.cycle:.3f} per clock), "
          f"lateness mean {sum(lates) / len(lates):.4f}, max {max(lates)}, "
          f"on time {lates.count(0) / len(lates):.4%}")


def test_model_saturated_grants_per_clock():
    """16 flows at 8 cycles each (2 grants per clock requested): the engine grants one per
    clock (minus the TX events that refill the backlogs), and the flows share it equally."""
    m, log, _ = run_model_schedule([q(8)] * 16, 60_000, prefill=300)
    c0 = max(t[0] for t in log.times.values()) + 100
    c1 = min(t[-1] for t in log.times.values())
    per = [sum(c0 <= c < c1 for c in log.times[f]) for f in range(16)]
    rate = sum(per) / (c1 - c0)
    assert rate > 0.97, rate
    assert max(per) - min(per) <= 2, per          # the wheel's order is fair here
    print(f"grants per clock {rate:.4f}, per flow {min(per)} ... {max(per)}")


# -- RTL against the model ------------------------------------------------------------------------

def test_all_flows_due_in_one_slot():
    """16 flows, each with 3 packets and interval 50, written to the same deadline d: the first
    round is granted at d, d+1, ..., d+15 (one per clock, in the wheel's order), late 0 ... 15;
    the next rounds are again at d + 50 r + i in the same order (the late grants keep the
    grid), so late_sum = 3 x 120 and late_max = 15; 48 grants in all."""
    h = harness(small(cycles=3))
    d = 400

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all()
        for f in range(16):
            h.queues["ctl"] += [(f, CtlOp.WRITE, IVAL, q(50)), (f, CtlOp.WRITE, BACKLOG, 3),
                                (f, CtlOp.WRITE, NEXT, biased(d)), (f, CtlOp.WRITE, ARMED, 1)]
        await h.drain(ctx)
        assert h.cycle < d - 20
        await h.run(ctx, d + 200 - h.cycle)
        got = {name: await h.read_counter(ctx, name)
               for name in ("expiries", "late_max", "late_sum", "late_h0")}
        assert got == {"expiries": 48, "late_max": 15, "late_sum": 360, "late_h0": 3}, got
    h.simulate(body)
    order = None
    for r in range(3):
        rnd = sorted((c, f) for f in range(16) for c, v in grants_of(h, f) if v == r + 1)
        assert [c for c, _ in rnd] == [d + 50 * r + i for i in range(16)]
        assert order is None or [f for _, f in rnd] == order
        order = [f for _, f in rnd]


def test_rate_change_while_queued():
    """One flow with 40 packets at interval 40.5: a CN to 15 (speed-up) takes effect at the next
    grant (previous ideal time + 15); a CN to 90 (slow-down) likewise; a CN to 20 long after
    the previous grant (its time already past) grants at once, then every 20.  (The
    three-cycle update's build: the re-issue distance is 10, see below.)"""
    h = harness(small(cycles=3))

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all([2])
        h.queues["ctl"].append((2, CtlOp.WRITE, IVAL, q(40.5)))
        await h.drain(ctx)
        h.queues["tx"].append((2, 40))
        await h.run(ctx, 85)            # grants at t0, t0 + 40.5 -> +41, +81 (+121.5 next)
        # -> the next grant at t0 + 81 + 15 = t0 + 96, at least the re-issue distance after
        # the CN (about t0 + 85, 11 cycles; the distance is 10 at three cycles: 8, 9 for the
        # other builds): on time (a CN less than that before its new time is late)
        h.queues["cn"].append((2, q(15)))
        await h.run(ctx, 75)
        h.queues["cn"].append((2, q(90)))
        await h.run(ctx, 300)
        h.queues["ctl"].append((2, CtlOp.WRITE, IVAL, q(500)))
        await h.run(ctx, 200)
        h.queues["cn"].append((2, q(20)))
        await h.run(ctx, 200)
    h.simulate(body)
    g = [c for c, _ in grants_of(h, 2)]
    t0 = h.taken["tx"][0]
    cn1, cn2, cn3 = h.taken["cn"]
    # before the first CN: exact grid of 40.5, rounded up
    pre = [c for c in g if c < cn1]
    assert pre == ideal_times(t0, q(40.5), F, len(pre))
    last_ideal = t0 + (len(pre) - 1) * 40.5
    # speed-up: next grant at last ideal + 15 (it is after cn1: cn1 - last grant < 40)
    expect = math.ceil(last_ideal + 15)
    assert expect > cn1
    mid = [c for c in g if cn1 <= c < cn2]
    assert mid[0] == expect and all(b - a == 15 for a, b in pairwise(mid))
    last_ideal = last_ideal + 15 * len(mid)                 # ideal time of the last one
    slow = [c for c in g if cn2 <= c < cn3]
    # slow-down: the pending grant moves from last + 15 to last + 90
    assert slow[0] == math.ceil(last_ideal + 90)
    assert all(b - a == 90 for a, b in pairwise(slow))
    # the WRITE of the interval (500) takes effect after the pending grant; the CN to 20
    # comes more than 20 after the last grant: granted in the CN's own cycle, then every 20
    late_part = [c for c in g if c >= cn3]
    assert late_part[0] == cn3 and all(b - a == 20 for a, b in pairwise(late_part))
    assert len(g) == 40 or h.model.flows[2].algo["backlog"] == 40 - len(g)


@pytest.mark.parametrize("ival,cycles", [(9, 1), (8, 1), (9, 3), (255, 3)])
def test_fastest_and_slowest_intervals(ival, cycles):
    """The fastest interval paced exactly (9 cycles in the one-cycle build: a grant every 9th
    cycle, lateness 0); 8 cycles in that build, and 9 in the three-cycle update's build, are
    served at the engine's limit of one grant per 9 (11) cycles per flow (late, counted:
    grants exactly 9 (11) apart, the times such an interval would have exactly, without
    lateness); the
    slowest (255 + 65535/65536 cycles at W = 10, beyond the 128-cycle horizon: parked and
    re-evaluated) exact to its rounded-up ideal times."""
    # by hand: a grant issued at c has its address registered at c + 1, its word out of the
    # table's output register at c + 3 and out of the engine's register after it at c + 4, is
    # updated over the datapath's cycles and written back at c + cycles + 4, which inserts
    # its next deadline into the wheel; the wheel pops an entry 4 cycles after its insert at
    # the earliest: c + cycles + 8
    reissue = {1: 9, 3: 11}[cycles]
    h = harness(tiny(cycles) if ival == 255 else small(cycles=cycles))
    assert h.dp.config.min_interval == reissue
    iv = (ival << F) + (0xFFFF if ival == 255 else 0)
    n = 30 if ival < 100 else 5
    run = 30 * 11 + 30 if ival < 100 else 4 * 256 + 60

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all([9])
        h.queues["ctl"].append((9, CtlOp.WRITE, IVAL, iv))
        await h.drain(ctx)
        await h.run(ctx, 20)        # the WRITE's re-evaluation entry has popped
        h.queues["tx"].append((9, n))
        await h.run(ctx, run)
        got = await h.read_counter(ctx, "late_max")
        assert (got == 0) == (ival >= reissue)
    h.simulate(body)
    g = [c for c, _ in grants_of(h, 9)]
    t0 = h.taken["tx"][0]
    if ival >= reissue:
        assert g == ideal_times(t0, iv, F, len(g)) and len(g) == n
    else:
        assert g == [t0 + reissue * k for k in range(len(g))] and len(g) == n


def test_wheel_wrap():
    """W = 10 (the time wraps every 1024 cycles): a flow at 200.5 cycles and one at 9.75 for
    three wraps, each on its rounded-up ideal schedule counted in cycles that do not wrap (a
    grant is late only when two flows fall due in one cycle: the lateness measured here from
    the ideal times sums to the engine's late_sum counter), and a third flow that goes idle and
    restarts across a wrap (no credit: at once, then every 60).  Every backlog is granted
    before the counters are read (15 packets at 200.5 cycles, 320 at 9.75: about 3000 and
    3120 of the 3200 cycles), so that the records and the counters cover the same grants."""
    h = harness(tiny())

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all([1, 6, 11])
        h.queues["ctl"] += [(1, CtlOp.WRITE, IVAL, q(200.5)), (6, CtlOp.WRITE, IVAL, q(9.75)),
                            (11, CtlOp.WRITE, IVAL, q(60))]
        await h.drain(ctx)
        await h.run(ctx, 20)
        h.queues["tx"] += [(1, 15), (6, 150), (6, 100), (11, 2)]
        await h.run(ctx, 1000)
        h.queues["tx"] += [(6, 70), (11, 3)]            # 11 idle since its second grant
        await h.run(ctx, 2200)
        h.stats = {n: await h.read_counter(ctx, n) for n in ("late_sum", "late_max",
                                                             "expiries")}
    h.simulate(body)
    assert h.cycle > 3 * 1024
    late = []
    t11 = [h.taken["tx"][3], h.taken["tx"][5]]
    expect = {1: ideal_times(h.taken["tx"][0], q(200.5), F, 15),
              6: ideal_times(h.taken["tx"][1], q(9.75), F, 320),
              11: [t11[0], t11[0] + 60, t11[1], t11[1] + 60, t11[1] + 120]}
    for f, ideal in expect.items():
        g = [c for c, _ in grants_of(h, f)]
        assert len(g) == len(ideal)                  # every packet granted, once
        d = [a - b for a, b in zip(g, ideal[:len(g)], strict=True)]
        assert all(0 <= x <= 2 for x in d), (f, d)
        late += d
    assert h.stats == {"late_sum": sum(late), "late_max": max(late), "expiries": len(late)}
    assert late.count(0) > 0.9 * len(late)


def test_backpressure_on_grants():
    """Two flows at 10.5 and 13 cycles (0.17 grants per clock), the grant stream ready 5 % of
    the time for 300 cycles: grants wait (the engine holds issue while its output FIFO is
    full) and are counted late; once the stream is ready again the late grants catch up (one
    per 9 cycles per flow: 1.5 cycles of lateness made up per grant at 10.5) and then keep
    their original grid (no drift)."""
    h = harness(seed=SEED + 5)
    ivs = {3: q(10.5), 12: q(13)}

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all(list(ivs))
        h.queues["ctl"] += [(f, CtlOp.WRITE, IVAL, iv) for f, iv in ivs.items()]
        await h.drain(ctx)
        await h.run(ctx, 20)
        h.queues["tx"] += [(3, 255), (12, 255)] * 2
        await h.run(ctx, 300)
        h.p_rate_ready = 0.05
        await h.run(ctx, 300)
        h.p_rate_ready = 1.0
        await h.run(ctx, 1400)
        assert await h.read_counter(ctx, "late_max") > 10
    h.simulate(body)
    exact = 0
    for i, (f, iv) in enumerate(ivs.items()):
        t0 = h.taken["tx"][i]
        recs = [(c, v) for c, fl, v in h.rates if fl == f and v]
        assert [v for _, v in recs] == list(range(1, len(recs) + 1))   # none lost
        for c, v in recs:
            ideal = math.ceil(ideal_time(t0, iv, F, v - 1))
            assert c - 6 >= ideal                        # never early (issue + 6: the record)
            if c > h.cycle - 300:
                assert c - 6 - ideal <= 1, (f, v, c)     # back on the grid (1: a collision)
                exact += c - 6 == ideal
    assert exact > 30


def test_random_traffic_hot_flows():
    """Random TX (1 ... 4 packets), pulls (empty TX), CN (intervals 7 ... 120 cycles with
    fractions), READs, interval register writes, work-conserving on/off, with hot flows and
    random back-pressure on rate and rd, then every flow sped up to 8 cycles to drain: every
    output every cycle equals the model's, and every packet enqueued is granted exactly once."""
    rng = random.Random(SEED)
    h = harness(small(cycles=3), seed=SEED)
    h.p_valid = {"tx": 0.6, "cn": 0.3, "ctl": 0.2, "csr_w": 0.05}
    h.p_rate_ready, h.p_rd_ready = 0.7, 0.5
    # (220 events: the three-cycle build simulates more slowly, so fewer than the 250 of
    # the split build keep the suite's time)
    n = 2000 if LONG else 220
    enq = [0] * 16

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all()
        await h.drain(ctx)
        hot = 0
        for i in range(n):
            if i % 100 == 0:
                hot = rng.randrange(16)
            f = hot if rng.random() < 0.5 else rng.randrange(16)
            k = rng.randrange(1, 5)
            enq[f] += k
            h.queues["tx"].append((f, k))
            if rng.random() < 0.2:
                h.queues["cn"].append((f, rng.randrange(7 << F, 120 << F)))
            if rng.random() < 0.1:
                h.queues["ctl"].append((rng.randrange(16), CtlOp.READ, 0, 0))
            if rng.random() < 0.01:
                h.queues["csr_w"].append((0, rng.randrange(7 << F, 200 << F)))
            if rng.random() < 0.1:                       # a pull (work-conserving mode)
                h.queues["tx"].append((rng.randrange(16), 0))
            if rng.random() < 0.02:
                h.queues["csr_w"].append((REG_WC, rng.randrange(2)))
        await h.drain(ctx)
        h.queues["cn"] += [(f, q(8)) for f in range(16)]
        for _ in range(200):
            if sum(1 for _, _, v in h.rates if v) == sum(enq) and not h.model.busy():
                break
            await h.run(ctx, 100)
        await h.read_counter(ctx, "expiries")
    h.simulate(body)
    per = [sum(1 for _, fl, v in h.rates if fl == f and v) for f in range(16)]
    assert per == enq
    assert h.model.counters["expiries"] == sum(enq)
    assert h.model.wheel.out.overflow_count == 0
    print(f"seed {SEED}: {h.cycle} cycles, {sum(enq)} grants, late_max "
          f"{h.model.counters['late_max']}")


# -- the burst cap ----------------------------------------------------------------------------

#: (burst, interval, the update's cycles: the three-cycle build or the one-cycle one): see
#: test_burst_cap
BURST_CASES = [(0, 20.0, 1), (30, 20.0, 1), (5, 20.5, 3), (2047, 20.0, 3)]


@pytest.mark.parametrize("burst,ival,cycles", BURST_CASES)
def test_burst_cap(burst, ival, cycles):
    """A flow of 16 packets whose first send time d is written about 100 cycles in the past:
    its first grant comes at c = (the ARMED WRITE) + R (the WRITE's re-evaluation; R = 9 in
    the one-cycle build, 11 with the three-cycle update), x = c - d late.  By hand, with the grant's
    deadline capped to max(deadline, t - burst) (fraction kept) and one grant per R cycles
    per flow at most:

    - burst 0: no catch-up, the grid restarts at c: c, c + 20, c + 40, ...;
    - burst 30: c (capped: ideal c - 30), c - 10 -> popped at c + R (R + 10 late: not
      capped), c + 10 -> at c + 2R (2R - 10 late), then on the grid c + 30, c + 50, ...;
      late_sum x + 3R (the one-cycle build, R = 9: x + 27; with R = 11 the fourth grant
      could not keep c + 30);
    - burst 5, I = 20.5, the first send time written as d - 0.5 (ceil: d): capped to ideal
      c - 5.5 (the deadline's integer part moves to c - 5, its fraction stays):
      ceil(c - 5.5 + 20.5 k): c + 15, c + 36, c + 56, c + 77, ...;
    - burst 2047 (the maximum at W = 12: the reset value, no cap): today's catch-up, one
      grant per R cycles until the ideal grid d + 20 k is reached (20 - R cycles of
      lateness made up per grant: with R = 11 and x up to 130, 15 grants after the first)."""
    # (R by hand as in test_fastest_and_slowest_intervals: cycles + 8)
    R = {1: 9, 3: 11}[cycles]
    h = harness(small(cycles=cycles))
    iv = q(ival)
    n = 16
    half = 1 << (F - 1) if burst == 5 else 0       # the ideal first time d - 0.5

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all([5])
        if burst != (1 << 11) - 1:
            h.queues["csr_w"].append((REG_BURST, burst))
        await h.drain(ctx)
        h.d = h.cycle - 93
        h.queues["ctl"] += [(5, CtlOp.WRITE, IVAL, iv), (5, CtlOp.WRITE, BACKLOG, n),
                            (5, CtlOp.WRITE, NEXT, biased(h.d) - half)]
        await h.run(ctx, 20)                 # their re-evaluations pop (not armed: nothing)
        h.queues["ctl"].append((5, CtlOp.WRITE, ARMED, 1))
        await h.run(ctx, 400)
        h.stats = {k: await h.read_counter(ctx, k) for k in ("late_sum", "late_max",
                                                             "expiries")}
    h.simulate(body)
    g = [c for c, _ in grants_of(h, 5)]
    c, d = g[0], h.d
    assert c == h.taken["ctl"][-1] + R
    x = c - d
    assert 90 <= x <= 130, x
    if burst == 0:
        expect = [c + 20 * k for k in range(n)]
    elif burst == 30:
        expect = [c, c + R, c + 2 * R] + [c + 30 + 20 * k for k in range(n - 3)]
    elif burst == 5:
        expect = [c] + [c + math.ceil(-5.5 + 20.5 * k) for k in range(1, n)]
        assert expect[1:5] == [c + 15, c + 36, c + 56, c + 77]
    else:
        expect = [c]
        for k in range(1, n):
            expect.append(max(d + 20 * k, expect[-1] + R))
        assert expect[-1] == d + 20 * (n - 1)        # back on the original grid
    assert g == expect, (burst, x, [a - c for a in g])
    # the counters measure the lateness before the cap (the pacing error)
    ideal = {0: [c + 20 * k for k in range(n)], 30: [c - 30 + 20 * k for k in range(n)],
             5: [c + math.ceil(-5.5 + 20.5 * k) for k in range(n)],
             2047: [d + 20 * k for k in range(n)]}[burst]
    ideal[0] = d
    late = [a - b for a, b in zip(g, ideal, strict=True)]
    assert h.stats == {"late_sum": sum(late), "late_max": x, "expiries": n}, (h.stats, late)
    if burst == 30:
        assert sum(late) == x + 3 * R


# -- byte mode -----------------------------------------------------------------------------------

def test_byte_mode_directed():
    """One flow in byte mode at 0.5 cycles per byte, 6 packets, the NIC reporting each granted
    packet's size; by hand (t0: the TX that arms it):

    - grant 0 at t0 (armed: at once); report 100 B -> grant 1 at t0 + 50;
    - report 40 B -> grant 2 at t0 + 70;
    - report 200 B (t0 + 170 pending), then a CN to 0.25 cycles per byte: the pending charge
      is rescaled (last x (new - old) = -50) -> grant 3 at t0 + 120;
    - a report 64 B (16 cycles: t0 + 136) that comes at r > t0 + 136: grant 4 at once (late,
      the grid kept); report 8 B (t0 + 138, past): grant 5 at once;
    - report 10 B with nothing left: no credit; a TX of 1 packet later: granted at once."""
    h = harness(small(byte_mode=True))
    F4 = 4

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all([F4])
        h.queues["ctl"] += [(F4, CtlOp.WRITE, BYTES, 1), (F4, CtlOp.WRITE, IVAL, q(0.5))]
        await h.drain(ctx)
        await h.run(ctx, 20)
        h.queues["tx"].append((F4, 6))
        await h.run(ctx, 10)
        h.queues["tx"].append((F4, report(100)))
        # t0 + 58: grant 1 (t0 + 50) issued; the report's new deadline (t0 + 70) in the wheel
        # in time (a TX taken at c is written back at c + 4 + 3 and can pop 4 later)
        await h.run(ctx, 48)
        h.queues["tx"].append((F4, report(40)))
        await h.run(ctx, 15)                               # t0 + 75
        h.queues["tx"].append((F4, report(200)))
        await h.run(ctx, 5)
        h.queues["cn"].append((F4, q(0.25)))
        await h.run(ctx, 120)                              # t0 + 200
        h.queues["tx"].append((F4, report(64)))
        await h.run(ctx, 10)
        h.queues["tx"].append((F4, report(8)))
        await h.run(ctx, 10)
        h.queues["tx"].append((F4, report(10)))
        await h.run(ctx, 40)
        h.queues["tx"].append((F4, 1))
        await h.run(ctx, 20)
        h.late_sum = await h.read_counter(ctx, "late_sum")
    h.simulate(body)
    g = [c for c, _ in grants_of(h, F4)]
    tx = h.taken["tx"]
    t0 = tx[0]
    # (the CN's new deadline t0 + 120 must be in the wheel in time: a CN taken at c is
    # written back at c + 4 + 3 and can pop 4 later, c + 11 <= t0 + 120; likewise the 40 B
    # report's, t0 + 70)
    assert h.taken["cn"][0] <= t0 + 120 - 11 and tx[4] > t0 + 136
    assert t0 + 50 < tx[2] <= t0 + 70 - 11
    r4, r5, tx1 = tx[4], tx[5], tx[7]
    assert g == [t0, t0 + 50, t0 + 70, t0 + 120, r4, r5, tx1], [c - t0 for c in g]
    assert h.late_sum == (r4 - (t0 + 136)) + (r5 - (t0 + 138))
    assert h.model.flows[F4].algo["last"] == 10


def run_model_bytes(n_flows, grants_wanted, seed):
    """``n_flows`` flows in byte mode (cycles per byte 0.2 ... 0.5 with odd fractions), kept
    backlogged by TX refills; the NIC reports each grant's size (64 ... 1500 bytes, drawn at
    random) on tx as soon as it sees the grant, ahead of the refills.  Returns (model, grant
    cycles, sizes reported, intervals, first TX cycles)."""
    rng = random.Random(seed)
    cfg = PacerConfig(engine=FlowEngineConfig(n_flows=n_flows, time_width=18,
                                              wheel_horizon=4096, wheel_slots=8192),
                      ival_int_bits=16, frac_bits=F, byte_mode=True)
    m = FlowEngineModel(cfg.engine, PacerDatapathModel(PacerDatapath(cfg)))
    m.log_issue = False
    log = GrantLog(m)
    ivs = [q(rng.uniform(0.2, 0.5)) + rng.randrange(1, 97) for _ in range(n_flows)]
    ctl = [(f, CtlOp.START, 0, 0) for f in range(n_flows)]
    ctl += [(f, CtlOp.WRITE, IVAL, iv) for f, iv in enumerate(ivs)]
    ctl += [(f, CtlOp.WRITE, BYTES, 1) for f in range(n_flows)]
    reports: list = []
    refill: list = []
    sizes: dict[int, list[int]] = {f: [] for f in range(n_flows)}
    first_tx: dict[int, int] = {}
    started = False
    total = 0
    while total < grants_wanted:
        c = m.cycle
        if started and not refill and c % 64 == 0:
            refill = [(f, 200) for f in range(n_flows) if m.flows[f].algo["backlog"] < 400]
        tx = reports[0] if reports else refill[0] if refill else None
        o = m.step(tx=tx, ctl=ctl[0] if ctl else None)
        if ctl and o.ctl_ready:
            ctl.pop(0)
            if not ctl:
                started = True
                refill = [(f, 250) for f in range(n_flows)] * 2
        elif tx is not None and o.tx_ready:
            (reports if reports else refill).pop(0)
            first_tx.setdefault(tx[0], c)
        if o.rate is not None:
            log.take(c, o.rate)
            flow = o.rate & log.fmask
            size = rng.randrange(64, 1501)
            sizes[flow].append(size)
            reports.append((flow, report(size)))
            total += 1
    # the counters count a grant at its write-back (issue + 4), the log at its output (+ 5):
    # one more cycle of outputs makes them cover the same grants
    counters = dict(m.counters)
    o = m.step()
    if o.rate is not None:
        log.take(m.cycle - 1, o.rate)
    return m, counters, log, sizes, ivs, first_tx


def test_model_bytes_no_drift():
    """Byte mode, model only: every grant k of a flow at ceil(T_k) + late_k, T_0 its first TX,
    T_{k+1} = T_k + s_k x I (Fraction) with s_k the size the NIC reported for grant k; late_k
    >= 0, their sum and max equal the engine's counters, most grants on time, and the lateness
    of the last tenth is that of the first (no drift).  60,000 grants over 64 flows by default
    (100,000 until the byte-mode build's product took two cycles more to simulate: the suite
    time stays), 10^6 with CC_PACER_LONG=1 or CC_LONG=1."""
    want = 1_000_000 if LONG or os.environ.get("CC_LONG", "0") not in ("", "0") else 60_000
    m, counters, log, sizes, ivs, first_tx = run_model_bytes(64, want, SEED)
    lates = []
    for f, iv in enumerate(ivs):
        g = log.times[f]
        step = Fraction(iv, 1 << F)
        ideal = Fraction(first_tx[f])
        late = []
        for k, c in enumerate(g):
            late.append(c - math.ceil(ideal))
            if k < len(sizes[f]):             # (the grant of the extra cycle has none yet)
                ideal += sizes[f][k] * step
        assert min(late) == 0 and late[0] == 0
        tenth = max(1, len(late) // 10)
        assert sum(late[-tenth:]) / tenth <= sum(late[:tenth]) / tenth + 1, f
        lates += late
    assert len(lates) == counters["expiries"] >= want
    assert sum(lates) == counters["late_sum"] and max(lates) == counters["late_max"]
    assert lates.count(0) > 0.5 * len(lates)
    assert m.wheel.out.overflow_count == 0
    print(f"seed {SEED}: {len(lates)} grants in {m.cycle} cycles "
          f"({len(lates) / m.cycle:.3f} per clock), lateness mean "
          f"{sum(lates) / len(lates):.4f}, max {max(lates)}, on time "
          f"{lates.count(0) / len(lates):.4%}")


def test_random_bytes_and_burst():
    """Random traffic over 16 flows, half of them in byte mode (the other half packets): TX
    with packet counts and size reports at random times (a report only counts while its flow
    waits for one; an empty one is a pull), CNs, READs, random WRITEs of the burst and wc
    registers and back-pressure on rate
    and rd; every output every cycle equals the model's; then reports and speed-ups until
    every packet enqueued has been granted exactly once."""
    rng = random.Random(SEED + 7)
    # (the tops' build: the three-cycle update after the product's two, latency 5; the
    # one- and two-cycle updates alone: test_byte_update_corners_against_model)
    h = harness(small(byte_mode=True, cycles=3), seed=SEED + 7)
    h.p_valid = {"tx": 0.6, "cn": 0.3, "ctl": 0.2, "csr_w": 0.05}
    h.p_rate_ready, h.p_rd_ready = 0.7, 0.5
    # (120 events: 150 before the product's two cycles made the byte-mode build slower to
    # simulate; the suite time stays)
    n = 1500 if LONG else 120
    byte_flows = set(range(0, 16, 2))
    enq = [0] * 16

    def interval(f):
        return rng.randrange(q(0.05), q(0.5)) if f in byte_flows else \
            rng.randrange(7 << F, 120 << F)

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all()
        for f in byte_flows:
            h.queues["ctl"] += [(f, CtlOp.WRITE, BYTES, 1), (f, CtlOp.WRITE, IVAL, interval(f))]
        await h.drain(ctx)
        hot = 0
        for i in range(n):
            if i % 50 == 0:
                hot = rng.randrange(16)
            f = hot if rng.random() < 0.5 else rng.randrange(16)
            k = rng.randrange(0, 4)
            size = rng.randrange(40, 1600) if rng.random() < 0.6 else 0
            enq[f] += k
            h.queues["tx"].append((f, report(size, k)))
            if rng.random() < 0.15:
                h.queues["cn"].append((f, interval(f)))
            if rng.random() < 0.05:
                h.queues["ctl"].append((rng.randrange(16), CtlOp.READ, 0, 0))
            if rng.random() < 0.03:
                h.queues["csr_w"].append((REG_BURST, rng.choice([0, 3, 40, 300, 2047])))
            if rng.random() < 0.03:       # work-conserving on/off (k = 0, size 0: a pull)
                h.queues["csr_w"].append((REG_WC, rng.randrange(2)))
        await h.drain(ctx)
        h.queues["csr_w"].append((REG_BURST, 2047))
        for f in range(16):
            h.queues["cn"].append((f, q(0.02) if f in byte_flows else q(8)))
        for _ in range(300):
            if sum(1 for _, _, v in h.rates if v) == sum(enq) and not h.model.busy():
                break
            h.queues["tx"] += [(f, report(64)) for f in byte_flows
                               if h.model.flows[f].algo["wait"]]
            await h.run(ctx, 40)
        await h.read_counter(ctx, "expiries")
    h.simulate(body)
    per = [sum(1 for _, fl, v in h.rates if fl == f and v) for f in range(16)]
    assert per == enq
    assert h.model.wheel.out.overflow_count == 0
    print(f"seed {SEED}: {h.cycle} cycles, {sum(enq)} grants, late_max "
          f"{h.model.counters['late_max']}")


# -- work-conserving mode -------------------------------------------------------------------------

def test_work_conserving_packets():
    """One flow at 20 cycles per packet, 5 packets; by hand (t0: the TX that arms it, a_i the
    cycles the pulls - empty TX events - are issued, from ``taken``):

    - grant 0 at t0 (armed: at once), next t0 + 20;
    - pull a0 (t0 < a0 < t0 + 20) with wc = 0: nothing; grant 1 at t0 + 20, next t0 + 40;
    - wc := 1; pull a1 (t0 + 20 < a1 < t0 + 40): an early grant 2 at a1, the grid restarted:
      next a1 + 20 (NOT t0 + 60: no credit, no debt); grant 3 at a1 + 20 (on time), next
      a1 + 40;
    - pull a2 (a1 + 20 < a2 < a1 + 40): early grant 4 at a2 (the last packet), next a2 + 20;
    - pull a3 with no backlog: nothing; a TX of 3 packets at x < a2 + 20: grants at a2 + 20,
      a2 + 40, a2 + 60 (no burst after the early grants).

    (The three-cycle update's build: no time here depends on the re-issue distance, 9: each
    grant is in its event's own cycle or at a deadline at least 9 cycles after the flow's
    last event, the TX x coming at least 9 cycles before a2 + 20: asserted below.)"""
    h = harness(small(cycles=3))
    F3 = 3

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all([F3])
        h.queues["ctl"].append((F3, CtlOp.WRITE, IVAL, q(20)))
        await h.drain(ctx)
        await h.run(ctx, 10)
        h.queues["tx"].append((F3, 5))
        await h.run(ctx, 8)
        h.queues["tx"].append((F3, 0))                   # a0, wc = 0
        await h.run(ctx, 20)                             # ~t0 + 28
        h.queues["csr_w"].append((REG_WC, 1))
        await h.run(ctx, 2)
        h.queues["tx"].append((F3, 0))                   # a1
        await h.run(ctx, 25)                             # ~a1 + 25
        h.queues["tx"].append((F3, 0))                   # a2
        await h.run(ctx, 4)
        h.queues["tx"].append((F3, 0))                   # a3: no backlog
        await h.run(ctx, 4)
        h.queues["tx"].append((F3, 3))                   # x
        await h.run(ctx, 80)
        h.late_sum = await h.read_counter(ctx, "late_sum")
    h.simulate(body)
    g = [c for c, _ in grants_of(h, F3)]
    t0, a0, a1, a2, a3, x = h.taken["tx"]
    assert t0 < a0 < t0 + 20 < a1 < t0 + 40 and a1 + 20 < a2 < a1 + 40 and a3 < x < a2 + 20
    assert x + 9 <= a2 + 20 and a0 + 9 <= t0 + 20          # (the re-issue distance 9: above)
    assert g == [t0, t0 + 20, a1, a1 + 20, a2, a2 + 20, a2 + 40, a2 + 60], \
        [c - t0 for c in g]
    assert h.late_sum == 0
    assert h.model.flows[F3].algo["backlog"] == 0


def test_work_conserving_bytes():
    """Byte mode and pulls: one flow at 0.5 cycles per byte, 4 packets, wc = 1; by hand:

    - grant 0 at t0; a pull a0 while the flow waits for its size report: nothing;
    - report 100 B at r0 (< t0 + 50): grant 1 at t0 + 50;
    - report 40 B (next t0 + 70), then a pull a1 < t0 + 70: early grant 2 at a1, the grid
      restarted at a1 and waiting for the size;
    - report 60 B at r2 < a1 + 30 - 9 (9: a deadline written at r2 can pop 9 cycles later at
      the earliest in a byte-mode build: read at r2 + 1, the update's three cycles, written
      back at r2 + 5, the wheel's insert latency 4): grant 3 at a1 + 30 (a1 + 60 x 0.5)."""
    h = harness(small(byte_mode=True))
    F5 = 5

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all([F5])
        h.queues["ctl"] += [(F5, CtlOp.WRITE, BYTES, 1), (F5, CtlOp.WRITE, IVAL, q(0.5))]
        h.queues["csr_w"].append((REG_WC, 1))
        await h.drain(ctx)
        await h.run(ctx, 10)
        h.queues["tx"].append((F5, 4))                   # t0
        await h.run(ctx, 6)
        h.queues["tx"].append((F5, 0))                   # a0: waiting, nothing
        await h.run(ctx, 6)
        h.queues["tx"].append((F5, report(100)))         # r0
        await h.run(ctx, 50)                             # ~t0 + 62
        h.queues["tx"].append((F5, report(40)))          # r1
        await h.run(ctx, 3)
        h.queues["tx"].append((F5, 0))                   # a1
        await h.run(ctx, 4)
        h.queues["tx"].append((F5, report(60)))          # r2
        await h.run(ctx, 60)
    h.simulate(body)
    g = [c for c, _ in grants_of(h, F5)]
    t0, a0, r0, r1, a1, r2 = h.taken["tx"]
    assert t0 + 50 < r1 < a1 < t0 + 70 and a1 < r2 < a1 + 30 - 9 and r0 < t0 + 50
    assert g == [t0, t0 + 50, a1, a1 + 30], [c - t0 for c in g]
    assert h.model.flows[F5].algo["last"] == 60


# -- the update alone, at its corners -----------------------------------------------------------

def run_pipelined(dp, vectors) -> list[tuple]:
    """Each ``(regs, state, kind, payload, t)`` vector through the datapath between flip-flops
    (:class:`hw.nic.flow_datapath.DatapathTop`), ONE NEW VECTOR EVERY CLOCK (the engine's
    pipeline: a multi-cycle update overlaps the next event's, and the registers may differ
    from one vector to the next here), the outputs of vector i read ``latency + 1`` clocks
    after it went in: ``(next_state, wake, expired, late)`` as :func:`run_rtl`'s."""
    from amaranth.sim import Simulator

    from hw.nic.flow_datapath import DatapathTop, EventKind
    from tests.datapath_harness import spans, unpack
    top = DatapathTop(dp, dp.time_width)
    sp = spans(dp.state_layout)
    lag = dp.latency + 1
    results = []

    async def bench(ctx):
        for i in range(len(vectors) + lag):
            if i < len(vectors):
                regs, state, kind, payload, t = vectors[i]
                ctx.set(top.regs.as_value(), dp.regs_layout.const(regs).as_bits())
                ctx.set(top.state.as_value(), dp.state_layout.const(state).as_bits())
                ctx.set(top.kind, kind)
                ctx.set(top.tx_bytes, payload if kind == EventKind.TX else 0)
                ctx.set(top.cn.as_value(), (payload or 0) if kind == EventKind.CN else 0)
                ctx.set(top.t, t)
            if i >= lag:
                expired = bool(ctx.get(top.expired))
                results.append((unpack(sp, ctx.get(top.next_state.as_value())),
                                ctx.get(top.wake) if ctx.get(top.wake_valid) else None,
                                expired, ctx.get(top.late) if expired else 0, None))
            await ctx.tick()

    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return results


def test_update_corners_against_model():
    """The packet-only update alone against the model's, on states the engine reaches rarely:
    deadlines within a few cycles of ``t`` and of ``t - burst`` (the burst cap's edge),
    fractions near 0 and all ones, intervals from below a cycle up, a CN on a due flow (its
    candidate due, below the cap or not), backlogs at 0, 1 and the maximum, pulls with
    ``wc``.  The short-loop update computes every sum and compare in parallel and selects
    (docs/pacer.md "The update alone"); each select must be the serial rule's value.  The
    three-cycle update (``update_cycles`` 3, the tops' build) gets 500 vectors one per clock
    and the two-cycle one 200 (``run_pipelined``: each vector's later cycles overlap the next
    vectors' earlier ones, so a select that read an earlier phase's value unregistered would
    take a later vector's), the one-cycle update 100 (combinational: ``run_rtl``; the same
    phases without the registers); 60 x as many with ``CC_LONG``."""
    from hw.nic.flow_datapath import EventKind as MK
    from tests.datapath_harness import run_rtl
    for cycles, count in ((3, 500), (2, 200), (1, 100)):
        _corners(small(cycles=cycles), count * (60 if CC_LONG else 1), MK,
                 run_pipelined if cycles > 1 else run_rtl)


def test_byte_update_corners_against_model():
    """The byte-mode update alone against the model's (the same corners, plus the byte
    fields: ``bytes``, ``wait``, ``last`` at 0, 1 and the maximum, size reports of 0, 1 and
    the largest size): the CN's charge ``last x (new - old)`` is carry-save rows
    (``last x new + last x ~old + last``) over two cycles, which a row dropped or misaligned
    changes by as little as ``last`` units of 2**-16 cycle, below what the engine runs show.
    The tops' build (``update_cycles`` 3, latency 5: the flags a cycle of their own) and the
    two-cycle update (latency 4) get 200 vectors each one per clock, the one-cycle update
    (latency 3) 100; 60 x as many with ``CC_LONG``."""
    from hw.nic.flow_datapath import EventKind as MK
    for cycles, count in ((3, 200), (2, 200), (1, 100)):
        _corners(small(byte_mode=True, cycles=cycles), count * (60 if CC_LONG else 1), MK,
                 run_pipelined)


def test_report_on_a_written_waiting_unarmed_flow():
    """A state only a ctl WRITE makes: ``wait`` = 1 with ``armed`` = 0 (byte mode).  A TX of 2
    packets carrying a size report of 100 at t = 1000: the report clears ``wait`` (``last``
    := 100), then the enqueue arms the flow as an idle one, at t (biased: 1000 + 1 - 2**-16),
    which is due, so the event grants at once (lateness 0): backlog 2 - 1 = 1, grants 1,
    and the grant waits for its own size report (``wait`` = 1, no wake).  Derived by hand
    from the rules in docs/pacer.md; every update build."""
    from hw.nic.flow_datapath import EventKind as MK
    for cycles in (3, 2, 1):
        cfg = small(byte_mode=True, cycles=cycles)
        dp = PacerDatapath(cfg)
        state = {"grants": 0, "backlog": 0, "armed": 0, "next": (500 << F) | 0x1234,
                 "ival": q(3), "bytes": 1, "wait": 1, "last": 7}
        regs = {"ival_init": 0, "burst": 1000, "wc": 0, "bytes_init": 1}
        [(nxt, wake, expired, late, _)] = run_pipelined(
            dp, [(regs, state, MK.TX, report(100, 2), 1000)])
        assert nxt == {"grants": 1, "backlog": 1, "armed": 1, "next": (1000 << F) | 0xFFFF,
                       "ival": q(3), "bytes": 1, "wait": 1, "last": 100}, (cycles, nxt)
        assert (wake, expired, late) == (None, 1, 0), cycles


def _corners(cfg, count, MK, run):
    dp = PacerDatapath(cfg)
    model = PacerDatapathModel(dp)
    rng = random.Random(SEED + 12)
    print(f"seed {SEED + 12}, update_cycles {cfg.update_cycles}")
    W, NW = cfg.engine.time_width, cfg.next_width
    bl_max, iv_max = (1 << cfg.backlog_width) - 1, (1 << cfg.ival_width) - 1

    def frac():
        return rng.choice([0, 1, (1 << F) - 1, (1 << F) - 2, rng.randrange(1 << F)])

    def ival():
        return rng.choice([rng.randrange(1 << F), q(1) + frac(), q(rng.randint(1, 9)) + frac(),
                           rng.randrange(iv_max + 1), iv_max])

    vectors = []
    for _ in range(count):
        t = rng.randrange(1 << W)
        burst = rng.choice([0, 1, 2, 5, rng.randrange(1 << cfg.burst_width)])
        base = rng.choice([t, t - burst, t + 1, t - 1, rng.randrange(1 << W)])
        nxt = (((base + rng.randint(-3, 3)) % (1 << W)) << F | frac()) & ((1 << NW) - 1)
        state = {"grants": rng.choice([0, 1, (1 << cfg.grant_width) - 1]),
                 "backlog": rng.choice([0, 1, 2, bl_max, bl_max - 1, rng.randrange(bl_max)]),
                 "armed": rng.randrange(2), "next": nxt, "ival": ival()}
        regs = {"ival_init": 0, "burst": burst, "wc": rng.randrange(2)}
        kind = rng.choice([MK.TX, MK.TX, MK.CN, MK.CN, MK.TIMER])
        payload = None
        if kind == MK.TX:
            payload = rng.choice([0, 1, 2, (1 << COUNT_BITS) - 1, rng.randrange(1 << COUNT_BITS)])
        elif kind == MK.CN:
            payload = ival()
        if cfg.byte_mode:
            size_max = (1 << cfg.size_width) - 1
            # (``wait`` is set by a grant of an armed byte-mode flow and the flow stays armed
            # until its report: wait => armed and bytes; a ctl WRITE makes any other
            # combination, which are drawn too: wait without armed, wait in packet mode)
            wait = rng.choice([0, 0, 1])
            state.update(bytes=rng.randrange(2) if rng.random() < 0.3 else (1 if wait else
                                                                            rng.randrange(2)),
                         wait=wait,
                         last=rng.choice([0, 1, size_max, rng.randrange(size_max + 1)]))
            regs["bytes_init"] = rng.randrange(2)
            if kind == MK.TX:
                payload = report(rng.choice([0, 0, 1, size_max, rng.randrange(size_max + 1)]),
                                 payload)
            if rng.random() < 0.2:
                # a CN on an armed byte flow whose moved deadline stays ahead of t: the new
                # deadline is next + last x (new - old) exactly (every row of the charge)
                old_iv = rng.randrange(q(64))
                state.update(armed=1, wait=0, bytes=1, ival=old_iv,
                             last=rng.choice([1, size_max, rng.randrange(size_max + 1)]),
                             next=(((t + rng.randint(200, 400)) % (1 << W)) << F | frac())
                             & ((1 << NW) - 1))
                kind, payload = MK.CN, max(0, old_iv + rng.randint(-3, 3))
        if rng.random() < 0.1:
            # a due flow with one packet and a whole-cycle interval whose next deadline after
            # the grant is exactly t (fraction all ones), enqueueing: re-armed at t or not
            k = rng.randint(1, 3)
            state.update(armed=1, backlog=1, ival=q(k), next=((t - k) % (1 << W)) << F | 0xFFFF)
            regs["burst"] = rng.choice([0, 1, 1000])
            kind, payload = MK.TX, rng.randint(1, 3)
        vectors.append((regs, state, kind, payload, t))
    got = run(dp, vectors)
    grants = 0
    for (regs, state, kind, payload, t), (nxt, wake, expired, late, _) in \
            zip(vectors, got, strict=True):
        want = model.update(regs, state, kind, payload, t)
        assert (nxt, wake, expired, late) == \
            (want.next_state, want.wake, want.expired, want.late if want.expired else 0), \
            (regs, state, kind, payload, t)
        grants += expired
    assert grants > len(vectors) // 5           # the grant paths were exercised
