"""pytest runners: the multi-flow engine with the toy datapath (top flow_engine_toy, 1024 flows)
on Verilator, through the generic engine testbench (cocotb_tests/flow_engine_tb.py)."""

from __future__ import annotations

import pytest

from cocotb_tests.infra.build import build_top, run_cocotb, run_length
from gateware.tops import TOPS

TB = "cocotb_tests.flow_engine_tb"
TOP = "flow_engine_toy"

#: The testbench writes only at mid-period, so inertial writes are safe; with them cocotb drives
#: the clock from C++ instead of a Python coroutine.
FAST_CLOCK = {"COCOTB_TRUST_INERTIAL_WRITES": "1"}


def engine_env(top: str, model_dp: str, events: str, seed: int, **extra) -> dict:
    """The environment of the generic engine testbench (datapath runners reuse it)."""
    return {"CC_TOP": top, "CC_MODEL_DP": model_dp, "CC_EVENTS": events,
            "CC_DEFAULT_SEED": str(seed), **FAST_CLOCK, **extra}


def build(top: str = TOP):
    return build_top(f"{top}_tb", TOPS[top].build())


@pytest.mark.cocotb
def test_random_events():
    run_cocotb(build(), TB, "random_events",
               env=engine_env(TOP, "sim.models.flow_datapath:ToyDatapathModel",
                              run_length(20_000, 150_000, "CC_EVENTS"), 11))


@pytest.mark.cocotb
def test_saturation():
    run_cocotb(build(), TB, "saturation",
               env=engine_env(TOP, "sim.models.flow_datapath:ToyDatapathModel", "0", 12))
