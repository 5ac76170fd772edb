"""pytest runners: the QCN congestion point on Verilator.

Every test runs on ONE build, the default top ``qcn_cp`` (its configuration in
``CC_BUILD_CONFIG``): the knobs a test changes (the sampling table, the jitter) are run-time
registers, which the testbench writes before the first frame (``qcn_cp_tb.CpTB.write_config``).
"""

from __future__ import annotations

import os

import pytest

from cocotb_tests.infra.build import build_top, run_cocotb
from gateware.tops import TOPS
from hw.switch.qcn_cp_config import SAMPLE_TABLE, QcnCpConfig

TB = "cocotb_tests.qcn_cp_tb"
TOP = TOPS["qcn_cp"]

#: The default congestion point with the sampling table scaled down 16x (so that 40,000 frames
#: give thousands of samples) and the jitter at its maximum.
RANDOM_CFG = QcnCpConfig(sample_table=tuple(s // 16 for s in SAMPLE_TABLE), jitter=0.5)
#: known-answer vectors (IEEE 802.1Qau equations, worked by hand): every frame is a sample, no
#: jitter.
KNOWN_CFG = QcnCpConfig(sample_table=(1,) * 8, jitter=0.0)

#: the build-time fields (widths, the LFSR): a test's configuration must keep the build's
STRUCTURAL = ("occ_width", "len_width", "draw_bits", "lfsr")


def _run(testcase: str, cfg: QcnCpConfig, tag: str, **env):
    assert all(getattr(cfg, f) == getattr(TOP.config, f) for f in STRUCTURAL), \
        "a structural field differs from the qcn_cp top's: this test needs its own build"
    run_cocotb(build_top("qcn_cp", TOP.build()), TB, testcase, tag=tag,
               env={"CC_BUILD_CONFIG": TOP.config.to_json(), "CC_CONFIG": cfg.to_json(),
                    **env})


@pytest.mark.cocotb
def test_random_frames():
    # 38,400 random frames and 8 x 200 steered ones (one queue level per qntzFb band, so that
    # every band is visited whatever the seed: with the build's first interval, 153,600 bytes,
    # the random walk alone missed some middle bands for seeds 61, 63 and 64).
    _run("random_frames", RANDOM_CFG, "random_scaled", CC_DEFAULT_SEED="65",
         CC_FRAMES=os.environ.get("CC_FRAMES", "38400"))


@pytest.mark.cocotb
def test_known_answers():
    _run("known_answers", KNOWN_CFG, "known_answers")


@pytest.mark.cocotb
def test_default_top_random_frames():
    _run("random_frames", TOP.config, "random_default", CC_DEFAULT_SEED="62",
         CC_FRAMES=os.environ.get("CC_FRAMES_DEFAULT_TOP", "10000"), CC_MIN_SAMPLES="20",
         CC_ALL_BANDS="0")
