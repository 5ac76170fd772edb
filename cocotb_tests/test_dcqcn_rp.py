"""pytest runners: the DCQCN reaction point on Verilator, one build per profile."""

from __future__ import annotations

import pytest

from cocotb_tests.infra.build import build_top, run_cocotb, run_length
from hw.nic.dcqcn_config import PROFILES, DcqcnRpConfig
from hw.nic.dcqcn_rp import DcqcnRp

TB = "cocotb_tests.dcqcn_rp_tb"


def config(profile: str) -> DcqcnRpConfig:
    """The profile with short timers (at 156.25 MHz: T 0.64 µs = 100 cycles, K 0.32 µs = 50,
    P 0.192 µs = 30, B <= 30000 bytes), so that a random run (25,000 events per profile, 10^5
    over the four, by default; 100,000 per profile under ``CC_LONG``: ~4 M cycles) expires
    every timer and counter thousands of times."""
    base = DcqcnRpConfig.profile(profile)
    return base.replace(rpg_time_reset=0.64, dce_tcp_rtt=0.32, rate_reduce_monitor_period=0.192,
                        rpg_byte_reset=min(base.rpg_byte_reset, 30_000))


#: The testbench writes only at mid-period, so inertial writes are safe; with them cocotb drives
#: the clock from C++ instead of a Python coroutine (~10x faster over long idle periods).
FAST_CLOCK = {"COCOTB_TRUST_INERTIAL_WRITES": "1"}


def build(profile: str, cfg: DcqcnRpConfig):
    return build_top(f"dcqcn_rp_{profile.replace('-', '_')}_tb", DcqcnRp(cfg))


@pytest.mark.cocotb
@pytest.mark.parametrize("profile", PROFILES)
def test_random_events(profile):
    cfg = config(profile)
    run_cocotb(build(profile, cfg), TB, "random_events",
               env={"CC_CONFIG": cfg.to_json(),
                    "CC_EVENTS": run_length(25_000, 100_000, "CC_EVENTS"),
                    "CC_DEFAULT_SEED": str(1000 + PROFILES.index(profile)), **FAST_CLOCK})


@pytest.mark.cocotb
@pytest.mark.parametrize("profile", PROFILES)
def test_profile_rule(profile):
    cfg = config(profile)
    run_cocotb(build(profile, cfg), TB, "profile_rule",
               env={"CC_CONFIG": cfg.to_json(), "CC_PROFILE": profile, **FAST_CLOCK})
