"""pytest runners: the DCQCN notification point on Verilator (both pacing rules)."""

from __future__ import annotations

import os

import pytest

from cocotb_tests.infra.build import build_top, run_cocotb
from hw.nic.dcqcn_np import DcqcnNp
from hw.nic.dcqcn_np_config import DcqcnNpConfig

TB = "cocotb_tests.dcqcn_np_tb"

#: 6 QPs, short N (25 and 40 cycles at 156.25 MHz) so that windows and checks expire thousands
#: of times.
CONFIGS = {
    "paper": DcqcnNpConfig(flows=6, rule="paper", min_time_between_cnps=0.16, timer_width=8),
    "periodic": DcqcnNpConfig(flows=6, rule="periodic", min_time_between_cnps=0.256,
                              timer_width=8),
}


@pytest.mark.cocotb
@pytest.mark.parametrize("rule", CONFIGS)
def test_random_packets(rule):
    cfg = CONFIGS[rule]
    build = build_top(f"dcqcn_np_{rule}_tb", DcqcnNp(cfg))
    run_cocotb(build, TB, "random_packets",
               env={"CC_CONFIG": cfg.to_json(), "CC_EVENTS": os.environ.get("CC_EVENTS", "30000"),
                    "CC_DEFAULT_SEED": str(7 + len(rule))})
