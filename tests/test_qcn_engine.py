"""QCN datapath of the multi-flow engine: the RTL update (Amaranth simulation) against the
model's deadline-form update on random and boundary states, events and registers, the
engine-wide LFSR over a clocked run with jitter, and the deadline form at lateness 0 against the
single-flow counter model (QcnRpModel) cycle for cycle."""

from __future__ import annotations

import os
import random

import pytest
from amaranth.sim import Simulator

from hw.nic.flow_datapath import EventKind
from hw.nic.qcn_engine import QcnDatapath
from hw.nic.qcn_rp_config import STAGE_MAX, QcnRpConfig
from hw.params import ConfigError
from sim.models.qcn import QcnCnm, QcnDatapathModel, QcnRpModel, QcnTx
from tests.datapath_harness import Harness, random_event, run_rtl, spans, unpack

SEED = int(os.environ.get("CC_SEED", "20251125"))
W = 26
BUILD = QcnRpConfig(clk_hz=156_250_000, jitter=0.15)


def build_regs(cfg: QcnRpConfig) -> dict:
    return {name: reset for name, _, reset in QcnDatapath(cfg, W).regs}


def random_regs(rng):
    regs = build_regs(BUILD)
    if rng.random() < 0.3:
        return regs
    RW, BW, TW = BUILD.rate_width, BUILD.byte_width, BUILD.timer_width
    pick = lambda lo, hi: rng.choice([lo, hi, rng.randint(lo, hi)])   # noqa: E731
    regs["line_rate"] = pick(1, (1 << RW) - 1)
    regs["min_rate"] = pick(1, regs["line_rate"])
    regs["ai_rate"], regs["hai_rate"] = pick(0, regs["line_rate"]), pick(0, regs["line_rate"])
    regs.update(gd_shift=pick(6, 15), min_dec_fac=pick(0, 256), threshold=pick(1, STAGE_MAX - 1),
                tr_guard=rng.randrange(2))
    for name, width in (("byte", BW), ("time", TW)):
        for suffix in ("", "_half"):
            lo = pick(1, (1 << width) - 1)
            regs[f"{name}_lo{suffix}"] = lo
            regs[f"{name}_span{suffix}"] = pick(0, (1 << width) - 1 - lo)
    return regs


def random_vector(rng, regs):
    RW, BW = BUILD.rate_width, BUILD.byte_width
    mask = (1 << W) - 1
    t = rng.choice([0, mask, 1 << (W - 1), rng.randrange(1 << W)])
    rate = lambda: rng.choice([0, 1, regs["min_rate"], regs["line_rate"],   # noqa: E731
                               rng.randrange(1 << RW), rng.randint(0, regs["line_rate"])])
    F = regs["threshold"]
    state = {
        "cr": rate(), "tr": rate(), "bc": rng.choice([0, 1, rng.randrange(1 << BW)]),
        "b_stage": rng.choice([0, F - 1, F, F + 1, STAGE_MAX, rng.randint(0, STAGE_MAX)]),
        "t_stage": rng.choice([0, F - 1, F, F + 1, STAGE_MAX, rng.randint(0, STAGE_MAX)]),
        "active": int(rng.random() < 0.8), "fresh": rng.randrange(2),
        "t_on": int(rng.random() < 0.8),
    }
    state["t_dl"] = (t + rng.choice([0, 0, -1, 1, rng.randint(-(1 << (W - 2)), 1 << (W - 2))])) \
        & mask
    kind, payload = random_event(rng, state["bc"], BW,
                                 lambda: rng.choice([0, 63, rng.randrange(64)]))
    return regs, state, kind, payload, t


def check(dp, vectors):
    rtl = run_rtl(dp, vectors)
    for i, (vec, got) in enumerate(zip(vectors, rtl, strict=True)):
        regs, state, kind, payload, t = vec
        dpm = QcnDatapathModel(dp)           # a fresh LFSR: the RTL's is at its reset value
        want = dpm.update(regs, state, kind, payload, t)
        assert got[:4] == tuple(want), (f"seed {SEED} vector {i}", vec)
        assert got[4] == dpm.init_state(regs), f"seed {SEED} vector {i}: init_state"


def test_rtl_update_matches_model_random():
    dp = QcnDatapath(BUILD, W)
    rng = random.Random(f"{SEED}-qcn")
    print(f"CC_SEED={SEED}")
    check(dp, [random_vector(rng, random_regs(rng)) for _ in range(2000)])


def test_boundaries_directed():
    """The byte counter at exactly the event's bytes, stages at 255 and at F, rates at the line
    rate and the minimum, a byte cycle meeting a due timer (held to t + 1), deadlines at the
    wrap."""
    dp = QcnDatapath(BUILD, W)
    regs = build_regs(BUILD)
    mask = (1 << W) - 1
    vectors = []
    for t in (0, mask, 1 << (W - 1)):
        for stage in (STAGE_MAX, regs["threshold"], regs["threshold"] - 1):
            base = {"cr": regs["line_rate"], "tr": regs["line_rate"], "bc": 1500,
                    "b_stage": stage, "t_stage": stage, "active": 1, "fresh": 1, "t_on": 1,
                    "t_dl": t}
            vectors += [
                (regs, base, EventKind.TX, 1500, t), (regs, base, EventKind.TX, 1499, t),
                (regs, base, EventKind.CN, 63, t), (regs, base, EventKind.TIMER, None, t),
                (regs, {**base, "cr": regs["min_rate"]}, EventKind.CN, 63, t),
                (regs, {**base, "t_dl": (t + 1) & mask}, EventKind.TX, 1500, t),
                (regs, {**base, "t_dl": (t - 5) & mask}, EventKind.TIMER, None, t),
            ]
    check(dp, vectors)


def test_register_and_width_errors():
    dp = QcnDatapath(BUILD, W)
    assert dp.state_layout.size == 117
    with pytest.raises(ConfigError, match="time_width"):
        QcnDatapath(BUILD, BUILD.timer_width + 1)


def test_lfsr_advances_per_applied_draw():
    """One flow clocked through 3000 random updates with jitter on (state registered back,
    ``valid`` low on some cycles): the engine-wide LFSR and every state bit follow the model."""
    dp = QcnDatapath(BUILD, W)
    h = Harness(dp, feedback=True)
    dpm = QcnDatapathModel(dp)
    regs = build_regs(BUILD.replace(time_reset_us=2, byte_reset=20_000))
    rng = random.Random(f"{SEED}-lfsr")
    sp = spans(dp.state_layout)
    mask = (1 << W) - 1

    async def bench(ctx):
        ctx.set(h.regs.as_value(), dp.regs_layout.const(regs).as_bits())
        state = dpm.init_state(regs)
        ctx.set(h.state.as_value(), dp.state_layout.const(state).as_bits())
        t = mask - 1000
        draws = 0
        for _ in range(3000):
            t = (t + rng.randint(1, 40)) & mask
            x = rng.random()
            kind = EventKind.CN if x < 0.05 else EventKind.TX if x < 0.7 else EventKind.TIMER
            payload = rng.randrange(64) if kind == EventKind.CN else \
                rng.randint(64, 9000) if kind == EventKind.TX else None
            valid = rng.random() < 0.9
            ctx.set(h.kind, kind)
            ctx.set(h.tx_bytes, payload if kind == EventKind.TX else 0)
            ctx.set(h.cn.as_value(), payload if kind == EventKind.CN else 0)
            ctx.set(h.t, t)
            ctx.set(h.valid, valid)
            await ctx.tick()
            if valid:
                before = dpm.lfsr
                state = dpm.update(regs, state, kind, payload, t).next_state
                draws += dpm.lfsr != before
            assert unpack(sp, ctx.get(h.state.as_value())) == state, (SEED, t)
        assert draws > 500

    sim = Simulator(h)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("jitter", [0.0, 0.15])
def test_deadline_form_equals_counter_model(jitter):
    """Driven at every event and at every deadline (lateness 0), the deadline form equals
    QcnRpModel after every cycle it runs (one flow, so one LFSR drawn in the same order: equal
    with jitter too), over a long random run whose time wraps."""
    cfg = QcnRpConfig(jitter=jitter, time_reset_us=3, byte_reset=40_000, clk_hz=100_000_000)
    width = cfg.timer_width + 2
    mask = (1 << width) - 1
    counter = QcnRpModel(cfg)
    dpm = QcnDatapathModel(QcnDatapath(cfg, width))
    regs = {name: reset for name, _, reset in dpm.regs}
    state = dpm.init_state(regs)
    wake = None
    rng = random.Random(f"{SEED}-qcn-{jitter}")
    calls = 0
    for cycle in range(150_000):
        x = rng.random()
        ev = QcnCnm(rng.randrange(64)) if x < 0.0007 else QcnTx(rng.randint(64, 9000)) \
            if x < 0.3 else None
        t = cycle & mask
        if ev is None:
            s = counter.idle(1)
            if wake != t:
                continue
            kind, payload = EventKind.TIMER, None
        else:
            s = counter.step(ev)
            kind, payload = (EventKind.CN, ev.fb) if isinstance(ev, QcnCnm) else \
                (EventKind.TX, ev.nbytes)
        out = dpm.update(regs, state, kind, payload, t)
        state, wake = out.next_state, out.wake
        calls += 1
        assert out.late == 0
        assert state["t_on"] == s.active and (not s.active or
                                              state["t_dl"] == (cycle + s.t_cnt) & mask), \
            (SEED, cycle)
        assert {f: state[f] for f in ("cr", "tr", "bc", "b_stage", "t_stage", "active",
                                      "fresh")} == \
            {f: getattr(s, f) for f in ("cr", "tr", "bc", "b_stage", "t_stage", "active",
                                        "fresh")}, (SEED, cycle)
        assert dpm.lfsr == counter.lfsr
    assert counter.cuts > 50 and counter.timer_cycles > 100 and counter.byte_cycles > 100
