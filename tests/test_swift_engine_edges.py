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
from hw.nic.swift_engine import SwiftDatapath
from sim.models.swift import SwiftDatapathModel
from tests.pipe_harness import check_pipe_against_model
from tests.test_swift_engine import random_vector, regs_of

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
    for regs in (top, mixed, zero):
        vecs = [random_vector(rng, dp, regs) for _ in range(60)]
        for state, _, _, _ in vecs[::5]:
            state["fcwnd"] = 0          # (a WRITE can make it: flow scaling's table end)
        check_pipe_against_model(dp, md, regs, vecs)


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
