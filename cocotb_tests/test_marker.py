"""pytest runners: build each marker configuration once, run the cocotb testbench on it."""

from __future__ import annotations

import pytest

from cocotb_tests.infra.build import build_top, run_cocotb
from hw.switch.marker import EgressMarker
from hw.switch.marker_config import MarkerConfig

TB = "cocotb_tests.marker_tb"

#: Test configurations: small buffers so that random traffic reaches every threshold and limit.
CONFIGS = {
    # 1 port x 1 priority, LDCP profile, draft comparisons, marking at enqueue.
    "1x1_ldcp": MarkerConfig.ldcp(k_min=20_000, k_max=60_000, p_max=0.3, k_drop=30_000,
                                  buf_max=100_000),
    # 8 x 8, DCQCN profile, dequeue marking, a shared pool smaller than the sum of the queues.
    "8x8_dcqcn": MarkerConfig.dcqcn(ports=8, priorities=8, k_min=5_000, k_max=40_000,
                                    p_max=0.1, buf_max=60_000, shared_buffer=150_000,
                                    sample_at="dequeue"),
    # 6 x 3 (indices that do not fill their fields), DCTCP step, HPCC strict comparisons,
    # narrower draws and lengths.
    "6x3_dctcp_gt": MarkerConfig.dctcp(ports=6, priorities=3, k=30_000, buf_max=50_000,
                                       shared_buffer=120_000, compare="gt", len_width=12,
                                       draw_bits=12),
}

DIRECTED = ["ramp_boundaries", "not_ect_threshold", "buffer_limits",
            "dequeue_sampling_and_counters", "throughput_and_latency", "marking_statistics",
            "reset_clears_state"]


def build(name: str):
    return build_top(f"marker_{name}", EgressMarker(CONFIGS[name]))


@pytest.mark.cocotb
@pytest.mark.parametrize("name", CONFIGS)
def test_random_traffic(name):
    seed = {"1x1_ldcp": 101, "8x8_dcqcn": 202, "6x3_dctcp_gt": 303}[name]
    run_cocotb(build(name), TB, "random_traffic",
               env={"CC_CONFIG": CONFIGS[name].to_json(), "CC_EVENTS": "100000",
                    "CC_DEFAULT_SEED": str(seed)})


@pytest.mark.cocotb
@pytest.mark.parametrize("name", ["1x1_ldcp", "6x3_dctcp_gt"])
def test_directed(name):
    run_cocotb(build(name), TB, DIRECTED, env={"CC_CONFIG": CONFIGS[name].to_json()},
               tag="directed")
