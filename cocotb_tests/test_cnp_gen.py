"""pytest runners: the CNP generator tops on Verilator."""

from __future__ import annotations

import os

import pytest

from cocotb_tests.infra.build import build_top, run_cocotb
from gateware.tops import TOPS

TB = "cocotb_tests.cnp_gen_tb"
CASES = ["golden_frame", "random_frames", "throughput_and_latency"]


@pytest.mark.cocotb
@pytest.mark.parametrize("top", ["cnp_gen_ipv4", "cnp_gen_ipv6"])
def test_cnp_gen(top):
    t = TOPS[top]
    run_cocotb(build_top(top, t.build()), TB, CASES, tag="all",
               env={"CC_CONFIG": t.config.to_json(),
                    "CC_FRAMES": os.environ.get("CC_FRAMES", "300")})
