"""pytest runners: the L3QCN tables (CNP-QP, flow-ID mapping) on Verilator."""

from __future__ import annotations

import os

import pytest

from cocotb_tests.infra.build import build_top, run_cocotb
from gateware.tops import TOPS

TB = "cocotb_tests.l3qcn_tables_tb"


#: commands per table: halved by default (the suite's budget), the full run with CC_LONG=1
LONG = os.environ.get("CC_LONG", "") not in ("", "0")


@pytest.mark.cocotb
@pytest.mark.parametrize("top, seed, commands", [
    ("cnp_qp_table", 91, 30_000 if LONG else 15_000),
    ("flow_id_table", 92, 10_000 if LONG else 5_000)])
def test_table(top, seed, commands):
    run_cocotb(build_top(top, TOPS[top].build()), TB, ["random_commands", "one_per_clock"],
               tag="all", env={"CC_TOP": top, "CC_DEFAULT_SEED": str(seed),
                               "CC_COMMANDS": os.environ.get("CC_COMMANDS", str(commands))})
