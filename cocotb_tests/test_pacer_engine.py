"""pytest runner: the multi-flow pacer top (``pacer_1k``, 1024 flows) on Verilator through
cocotb_tests/pacer_tb.py, every grant compared with the model every cycle.

As the DCQCN and QCN engine runners, it builds the top with an 8192-slot timer wheel (4096-cycle
horizon) instead of the top's 65536 / 32768 to keep the Verilator build short
(``CC_FULL_WHEEL=1`` builds the top as it is).  It runs with ``CC_LONG=1`` only (the
build is about a minute of CPU, beyond make test's time budget; by default the
Amaranth-simulation tests of tests/test_pacer.py cover the same RTL at 16 flows every output
every cycle): 120,000 input events (plus one size
report per byte-mode grant) over the 1024 flows; ``CC_EVENTS`` overrides both.  The same run on
the byte-mode build (``pacer_1k_bytes``: half of the flows pace bytes, every grant of theirs
answered by a size report) likewise.  ``CC_ENGINE=0`` skips them with the other engine tops.
"""

from __future__ import annotations

import os

import pytest

from cocotb_tests.infra.build import long_runs, run_cocotb, run_length
from cocotb_tests.test_flow_engine import algo_build, engine_env

pytestmark = pytest.mark.skipif(
    os.environ.get("CC_ENGINE", "1") in ("", "0"),
    reason="engine tops on Verilator skipped (CC_ENGINE=0)")

TOP = "pacer_1k"
MODEL_DP = "sim.models.pacer:PacerDatapathModel"
LONG_EVENTS = 120_000


@pytest.mark.cocotb
@pytest.mark.parametrize("top, seed", [(TOP, 51), ("pacer_1k_bytes", 53)])
def test_pacer_random_grants(top, seed):
    if not long_runs() and "CC_EVENTS" not in os.environ:
        pytest.skip(f"CC_LONG=1 (or CC_EVENTS=N) runs the {top} top on Verilator")
    b, extra = algo_build(top)
    run_cocotb(b, "cocotb_tests.pacer_tb", "random_grants",
               env=engine_env(top, MODEL_DP, run_length(1_500, LONG_EVENTS, "CC_EVENTS"), seed,
                              **extra))
