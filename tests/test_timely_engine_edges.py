"""TIMELY's engine datapath at the extremes of its registers and inputs, against the bit-exact
model (whose arithmetic is Python's unbounded integers: an intermediate of the RTL one bit too
narrow shows as a different result).  The random run of tests/test_timely_engine.py keeps the
line rate's ``ser_per_byte`` and segments of 16-64 KB; here every register and input field is
also taken at its extremes: ``ser_per_byte`` 2**32 - 1 with 128 KB - 1 segments (a 49-bit
serialization product) and RTTs just above that serialization, ``delta`` x ``hai_mult`` just
above 2**34 (HAI on a flat RTT), ``alpha`` at 2**17 - 1 and at 0 with ``rtt_diff`` at both
signed extremes, saturated RTTs.  Of the sampled width mutants of ``tools/mutate.py`` (block
``timely_engine``) this kills ``diff_max`` one lower and the serialization sum one bit
narrower; docs/verification.md lists the ones it does not reach."""

from __future__ import annotations

import os
import random

from hw.nic.flow_datapath import EventKind
from hw.nic.timely_config import TimelyConfig
from hw.nic.timely_engine import TimelyDatapath
from sim.models.timely import TimelyDatapathModel
from tests.pipe_harness import check_groups_against_model
from tests.test_timely_engine import payload, random_regs, random_vector, regs_of

SEED = int(os.environ.get("CC_SEED", "20251125"))


def _extreme_regs(dp, top: bool) -> dict:
    """Set A (``top``): ``alpha`` at its register maximum 2**17 - 1 (an EWMA weight above 1:
    the new difference overshoots to the clamp), ``beta`` 1, T_low 1 and T_high at the
    maximum (every RTT in the gradient region), ``delta`` x ``hai_mult`` = 255 x 67,372,037 =
    2**34 + 251 (past the 34 bits of a sum one bit narrower).  Set B:
    ``alpha`` 0 (the EWMA holds ``rtt_diff``: a stored extreme meets the clamp exactly),
    ``beta`` 0, ``delta`` and ``hai_mult`` at their maxima, no application limit."""
    r = regs_of(dp)
    mx = {name: (1 << w) - 1 for name, w, _ in dp.regs}
    r.update(ser_per_byte=mx["ser_per_byte"], inv_min_rtt=mx["inv_min_rtt"], hai_thresh=1,
             max_rate=mx["max_rate"], min_rate=1, init_rate=mx["max_rate"], t_low=1,
             t_high=mx["t_high"])
    if top:
        r.update(alpha=mx["alpha"], beta=1 << 16, delta=67_372_037, hai_mult=255,
                 app_k=mx["app_k"])
    else:
        r.update(alpha=0, beta=0, delta=mx["delta"], hai_mult=255, app_k=0)
    return r


def _extreme_vectors(dp, regs, rng, n: int):
    cfg = dp.config
    RT, RW = cfg.rtt_width, cfg.rate_width
    dw = RT + 9
    out = []
    for i in range(n):
        rd = rng.choice([(1 << (dw - 1)) - 1, 1 << (dw - 1), (1 << (dw - 1)) + 1, 0,
                         (1 << dw) - 1])
        state = {"rate": rng.choice([1000, (1 << RW) - 1, rng.getrandbits(RW)]),
                 "prev_rtt": rng.choice([0, (1 << RT) - 1]), "rtt_diff": rd,
                 "neg": rng.choice([0, 1, 255]), "valid": rng.randrange(2)}
        seg = rng.choice([(1 << 17) - 1, 1 << 16, 1])
        ser = seg * regs["ser_per_byte"] >> 24          # the serialization (cycles)
        rtt = rng.choice([(1 << 32) - 1 - ser, 1 << 31, (1 << RT) - 1, 1 << RT, 0, 1, 100])
        if i % 4 == 0:
            # a flat RTT after a flat one, gradient 0: HAI (neg >= hai_thresh = 1): rate +
            # hai_mult x delta
            rtt = rng.choice([1000, 5000])
            state.update(prev_rtt=rtt, rtt_diff=0, neg=5, valid=1, rate=1000)
        p = payload(dp, rtt, t_send=rng.getrandbits(32), seg=seg, ser=ser,
                    app_bytes=rng.choice([0, (1 << 32) - 1]),
                    # (2**32 - 1 saturates to the same RTT_MAX as its low bits; 2**RT and
                    # 2**RT + 5 only by the saturation: their low bits are 0 and 5)
                    app_cycles=rng.choice([0, 1, (1 << 32) - 1, 1 << RT, (1 << RT) + 5]))
        out.append((state, EventKind.CN, p, rng.getrandbits(dp.time_width)))
    return out


def test_extreme_registers_and_inputs_match_the_model():
    rng = random.Random(f"{SEED}-timely-edges")
    print(f"seed {SEED}")
    dp = TimelyDatapath(TimelyConfig())
    md = TimelyDatapathModel(dp)
    groups = []
    for top in (True, False):
        regs = _extreme_regs(dp, top)
        groups.append((regs, _extreme_vectors(dp, regs, rng, 40)))
    check_groups_against_model(dp, md, groups)


def test_app_limit_with_the_smallest_app_k():
    """app_k = 1 (the smallest non-zero: the rule is on) against app_k = 0 (off), the RTL
    against the model, the expected rates worked by hand: a completion in the T_low region
    (RTT 50 < T_low) of a flow at 20000 (above min_rate) whose application sent nothing
    (app_bytes 0) over 2**20 cycles: with app_k = 1, 0 x 2**40 >= 20000 x 2**20 x 1 is
    false, so the flow is
    application-limited and keeps its rate; with app_k = 0 the rule is off and the rate
    grows by delta."""
    dp = TimelyDatapath(TimelyConfig())
    md = TimelyDatapathModel(dp)
    state = {"rate": 20000, "prev_rtt": 50, "rtt_diff": 0, "neg": 0, "valid": 1}
    p = payload(dp, 50, app_bytes=0, app_cycles=1 << 20)
    groups, wants = [], []
    for app_k, grows in ((1, 0), (0, 1)):
        regs = dict(regs_of(dp), app_k=app_k, t_low=100, t_high=1000)
        wants.append(20000 + grows * regs["delta"])
        assert regs["min_rate"] < 20000 and 20000 + regs["delta"] <= regs["max_rate"]
        groups.append((regs, [(state, EventKind.CN, p, 7)]))
    outs = check_groups_against_model(dp, md, groups)
    assert [out[0][0]["rate"] for out in outs] == wants


def test_narrowest_rtt_width_app_limit_and_random_vectors():
    """rtt_width 12 (the smallest the configuration takes; the other tests build 24): the
    application-limited compare ``app_bytes 2**40 >= rate x cycles x app_k`` holds
    ``app_bytes 2**40`` (up to 2**72) whatever the RTT width (the RTL kept it in
    ``RT + 28 + RW + 2`` bits, 69 at RT 12, and read every application above 2**28 bytes as
    slow).  Hand-worked, a flow at 20000 in the T_low region (RTT 50 < T_low 100), app_k
    2**28 - 1, app_cycles 2**32 - 1 (saturated to 2**12 - 1): P = 20000 x 4095 x (2**28 - 1)
    < 2**55, so app_bytes 2**32 - 1, 2**31 and 2**29 (2**69 ... 2**72 - 2**40 after the
    shift) pass and the rate grows by delta; app_bytes 5 (5 x 2**40 < 2**43) is limited and
    keeps 20000.  Then random states, completions and registers (thresholds within 12 bits)
    against the bit-exact model, in the same build."""
    rng = random.Random(f"{SEED}-timely-rt12")
    print(f"seed {SEED}")
    cfg = TimelyConfig(rtt_width=12, t_low_us=5, t_high_us=20, min_rtt_us=2)
    dp = TimelyDatapath(cfg)
    md = TimelyDatapathModel(dp)
    regs = dict(regs_of(dp), app_k=(1 << 28) - 1, t_low=100, t_high=1000)
    assert regs["min_rate"] < 20000 and 20000 + regs["delta"] <= regs["max_rate"]
    state = {"rate": 20000, "prev_rtt": 50, "rtt_diff": 0, "neg": 0, "valid": 1}
    cases = [((1 << 32) - 1, 1), (1 << 31, 1), (1 << 29, 1), (5, 0)]
    vecs = [(state, EventKind.CN, payload(dp, 50, app_bytes=a, app_cycles=(1 << 32) - 1), 7)
            for a, _ in cases]
    groups = [(regs, vecs)]
    for _ in range(2):
        r = random_regs(rng, cfg)
        r["t_high"] = min(r["t_high"], (1 << 12) - 1)
        r["t_low"] = min(r["t_low"], r["t_high"])
        groups.append((r, [random_vector(rng, dp, r) for _ in range(60)]))
    outs = check_groups_against_model(dp, md, groups)
    for (_, grows), got in zip(cases, outs[0], strict=True):
        assert got[0]["rate"] == 20000 + grows * regs["delta"], (got[0], grows)


def test_gradient_of_zero_and_of_one_unit():
    """The gradient's sign test at its boundary, worked by hand: alpha = beta = 1.0 (2**16),
    inv_min_rtt 2**16 (Q.32), ``ser_per_byte`` 2**14 (a 16 KB segment serializes in exactly 16
    cycles, so the completion's RTT is the one written), a flow at 20000 with ``prev_rtt`` 1000
    and ``rtt_diff`` 0, T_low 100 < RTT < T_high 5000 (the gradient region), no application
    limit.  RTT 1001: ``rtt_diff`` = 1 << 8, gradient = 2**8 x 2**16 >> 24 = 1 unit (2**-16),
    positive: the rate is cut by beta x gradient, 20000 x (2**16 - 1) >> 16 = 19999, and the
    HAI counter clears.  RTT 1000: gradient 0, not positive: the rate grows by delta and the
    counter counts the completion."""
    dp = TimelyDatapath(TimelyConfig())
    md = TimelyDatapathModel(dp)
    regs = dict(regs_of(dp), alpha=1 << 16, beta=1 << 16, inv_min_rtt=1 << 16,
                ser_per_byte=1 << 14, t_low=100, t_high=5000, app_k=0, hai_thresh=5)
    assert regs["min_rate"] < 19999 and 20000 + regs["delta"] <= regs["max_rate"]
    state = {"rate": 20000, "prev_rtt": 1000, "rtt_diff": 0, "neg": 2, "valid": 1}
    want = [(1001, {"rate": 19999, "rtt_diff": 1 << 8, "neg": 0}),
            (1000, {"rate": 20000 + regs["delta"], "rtt_diff": 0, "neg": 3})]
    vecs = [(state, EventKind.CN, payload(dp, rtt, seg=16384, ser=16), 7) for rtt, _ in want]
    for (rtt, exp), got in zip(want, check_groups_against_model(dp, md, [(regs, vecs)])[0],
                               strict=True):
        assert {k: got[0][k] for k in exp} == exp and got[0]["prev_rtt"] == rtt, (rtt, got[0])
