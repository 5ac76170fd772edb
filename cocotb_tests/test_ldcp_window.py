"""pytest runners: build LDCP window tops once, run the cocotb testbench on them.

Three parameter configurations (gamma 1/4, 1/8, 1/16 with different alpha, beta, m and cap) on
two Verilator builds, to keep the suite's CPU time down: the exported tops ``ldcp_window_g4``
and ``ldcp_window_g16`` each run with their own parameters, and the ``ldcp_window_g8`` set runs
on the ``g16`` build through the register interface (ACKs limited to its m = 8).  The three
tops differ only in these register reset values and in m (field widths).
"""

from __future__ import annotations

import pytest

from cocotb_tests.infra.build import build_top, run_cocotb
from gateware.tops import TOPS
from hw.nic.ldcp_window import LdcpWindow

TB = "cocotb_tests.ldcp_window_tb"

#: (parameter set, build it runs on, seed)
RUNS = {
    "g4": ("ldcp_window_g4", "ldcp_window_g4", 41),
    "g8": ("ldcp_window_g8", "ldcp_window_g16", 81),
    "g16": ("ldcp_window_g16", "ldcp_window_g16", 161),
}
DIRECTED = ["corners", "throughput_and_latency", "timer_long_run"]


def build(name: str):
    return build_top(name, LdcpWindow(TOPS[name].config))


@pytest.mark.cocotb
@pytest.mark.parametrize("run", RUNS)
def test_random_acks(run):
    params, top, seed = RUNS[run]
    env = {"CC_CONFIG": TOPS[top].config.to_json(), "CC_EVENTS": "100000",
           "CC_DEFAULT_SEED": str(seed)}
    if params != top:
        env["CC_PARAMS"] = TOPS[params].config.to_json()
    run_cocotb(build(top), TB, "random_acks", env=env, tag=f"random_{run}")


@pytest.mark.cocotb
@pytest.mark.parametrize("top", ["ldcp_window_g4", "ldcp_window_g16"])
def test_directed(top):
    run_cocotb(build(top), TB, DIRECTED, env={"CC_CONFIG": TOPS[top].config.to_json()},
               tag="directed")
