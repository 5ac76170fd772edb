"""pytest runner: the CNM generator top on Verilator."""

from __future__ import annotations

import os

import pytest

from cocotb_tests.infra.build import build_top, run_cocotb
from gateware.tops import TOPS

TB = "cocotb_tests.cnm_gen_tb"


@pytest.mark.cocotb
def test_cnm_gen():
    t = TOPS["cnm_gen"]
    run_cocotb(build_top("cnm_gen", t.build()), TB, ["random_frames", "back_to_back"],
               tag="all", env={"CC_CONFIG": t.config.to_json(), "CC_DEFAULT_SEED": "81",
                               "CC_FRAMES": os.environ.get("CC_FRAMES", "3000")})
