"""pytest runner: the AXI4-Lite register slave around the marker and the LDCP window engine,
on Verilator, driven by cocotbext-axi (cocotb_tests/axi_lite_tb.py)."""

from __future__ import annotations

import pytest

from cocotb_tests.infra.build import build_top, run_cocotb
from gateware.tops import TOPS
from hw.lib.axi_lite import AxiLiteRegs


@pytest.mark.cocotb
@pytest.mark.parametrize("top", ["marker_1x1", "ldcp_window_g8"])
def test_axi_lite(top):
    build = build_top(f"axil_{top}", AxiLiteRegs(TOPS[top].build()))
    run_cocotb(build, "cocotb_tests.axi_lite_tb", ["registers", "back_to_back"],
               env={"CC_TOP": top}, tag="axil")
