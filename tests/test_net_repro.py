"""Reproductions of the papers' claims on the network simulator, each from a bundled scenario
(``sim/scenarios/``) run as it is; ``docs/results.md`` has the measured figures.

Reproduction 1 (the DCTCP sawtooth) is ``tests/test_net_dctcp.py``.
"""

from __future__ import annotations

import functools

import pytest

from sim.net.engine import PS_PER_S, PS_PER_US
from sim.scenario import load
from sim.scenario.runner import run


@functools.cache
def result(scenario: str, algorithm: str):
    return run(load(scenario), algorithm).result


def gbps(series: list[int], sample_ps: int, a: int, b: int) -> float:
    """Mean throughput between samples a and b of a cumulative byte series."""
    return (series[b] - series[a]) * 8 * PS_PER_S / ((b - a) * sample_ps) / 1e9


def jain(xs: list[float]) -> float:
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


def test_dcqcn_flows_converge_to_their_fair_share():
    # Reproduction 2: 4 flows into 40 Gb/s, paper profile and marking, 20 ms.  Over the last
    # quarter each flow is near C/N = 10 Gb/s and the queue sits inside the RED ramp.
    res = result("dcqcn_fairness", "dcqcn")
    n = len(next(iter(res.queue_series.values())))
    a, b = 3 * n // 4, n - 1
    rates = [gbps(s, res.sample_ps, a, b) for s in res.flow_series.values()]
    assert jain(rates) >= 0.95, rates
    assert sum(rates) >= 0.95 * 40, rates
    assert all(abs(r - 10) <= 3.5 for r in rates), rates
    q = next(iter(res.queue_series.values()))[a:b]
    mean = sum(q) / len(q)
    assert 5_000 <= mean <= 200_000, mean            # inside [K_min, K_max]
    assert res.counters["drops_buffer"] == 0


def victim_rates(res) -> tuple[float, float]:
    """The victim's throughput before the hot spot starts (0-100 us) and over the second half."""
    victim = next(f for f in res.flows if f.tag == "victim")
    s = res.flow_series[victim.flow_id]
    n = len(s)
    return (gbps(s, res.sample_ps, 0, 100 * PS_PER_US // res.sample_ps),
            gbps(s, res.sample_ps, n // 2, n - 1))


def test_pfc_pauses_spread_to_a_victim_that_avoids_the_hot_spot():
    # Reproduction 6: with PFC (DCQCN), pauses climb from the hot spot's leaf through the spine
    # to the victim's leaf; the victim's throughput collapses although its own path is idle.
    before, after = victim_rates(result("pfc_spreading", "dcqcn"))
    c = result("pfc_spreading", "dcqcn").counters
    assert c["pause_frames"] > 0 and c["paused_ps"] > 0 and c["drops_buffer"] == 0, c
    assert before >= 80 and after <= 0.5 * before, (before, after)


@pytest.mark.parametrize("algorithm", ["dctcp"])
def test_without_pfc_the_victim_keeps_its_throughput(algorithm):
    before, after = victim_rates(result("pfc_spreading", algorithm))
    c = result("pfc_spreading", algorithm).counters
    assert c["pause_frames"] == 0
    assert after >= 90, (before, after)


def test_l3qcn_switch_cnps_arrive_sooner_and_lower_the_peak():
    # Reproduction 7: switch-built CNPs leave the congested switch at once; receiver-built ones
    # cross three more hops to the receiver and three back (2 us of propagation each).
    rx_built, sw_built = result("l3qcn_chain", "dcqcn"), result("l3qcn_chain", "l3qcn")
    a, b = rx_built.counters, sw_built.counters
    assert a["cnps_by_switch"] == 0 and b["cnps_by_switch"] == b["cnps"] > 0
    delay_rx = a["feedback_delay_ps_sum"] / a["feedback_count"]
    delay_sw = b["feedback_delay_ps_sum"] / b["feedback_count"]
    assert delay_sw + 12 * PS_PER_US <= delay_rx, (delay_sw, delay_rx)
    peak_rx = max(rx_built.queue_series["s0.p0"])
    peak_sw = max(sw_built.queue_series["s0.p0"])
    assert peak_sw <= 0.75 * peak_rx, (peak_sw, peak_rx)
