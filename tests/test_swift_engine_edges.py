"""Swift's engine datapath with every run-time register at the ends of its width, against the
bit-exact model (Python's unbounded integers: an intermediate of the RTL one bit too narrow
shows as a different result).  The random run of tests/test_swift_engine.py draws the
registers from their useful ranges (``base_target`` up to 2**16, ``hop_scale`` up to 2**12,
``beta`` and ``mdf_floor`` up to 1.0); here each register is also written at its width's
maximum (a legal value: the register takes it), with the states and events of the random run
(their fields at 0, 1 and all ones among them)."""

from __future__ import annotations

import os
import random

from hw.nic.swift_config import SwiftConfig
from hw.nic.swift_engine import SwiftDatapath, SwiftOp
from sim.models.swift import SwiftDatapathModel
from tests.pipe_harness import check_groups_against_model, check_pipe_against_model
from tests.test_swift_engine import ev, random_vector, regs_of

SEED = int(os.environ.get("CC_SEED", "20251125"))


def test_registers_at_their_width_maxima_match_the_model():
    rng = random.Random(f"{SEED}-swift-edges")
    print(f"seed {SEED}")
    dp = SwiftDatapath(SwiftConfig())
    md = SwiftDatapathModel(dp)
    mx = {name: (1 << w) - 1 for name, w, _ in dp.regs}
    top = dict(mx, min_cwnd=1, init_cwnd=mx["max_cwnd"])
    mixed = dict(regs_of(dp), base_target=mx["base_target"], hop_scale=mx["hop_scale"],
                 ai=mx["ai"], beta=mx["beta"], mdf_floor=0, max_hops=mx["max_hops"],
                 retx_reset=1)
    # every target 0 (base, per hop and endpoint targets 0): the ratio's target-0 arm, with
    # beta 0.5 and no floor so that the cut is not clamped
    zero = dict(regs_of(dp), base_target=0, hop_scale=0, endpoint_target=0, max_hops=0,
                beta=1 << 15, mdf_floor=0)
    groups = []
    for regs in (top, mixed, zero):
        vecs = [random_vector(rng, dp, regs) for _ in range(60)]
        for state, _, _, _ in vecs[::5]:
            state["fcwnd"] = 0          # (a WRITE can make it: flow scaling's table end)
        groups.append((regs, vecs))
    check_groups_against_model(dp, md, groups)


def test_flow_scaling_table_end_reached_by_a_zero_window():
    """A window of 0 (a WRITE can make it) takes the flow-scaling table's entry for the largest
    exponent, ``(CW_BITS - 1) << FS_MANT`` (the model's index -16).  At the default
    ``fs_max_cwnd`` (100 packets) that entry is 0, as is a read past the table; with
    ``fs_max_cwnd`` 65535 packets the entry (windows of 32768 packets) is 2 cycles, so the
    index itself is checked: every state has ``fcwnd`` 0, against the model."""
    from hw.nic.swift_config import CW_BITS, FS_MANT
    rng = random.Random(f"{SEED}-swift-fs-end")
    print(f"seed {SEED}")
    dp = SwiftDatapath(SwiftConfig(fs_max_cwnd=65535.0))
    assert dp.fs_rom[(CW_BITS - 1) << FS_MANT] == 2        # hand-checked: fs(32768) in cycles
    md = SwiftDatapathModel(dp)
    regs = regs_of(dp)
    vecs = [random_vector(rng, dp, regs) for _ in range(40)]
    for state, _, _, _ in vecs:
        state["fcwnd"] = 0
    check_pipe_against_model(dp, md, regs, vecs)


def test_cut_ratio_at_targets_0_and_1_and_beta_above_one():
    """The cut's ratio and ``beta x ratio`` at their edges, worked by hand, on a flow whose two
    windows are 256 packets (2**24; flow scaling's target is 0 at and above 100 packets) and
    that may decrease:

    * targets of 1 cycle (``base_target`` 1, no hops; ``endpoint_target`` 1), delays of 2:
      ratio = 2**16 (2 - 1) / 2 = 2**15, beta 0.8 (52429): p = 26214, f = max(2**16 - p,
      mdf_floor 32768) = 39322, each window 256 x 39322 = 10,066,432 (a target of 1 is not a
      target of 0, whose ratio is 2**16 - 1);
    * an endpoint target of 0 (the saturated ratio 2**16 - 1), beta 1.0, no floor: p = 2**16 -
      1, f = 1, the endpoint window 2**24 x 1 >> 16 = 256 (above min_cwnd 66); the fabric
      window grows (delay 10 below a 1000-cycle target);
    * beta at its register's maximum 2**17 - 1 (above 1.0), no floor, an endpoint delay of
      4000 against 1000: ratio = 2**16 x 3000 / 4000 = 49152, beta x ratio = 6,442,401,792
      (above 2**32), p = 98303 > 2**16, f = max(2**16 - p, 0) = 0: the endpoint window is
      clamped to min_cwnd (66).

    Every field also against the bit-exact model."""
    dp = SwiftDatapath(SwiftConfig())
    md = SwiftDatapathModel(dp)
    base = dict(regs_of(dp), hop_scale=0, max_hops=0)
    assert base["min_cwnd"] == 66 and base["max_cwnd"] == 1 << 24
    state = {"pace": 0, "fcwnd": 1 << 24, "ecwnd": 1 << 24, "rtt": 100, "t_last": 0,
             "decreased": 0, "retx": 0, "target": 0}
    cases = [
        (dict(base, base_target=1, endpoint_target=1, beta=52429, mdf_floor=32768), 2, 2,
         {"fcwnd": 10_066_432, "ecwnd": 10_066_432}),
        (dict(base, base_target=1000, endpoint_target=0, beta=1 << 16, mdf_floor=0), 10, 5,
         {"ecwnd": 256}),
        (dict(base, base_target=1000, endpoint_target=1000, beta=(1 << 17) - 1, mdf_floor=0),
         10, 4000, {"ecwnd": 66}),
    ]
    groups = [(regs, [(state,) + ev(dp, SwiftOp.ACK, 500, fab, ep, 1, 1)[:2] + (7,)])
              for regs, fab, ep, _ in cases]
    outs = check_groups_against_model(dp, md, groups)
    for (_, _, _, want), out in zip(cases, outs, strict=True):
        assert {k: out[0][0][k] for k in want} == want, (want, out[0][0])
