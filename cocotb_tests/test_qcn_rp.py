"""pytest runners: the QCN reaction point on Verilator."""

from __future__ import annotations

import os

import pytest

from cocotb_tests.infra.build import build_top, run_cocotb
from gateware.tops import TOPS
from hw.nic.qcn_rp import QcnRp
from hw.nic.qcn_rp_config import QcnRpConfig

TB = "cocotb_tests.qcn_rp_tb"
#: The testbench writes only at mid-period (see the DCQCN RP runner).
FAST_CLOCK = {"COCOTB_TRUST_INERTIAL_WRITES": "1"}

#: Short timer (0.32 µs = 50 cycles at 156.25 MHz) and byte counter (20 kB) so that 40,000
#: events expire both thousands of times; jitter on; the second set reaches the TR > 10 CR
#: guard (Gd 1/64, MinDecFac 1/16).
CONFIGS = {
    "mib_short": QcnRpConfig(time_reset_us=0.32, byte_reset=20_000, jitter=0.15),
    "guard": QcnRpConfig(line_rate_mbps=100_000, time_reset_us=0.32, byte_reset=20_000,
                         jitter=0.3, gd=6, min_dec_fac=0.0625, hai_rate_mbps=500),
}


@pytest.mark.cocotb
@pytest.mark.parametrize("name", CONFIGS)
def test_random_events(name):
    cfg = CONFIGS[name]
    run_cocotb(build_top(f"qcn_rp_{name}_tb", QcnRp(cfg)), TB, "random_events",
               env={"CC_CONFIG": cfg.to_json(), "CC_EVENTS": os.environ.get("CC_EVENTS", "40000"),
                    "CC_DEFAULT_SEED": str(71 + list(CONFIGS).index(name)),
                    "CC_EXPECT_GUARD": str(int(name == "guard")), **FAST_CLOCK})


@pytest.mark.cocotb
def test_known_answers():
    t = TOPS["qcn_rp"]
    run_cocotb(build_top("qcn_rp", t.build()), TB, "known_answers",
               env={"CC_CONFIG": t.config.to_json(), **FAST_CLOCK})
