"""pytest runners: the QCN congestion point on Verilator."""

from __future__ import annotations

import os

import pytest

from cocotb_tests.infra.build import build_top, run_cocotb
from gateware.tops import TOPS
from hw.switch.qcn_cp import QcnCp
from hw.switch.qcn_cp_config import SAMPLE_TABLE, QcnCpConfig

TB = "cocotb_tests.qcn_cp_tb"

#: The default congestion point with the sampling table scaled down 16x (so that 40,000 frames
#: give thousands of samples) and the jitter at its maximum.
RANDOM_CFG = QcnCpConfig(sample_table=tuple(s // 16 for s in SAMPLE_TABLE), jitter=0.5)
#: known-answer vectors (IEEE 802.1Qau equations, worked by hand): every frame is a sample, no
#: jitter.
KNOWN_CFG = QcnCpConfig(sample_table=(1,) * 8, jitter=0.0)


@pytest.mark.cocotb
def test_random_frames():
    run_cocotb(build_top("qcn_cp_random_tb", QcnCp(RANDOM_CFG)), TB, "random_frames",
               env={"CC_CONFIG": RANDOM_CFG.to_json(), "CC_DEFAULT_SEED": "61",
                    "CC_FRAMES": os.environ.get("CC_FRAMES", "40000")})


@pytest.mark.cocotb
def test_known_answers():
    run_cocotb(build_top("qcn_cp_known_tb", QcnCp(KNOWN_CFG)), TB, "known_answers",
               env={"CC_CONFIG": KNOWN_CFG.to_json()})


@pytest.mark.cocotb
def test_default_top_random_frames():
    t = TOPS["qcn_cp"]
    run_cocotb(build_top("qcn_cp", t.build()), TB, "random_frames",
               env={"CC_CONFIG": t.config.to_json(), "CC_DEFAULT_SEED": "62",
                    "CC_FRAMES": os.environ.get("CC_FRAMES_DEFAULT_TOP", "10000"),
                    "CC_MIN_SAMPLES": "20", "CC_ALL_BANDS": "0"})
