"""The multi-flow engine with a multi-cycle modify stage (a datapath of latency L > 1, here the
toy delayed by L - 1 cycles), against its cycle-accurate model: every output, every cycle.

What changes with L > 1 (docs/flow-engine.md, "Modify stage of L cycles"): an event of a flow
whose previous update is still in the modify stage (issued less than L cycles earlier) waits,
and the next source in priority order takes the cycle; events of other flows keep one per
clock.  The expected issue cycles below are derived from that rule by hand, not from the model.
"""

from __future__ import annotations

import gc
import os
import random
import warnings

import pytest

from hw.nic.flow_datapath import CtlOp, ToyDatapath
from hw.nic.flow_engine import COUNTERS, FlowEngine, min_out_fifo_depth
from hw.params import ConfigError
from tests.test_flow_engine import SEED, Harness, queue_random_traffic, small_config

#: the modify stage's latencies tested (L = 4 too with CC_LONG=1: the rules are the same
#: functions of L, and 2 and 6 cover the hazard window's both ends of the QCN datapath's range)
LONG = os.environ.get("CC_LONG", "") not in ("", "0")
LATENCIES = [2, 4, 6] if LONG else [2, 6]


def make(L, seed=SEED, period=40, **kw):
    # 4 wheel entries per flow: the input hold margin (pipeline depth + 5) leaves room
    cfg = small_config(out_fifo_depth=min_out_fifo_depth(L), wheel_entries_per_flow=4, **kw)
    return Harness(cfg, ToyDatapath(cfg.time_width, period=period, latency=L), seed=seed)


def test_fifo_depth_must_cover_the_pipeline():
    cfg = small_config(out_fifo_depth=min_out_fifo_depth(4) - 1)
    with warnings.catch_warnings():
        # the half-built component is never elaborated: silence its "unused" warning
        warnings.simplefilter("ignore")
        with pytest.raises(ConfigError, match="out_fifo_depth"):
            FlowEngine(cfg, ToyDatapath(cfg.time_width, latency=4))
        gc.collect()
    ok = FlowEngine(small_config(out_fifo_depth=min_out_fifo_depth(4)), ToyDatapath(12, latency=4))
    ok._MustUse__silence = True


@pytest.mark.parametrize("L", LATENCIES)
def test_same_flow_spaced_by_latency(L):
    """One flow offered every cycle: its events issue exactly L cycles apart (no timer is due:
    the period is far away), all 60 of them, with the model's outputs every cycle."""
    h = make(L, period=1000)

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all([5])
        await h.drain(ctx)
        for i in range(60):
            (h.queues["cn"] if i % 7 == 3 else h.queues["tx"]).append((5, i % 64))
        await h.drain(ctx)
    h.simulate(body)
    taken = sorted(h.taken["tx"] + h.taken["cn"])
    # the flow's own timer pops (re-evaluations of its parked deadline) take its turn too
    pops = [c for c in h.model.issue_log if c[1] == 2 and taken[0] <= c[0] <= taken[-1]]
    gaps = {b - a for a, b in zip(taken[:-1], taken[1:], strict=True)}
    assert len(taken) == 60 and taken[-1] - taken[0] == (59 + len(pops)) * L
    assert min(gaps) == L
    assert h.model.flows[5].algo["cnt"] == 60


@pytest.mark.parametrize("L", LATENCIES)
def test_other_flows_fill_the_gaps(L):
    """A hot flow on cn (which goes before tx) and other flows on tx: while cn waits for its
    flow, tx takes the cycle, so the engine still issues one event per clock.  No timer falls
    due in the window (period 1000 cycles, parked at the 256-cycle horizon)."""
    h = make(L, period=1000)

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all()
        await h.drain(ctx)
        h.queues["cn"] += [(7, i % 64) for i in range(40)]
        h.queues["tx"] += [(i % 15 + (i % 15 >= 7), 100 + i) for i in range(40 * (L - 1))]
        e0 = h.model.issued
        await h.run(ctx, 30 * L)
        assert h.model.issued - e0 == 30 * L
        assert len(h.taken["cn"]) == 30     # the hot flow: one event per L cycles
        await h.drain(ctx)
    h.simulate(body)


@pytest.mark.parametrize("L", LATENCIES)
def test_round_robin_full_rate(L):
    """TX round robin over L flows (never two of one flow within L cycles): one per clock."""
    h = make(L)

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all()
        await h.drain(ctx)
        h.queues["tx"] += [(i % L, i) for i in range(300)]
        e0 = h.model.issued
        await h.run(ctx, 300)
        assert h.model.issued - e0 == 300
        await h.drain(ctx)
    h.simulate(body)


@pytest.mark.parametrize("L", LATENCIES)
def test_ctl_write_and_read_in_flight(L):
    """WRITE then READ of a flow at every distance 0 ... L + 4 cycles after its TX updates."""
    h = make(L)

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all()
        await h.drain(ctx)
        for gap in range(L + 5):
            h.queues["tx"] += [(3, 1000 + gap)] * 3
            h.queues["ctl"].append((3, CtlOp.WRITE, 0, 77 + gap))
            await h.run(ctx, 1)
            h.queues["ctl"].append((3, CtlOp.READ, 0, 0))
            await h.run(ctx, gap)
            h.queues["tx"].append((3, 5))
            h.queues["ctl"].append((3, CtlOp.READ, 0, 0))
            await h.drain(ctx)
            h.queues["ctl"].append((3, CtlOp.READ, 0, 0))
            await h.drain(ctx)
            word = h.lay["word"]
            last = word.from_bits(h.rds[-1][1] >> h.lay["rd"]["word"].offset)
            # WRITE cnt := 77 + gap, then the three TX queued before it and the one after
            assert last.algo.cnt == 77 + gap + 4 and last.en == 1
    h.simulate(body)


@pytest.mark.parametrize("L", LATENCIES)
def test_timer_burst(L):
    """All 16 flows due in one cycle: the wheel pops one per cycle, distinct flows, so the
    i-th expiry is i cycles late whatever L: worst 15, sum 120."""
    h = make(L)
    d = 600

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all()
        for f in range(16):
            h.queues["ctl"] += [(f, CtlOp.WRITE, 3, d), (f, CtlOp.WRITE, 4, 1)]
        await h.drain(ctx)
        await h.run(ctx, d + 30 - h.cycle)   # the last expiry's write-back: d + 15 + L + 2
        got = {name: await h.read_counter(ctx, name)
               for name in ("expiries", "late_max", "late_sum")}
        assert got == {"expiries": 16, "late_max": 15, "late_sum": 120}, got
    h.simulate(body)


@pytest.mark.parametrize("L,il", [(L, 4) for L in LATENCIES] + [(2, 5), (2, 6)]
                         + ([(6, 5)] if LONG else []),
                         ids=[f"L{L}" for L in LATENCIES] + ["L2-wheel-L5", "L2-wheel-L6"]
                         + (["L6-wheel-L5"] if LONG else []))
def test_random_traffic_backpressure(L, il):
    """Random TX/CN/ctl/register writes with hot flows, idle and back-pressure (also with the
    wheel's read stage: insert latency 5, reeval L + 7; and its pop buffer: 6, L + 8)."""
    rng = random.Random(SEED + L)
    # timers every 40 L cycles per flow: the harness drains when the pipeline is empty, which
    # 16 flows' timers at a 40-cycle period would (almost) never let an 8-stage pipeline be
    h = make(L, seed=SEED + L, period=40 * L, wheel_insert_latency=il)
    h.p_valid = {"tx": 0.8, "cn": 0.3, "ctl": 0.1, "csr_w": 0.02}
    h.p_rate_ready, h.p_rd_ready = 0.6, 0.5
    n = 1200

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all()
        queue_random_traffic(h, rng, n, cn_hot=True)
        await h.drain(ctx)
        for name in COUNTERS:
            await h.read_counter(ctx, name)
    h.simulate(body)
    print(f"L {L} seed {SEED + L}: {h.cycle} cycles, {h.model.issued} events")
    assert h.model.counters["ev_tx"] == n
    assert h.model.counters["expiries"] > 50
    assert h.model.wheel.out.overflow_count == 0
