"""pytest runners: the QCN reaction point on Verilator.

Two builds, the tops ``qcn_rp`` (10 Gb/s) and ``qcn_rp_jitter`` (100 Gb/s: the rate width is
structural): a test's knobs are run-time registers, written by the testbench after reset
(``qcn_rp_tb.RpTB.write_config``).
"""

from __future__ import annotations

import os

import pytest

from cocotb_tests.infra.build import build_top, run_cocotb
from gateware.tops import TOPS
from hw.nic.qcn_rp_config import QcnRpConfig

TB = "cocotb_tests.qcn_rp_tb"
#: The testbench writes only at mid-period (see the DCQCN RP runner).
FAST_CLOCK = {"COCOTB_TRUST_INERTIAL_WRITES": "1"}

#: Short timer (0.32 µs = 50 cycles at 156.25 MHz) and byte counter (20 kB) so that 40,000
#: events expire both thousands of times; jitter on; the second set reaches the TR > 10 CR
#: guard (Gd 1/64, MinDecFac 1/16).  Each runs on the top of its line rate.
CONFIGS = {
    "mib_short": QcnRpConfig(time_reset_us=0.32, byte_reset=20_000, jitter=0.15),
    "guard": QcnRpConfig(line_rate_mbps=100_000, time_reset_us=0.32, byte_reset=20_000,
                         jitter=0.3, gd=6, min_dec_fac=0.0625, hai_rate_mbps=500),
}
TOP_OF = {"mib_short": "qcn_rp", "guard": "qcn_rp_jitter"}


def _run(top: str, testcase: str, cfg: QcnRpConfig, tag: str, **env):
    t = TOPS[top]
    b = t.config
    # the build-time fields (and the reset state, CR = TR = line rate) must be the top's
    assert (cfg.line_rate_mbps, cfg.rate_width, cfg.byte_width, cfg.draw_bits, cfg.lfsr,
            cfg.clk_hz) == (b.line_rate_mbps, b.rate_width, b.byte_width, b.draw_bits, b.lfsr,
                            b.clk_hz) and cfg.timer_width <= b.timer_width, \
        f"a structural field differs from the {top} top's: this test needs its own build"
    run_cocotb(build_top(top, t.build()), TB, testcase, tag=tag,
               env={"CC_BUILD_CONFIG": b.to_json(), "CC_CONFIG": cfg.to_json(), **env,
                    **FAST_CLOCK})


@pytest.mark.cocotb
@pytest.mark.parametrize("name", CONFIGS)
def test_random_events(name):
    _run(TOP_OF[name], "random_events", CONFIGS[name], f"random_{name}",
         CC_EVENTS=os.environ.get("CC_EVENTS", "40000"),
         CC_DEFAULT_SEED=str(71 + list(CONFIGS).index(name)),
         CC_EXPECT_GUARD=str(int(name == "guard")))


@pytest.mark.cocotb
def test_known_answers():
    _run("qcn_rp", "known_answers", TOPS["qcn_rp"].config, "known_answers")
