"""pytest runners: the L3QCN congestion point (RoCEv2 and QCN priorities) and the ingress
ToR's converter on Verilator."""

from __future__ import annotations

import os

import pytest

from cocotb_tests.infra.build import build_top, run_cocotb
from gateware.tops import TOPS

TB = "cocotb_tests.l3qcn_tb"


@pytest.mark.cocotb
@pytest.mark.parametrize("top, seed", [("l3qcn_cp_roce", 93), ("l3qcn_cp_qcn", 94)])
def test_cp(top, seed):
    run_cocotb(build_top(top, TOPS[top].build()), TB, "cp_random_frames",
               env={"CC_TOP": top, "CC_DEFAULT_SEED": str(seed),
                    "CC_FRAMES": os.environ.get("CC_FRAMES", "20000")})


@pytest.mark.cocotb
def test_tor():
    run_cocotb(build_top("l3qcn_tor", TOPS["l3qcn_tor"].build()), TB, "tor_random_packets",
               env={"CC_TOP": "l3qcn_tor", "CC_DEFAULT_SEED": "95",
                    "CC_PACKETS": os.environ.get("CC_PACKETS", "3000")})
