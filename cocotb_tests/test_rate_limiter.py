"""pytest runner: the rate limiter top on Verilator."""

from __future__ import annotations

import os

import pytest

from cocotb_tests.infra.build import build_top, run_cocotb
from gateware.tops import TOPS


@pytest.mark.cocotb
def test_rate_limiter_random_traffic():
    top = TOPS["rate_limiter_4"]
    run_cocotb(build_top("rate_limiter_4", top.build()), "cocotb_tests.rate_limiter_tb",
               "random_traffic", env={"CC_CONFIG": top.config.to_json(),
                                      "CC_EVENTS": os.environ.get("CC_EVENTS", "30000")})
