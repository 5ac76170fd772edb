"""pytest runner: the engine tops' AXI4-Lite front end with per-flow windows
(:class:`hw.lib.axi_lite.AxiLiteRegs` around :class:`hw.nic.engine_regs.EngineRegs`) on
Verilator, driven by cocotbext-axi's ``AxiLiteMaster`` (cocotb_tests/engine_axil_tb.py).

With CC_LONG=1 (a minute of CPU per build, beyond make test's budget; by default the
window logic is checked in the Amaranth simulator, tests/test_engine_window.py): the QCN
engine (its top's configuration: the pipelined datapath of latency 6, so the same-flow
hazards of a multi-cycle modify stage are exercised) with 64 flows
and a 512-slot timer wheel (256-cycle horizon), the cheapest engine build (about a minute of
CPU to Verilate, measured; the run itself is a few seconds); and the DCQCN
engine (pipelined, latency 12) with 64 flows and with 1024 flows (8192-slot wheel) and runs
5,000 instead of 600 events in ``hot_flow``.  ``CC_ENGINE=0`` skips them, as it skips the other
engine tops on Verilator (cocotb_tests/test_flow_engine.py)."""

from __future__ import annotations

import os

import pytest

from cocotb_tests.infra.build import build_top, long_runs, run_cocotb, run_length
from gateware.tops import TOPS
from hw.lib.axi_lite import AxiLiteRegs

TB = "cocotb_tests.engine_axil_tb"
CASES = ["registers", "hot_flow", "back_to_back"]
MODEL_DP = {"dcqcn_engine_1k": "sim.models.dcqcn:DcqcnDatapathModel",
            "qcn_engine_1k": "sim.models.qcn:QcnDatapathModel"}
#: (top, flows, wheel slots, wheel horizon); the first is the default run
RUNS = [("qcn_engine_1k", 64, 512, 256), ("dcqcn_engine_1k", 64, 512, 256),
        ("dcqcn_engine_1k", 1024, 8192, 4096)]

pytestmark = pytest.mark.skipif(
    os.environ.get("CC_ENGINE", "1") in ("", "0"),
    reason="engine tops on Verilator skipped (CC_ENGINE=0)")


def axil_build(top: str, flows: int, slots: int, horizon: int):
    """(build, environment) of ``top`` resized to ``flows`` flows, behind AXI4-Lite."""
    cfg = TOPS[top].config
    cfg = cfg.replace(engine=cfg.engine.replace(n_flows=flows, wheel_slots=slots,
                                                wheel_horizon=horizon))
    name = f"axil_{top.rsplit('_', 1)[0]}_{flows}"
    build = build_top(name, AxiLiteRegs(TOPS[top].factory(cfg), cfg.register_map()))
    return build, {"CC_TOP": top, "CC_ENGINE_CONFIG": cfg.to_json(),
                   "CC_MODEL_DP": MODEL_DP[top]}


@pytest.mark.cocotb
@pytest.mark.parametrize("run", range(len(RUNS)),
                         ids=[f"{t.rsplit('_', 1)[0]}_{n}" for t, n, _, _ in RUNS])
def test_engine_axil(run):
    if not long_runs():
        # the Verilator build is about a minute of CPU: beyond make test's time budget; the
        # window logic is checked every cycle in the Amaranth simulator by default
        # (tests/test_engine_window.py)
        pytest.skip("CC_LONG=1 runs the engines behind AXI4-Lite on Verilator")
    build, env = axil_build(*RUNS[run])
    run_cocotb(build, TB, CASES, tag="axil",
               env={**env, "CC_DEFAULT_SEED": str(41 + run),
                    "CC_EVENTS": run_length(600, 5000, "CC_EVENTS")})
