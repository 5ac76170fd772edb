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
from tests.pipe_harness import check_pipe_against_model
from tests.test_timely_engine import payload, regs_of

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
    for top in (True, False):
        regs = _extreme_regs(dp, top)
        vecs = _extreme_vectors(dp, regs, rng, 40)
        check_pipe_against_model(dp, md, regs, vecs)


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
    for app_k, grows in ((1, 0), (0, 1)):
        regs = dict(regs_of(dp), app_k=app_k, t_low=100, t_high=1000)
        want = 20000 + grows * regs["delta"]
        assert regs["min_rate"] < 20000 and 20000 + regs["delta"] <= regs["max_rate"]
        vecs = [(state, EventKind.CN, p, 7)]
        check_pipe_against_model(dp, md, regs, vecs)
        assert md.update(regs, state, EventKind.CN, p, 7).next_state["rate"] == want
