"""DCQCN datapath of the multi-flow engine: the RTL update (Amaranth simulation, combinational)
against the model's deadline-form update on random and boundary states, events and registers
(every profile on ONE build: the profile switches are register values), and the deadline form
at lateness 0 against the single-flow counter model (DcqcnRpModel) cycle for cycle."""

from __future__ import annotations

import os
import random

import pytest

from hw.nic.dcqcn_config import ALPHA_ONE, PROFILES, STAGE_MAX, DcqcnRpConfig
from hw.nic.dcqcn_engine import DcqcnDatapath, state_bits
from hw.nic.flow_datapath import EventKind
from hw.params import ConfigError
from sim.models.dcqcn import (
    DcqcnCnp,
    DcqcnDatapathModel,
    DcqcnRpModel,
    DcqcnTx,
    dcqcn_deadline_update,
)
from tests.datapath_harness import random_event, run_rtl

SEED = int(os.environ.get("CC_SEED", "20251125"))
#: cycles of each deadline-form run: 30,000 (about 300 cuts and 7 wraps of the 12-bit time per
#: profile and variant), 60,000 with CC_LONG=1
DEADLINE_CYCLES = 60_000 if os.environ.get("CC_LONG", "0") not in ("", "0") else 30_000
W = 26
BUILD = DcqcnRpConfig.profile("connectx", clk_hz=156_250_000)   # the one build


def profile_regs(profile: str, **overrides) -> dict:
    """The registers of a profile on the build (same structural widths)."""
    cfg = DcqcnRpConfig.profile(profile, clk_hz=BUILD.clk_hz, **overrides)
    r = cfg.registers()
    return {name: getattr(r, name) for name, _, _ in DcqcnDatapath(BUILD, W).regs}


# -- random vectors ---------------------------------------------------------------------------

def random_regs(rng, profile):
    regs = profile_regs(profile)
    if rng.random() < 0.5:
        return regs
    RW, TW, BW = BUILD.rate_width, BUILD.timer_width, BUILD.byte_width
    top = (1 << RW) - 1
    pick = lambda lo, hi: rng.choice([lo, hi, rng.randint(lo, hi)])   # noqa: E731
    regs.update(
        t_cycles=pick(1, (1 << TW) - 2), t_half_cycles=pick(1, (1 << TW) - 2),
        k_cycles=pick(1, (1 << TW) - 2), p_cycles=pick(1, (1 << TW) - 2),
        threshold=pick(1, STAGE_MAX - 2), g=pick(1, 1024), alpha_init=pick(0, ALPHA_ONE),
        gd_shift=pick(0, 31), min_dec_fac=pick(0, 1 << 16))
    regs["max_rate"] = pick(1, top)
    regs["min_rate"] = pick(1, regs["max_rate"])
    regs["ai_rate"], regs["hai_rate"] = pick(0, regs["max_rate"]), pick(0, regs["max_rate"])
    regs["first_rate"] = rng.choice([0, pick(regs["min_rate"], regs["max_rate"])])
    regs["byte_reset"] = rng.choice([0, pick(1, (1 << BW) - 1)])
    regs["byte_half"] = regs["byte_reset"] >> 1
    for name, width in (("alpha_mode", 1), ("cut_mode", 2), ("increase_rule", 2),
                        ("hai_step", 2), ("clamp_rule", 2), ("alpha_before_cut", 1),
                        ("bc_reload_on_clamp_only", 1), ("halve_in_hyper", 1),
                        ("rt_guard", 1)):
        if rng.random() < 0.3:
            regs[name] = rng.randrange(1 << width)   # every code, unused ones included
    return regs


def random_vector(rng, regs):
    RW, BW = BUILD.rate_width, BUILD.byte_width
    mask = (1 << W) - 1
    t = rng.choice([0, mask, (1 << (W - 1)) - 1, 1 << (W - 1), rng.randrange(1 << W)])
    rate = lambda: rng.choice([0, 1, regs["min_rate"], regs["max_rate"], (1 << RW) - 1,  # noqa: E731
                               rng.randrange(1 << RW), rng.randint(0, regs["max_rate"])])
    state = {
        "rc": rate(), "rt": rate(),
        "alpha": rng.choice([0, ALPHA_ONE, ALPHA_ONE - 1, rng.randint(0, ALPHA_ONE)]),
        "t_stage": rng.choice([0, 1, STAGE_MAX, STAGE_MAX - 1, regs["threshold"],
                               regs["threshold"] + 1, rng.randint(0, STAGE_MAX)]),
        "b_stage": rng.choice([0, 1, STAGE_MAX, STAGE_MAX - 1, regs["threshold"],
                               regs["threshold"] - 1, rng.randint(0, STAGE_MAX)]),
        "mode": rng.randrange(4), "bc": rng.choice([0, 1, rng.randrange(1 << BW)]),
        "active": rng.randrange(2), "alpha_flag": rng.randrange(2), "dec_flag": rng.randrange(2),
    }
    for k in ("a", "t", "d"):
        state[k + "_on"] = int(rng.random() < 0.7)
        offset = rng.choice([0, 0, -1, 1, rng.randint(-(1 << (W - 2)), 1 << (W - 2))])
        state[k + "_dl"] = (t + offset) & mask
    kind, payload = random_event(rng, state["bc"], BW, lambda: 0)
    return regs, state, kind, payload, t


def check(dp, vectors):
    rtl = run_rtl(dp, vectors)
    dpm = DcqcnDatapathModel(dp)
    for i, ((regs, state, kind, payload, t), got) in enumerate(zip(vectors, rtl, strict=True)):
        want = dcqcn_deadline_update(regs, state, kind, payload, t, W)
        assert got[:4] == want, (f"seed {SEED} vector {i}", regs, state, kind, payload, t)
        assert got[4] == dpm.init_state(regs), (f"seed {SEED} vector {i}: init_state")


@pytest.mark.parametrize("profile", PROFILES)
def test_rtl_update_matches_model_random(profile):
    """One build, each profile's registers (plus random knob values and every switch code),
    random and boundary states: every next-state bit, wake, expired and late agree."""
    dp = DcqcnDatapath(BUILD, W)
    rng = random.Random(f"{SEED}-{profile}")
    print(f"CC_SEED={SEED}")
    vectors = [random_vector(rng, random_regs(rng, profile)) for _ in range(1500)]
    check(dp, vectors)


def test_state_bits_and_register_errors():
    assert state_bits(BUILD, 26) == 205 <= 240 - 4 - 26   # room for the engine's own fields
    with pytest.raises(ConfigError, match="time_width"):
        DcqcnDatapath(BUILD, BUILD.timer_width + 1)


def test_boundaries_directed():
    """Directed corner cases: the byte counter at exactly the event's bytes, stages at 255,
    alpha at 0 and 1.0, rates at min/max, deadlines equal to t across the wrap."""
    dp = DcqcnDatapath(BUILD, W)
    mask = (1 << W) - 1
    vectors = []
    for profile in PROFILES:
        regs = profile_regs(profile, rpg_byte_reset=5000)
        for t in (0, mask, 1 << (W - 1)):
            base = {"rc": regs["max_rate"], "rt": regs["max_rate"], "alpha": ALPHA_ONE,
                    "t_stage": STAGE_MAX, "b_stage": STAGE_MAX, "mode": 2, "bc": 1500,
                    "active": 1, "alpha_flag": 1, "dec_flag": 1,
                    "a_on": 1, "a_dl": t, "t_on": 1, "t_dl": t, "d_on": 1, "d_dl": (t - 1) & mask}
            vectors += [
                (regs, base, EventKind.TX, 1500, t),                    # bc == bytes
                (regs, base, EventKind.TX, 1499, t),
                (regs, base, EventKind.CN, 0, t),
                (regs, base, EventKind.TIMER, None, t),
                (regs, {**base, "alpha": 0, "rc": regs["min_rate"], "rt": regs["min_rate"]},
                 EventKind.CN, 0, t),
                (regs, {**base, "active": 0, "a_on": 0, "t_on": 0, "d_on": 0}, EventKind.CN,
                 0, t),
                (regs, {**base, "t_dl": (t + 1) & mask, "a_dl": (t + 1) & mask},
                 EventKind.TIMER, None, t),
            ]
    check(dp, vectors)


# -- the deadline form at lateness 0 is the single-flow counter model -----------------------------

def small(profile: str, **kw) -> DcqcnRpConfig:
    base = DcqcnRpConfig.profile(profile)
    return base.replace(rpg_time_reset=1, dce_tcp_rtt=0.5, rate_reduce_monitor_period=0.2,
                        rpg_byte_reset=min(base.rpg_byte_reset, 30_000), timer_width=10, **kw)


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("variant", ["base", "first_rate"])
def test_deadline_form_equals_counter_model(profile, variant):
    """Driven at every event and at every deadline (lateness 0), the deadline form's state
    equals DcqcnRpModel's after every cycle it runs (counter c > 0 at the start of cycle x
    <=> armed with deadline x + c - 1), over a long random run whose 12-bit time wraps."""
    cfg = small(profile, **({"rate_to_set_on_first_cnp": 1000, "rpg_min_dec_fac": 30}
                            if variant == "first_rate" else {}))
    width = cfg.timer_width + 2
    mask = (1 << width) - 1
    r = cfg.registers()
    regs = {name: getattr(r, name) for name in r.__dataclass_fields__}
    counter = DcqcnRpModel(cfg)
    dpm = DcqcnDatapathModel(DcqcnDatapath(cfg, width))
    state = dpm.init_state(regs)
    wake = None
    rng = random.Random(f"{SEED}-{profile}-{variant}")
    calls = 0
    for cycle in range(DEADLINE_CYCLES):
        x = rng.random()
        ev = DcqcnCnp() if x < 0.01 else DcqcnTx(rng.randint(64, 9000)) if x < 0.25 else None
        t = cycle & mask
        s = counter.step(ev)
        if ev is None and wake != t:
            continue                     # nothing to apply (the counters just count)
        kind = EventKind.CN if isinstance(ev, DcqcnCnp) else EventKind.TX if ev else \
            EventKind.TIMER
        state, wake, _, late = dcqcn_deadline_update(regs, state, kind,
                                                     ev.bytes if kind == EventKind.TX else 0,
                                                     t, width)
        calls += 1
        assert late == 0
        for k in ("a", "t", "d"):
            cnt = getattr(s, k + "_cnt")
            assert state[k + "_on"] == (cnt > 0), (SEED, cycle, k)
            if cnt:
                assert state[k + "_dl"] == (cycle + cnt) & mask, (SEED, cycle, k)
        assert {f: state[f] for f in ("rc", "rt", "alpha", "t_stage", "b_stage", "mode", "bc",
                                      "active", "alpha_flag", "dec_flag")} == \
            {f: getattr(s, f) for f in ("rc", "rt", "alpha", "t_stage", "b_stage", "mode", "bc",
                                        "active", "alpha_flag", "dec_flag")}, (SEED, cycle)
    print(f"{counter.cuts} cuts, {calls} updates")
    assert counter.cuts > DEADLINE_CYCLES // 600 and calls > DEADLINE_CYCLES // 6
