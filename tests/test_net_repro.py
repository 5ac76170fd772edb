"""Reproductions of the papers' claims on the network simulator, each from a bundled scenario
(``sim/scenarios/``) run as it is; ``docs/results.md`` has the measured figures.

Reproduction 1 (the DCTCP sawtooth) is ``tests/test_net_dctcp.py``.
"""

from __future__ import annotations

import functools
import statistics

import pytest

from sim.net.algorithms import LdcpParams
from sim.net.engine import PS_PER_S, PS_PER_US
from sim.scenario import load
from sim.scenario.metrics import jain, window_mechanism
from sim.scenario.runner import build, run


@functools.cache
def result(scenario: str, algorithm: str):
    return run(load(scenario), algorithm).result


def gbps(series: list[int], sample_ps: int, a: int, b: int) -> float:
    """Mean throughput between samples a and b of a cumulative byte series."""
    return (series[b] - series[a]) * 8 * PS_PER_S / ((b - a) * sample_ps) / 1e9


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


@pytest.mark.parametrize("algorithm", ["ldcp", "dctcp"])
def test_without_pfc_the_victim_keeps_its_throughput(algorithm):
    before, after = victim_rates(result("pfc_spreading", algorithm))
    c = result("pfc_spreading", algorithm).counters
    assert c["pause_frames"] == 0 and c["drops_buffer"] == 0, c
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
    peak_rx = max(rx_built.queue_series["s0->s1"])
    peak_sw = max(sw_built.queue_series["s0->s1"])
    assert peak_sw <= 0.75 * peak_rx, (peak_sw, peak_rx)


def pawa_fixed_point(p: LdcpParams, bdp: float, n: int, mtu: int) -> float:
    """The queue (bytes) at which PAWA's expected per-ACK change is zero on the WRED ramp:
    ``(1 - p(q)) alpha / cw = p(q) beta`` with ``cw = (BDP + q / MTU) / N`` (bisection; written
    from the draft's equations, independent of the simulator)."""
    def drift(q):
        prob = p.pmax * (q - p.kmin_bytes) / (p.kmax_bytes - p.kmin_bytes)
        cw = (bdp + q / mtu) / n
        return (1 - prob) * p.alpha / cw - prob * p.beta
    lo, hi = float(p.kmin_bytes), float(p.kmax_bytes)
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if drift(mid) > 0 else (lo, mid)
    return lo


def test_ldcp_long_flows_hold_a_small_stable_queue():
    # Reproduction 3: 16 long flows, 100 Gb/s, base RTT 8 us + serialization (BDP ~102 packets).
    scn = load("ldcp_longflows")
    res = result("ldcp_longflows", "ldcp")
    q = next(iter(res.queue_series.values()))
    n = len(q)
    half = q[n // 2:]
    mean, sd = statistics.mean(half), statistics.pstdev(half)
    rtt_ps = 4 * 2 * PS_PER_US + 2 * 80_000 + 2 * 5_120          # links, MTU and ACK per hop
    bdp = 100e9 * rtt_ps / PS_PER_S / 8 / 1000
    flows = len(res.flow_series)
    target = pawa_fixed_point(scn.params["ldcp"], bdp, flows, 1000)
    assert abs(mean - target) <= 0.15 * target, (mean, target)
    assert sd <= 0.1 * mean, (sd, mean)                       # stable: no sawtooth
    rates = [gbps(s, res.sample_ps, n // 2, n - 1) for s in res.flow_series.values()]
    assert sum(rates) >= 98, rates
    assert jain(rates) >= 0.95, rates
    windows = [statistics.mean(w[n // 2:]) for w in res.window_series.values()]
    fair = (bdp + mean / 1000) / flows
    assert abs(statistics.mean(windows) - fair) <= 0.1 * fair, (windows, fair)
    assert res.counters["drops_buffer"] == 0


def test_ldcp_survives_massive_incast_without_pfc_where_dctcp_overflows():
    # Reproduction 4: 256 x 32 KB at once next to 2 long flows, no PFC.
    ldcp, dctcp = result("ldcp_incast", "ldcp"), result("ldcp_incast", "dctcp")
    c = ldcp.counters
    buf_max = load("ldcp_incast").switch.queue_bytes
    assert c["flows_below_one_packet"] >= 100, c              # sub-1 windows, timer-paced
    assert c["drops_buffer"] == 0 and c["pause_frames"] == 0, c   # no ECT packet dropped
    assert c["drops_not_ect_at_k"] > 0                        # fast-start packets at K only
    assert max(next(iter(ldcp.queue_series.values()))) <= 0.5 * buf_max
    assert all(f.finish_ps is not None for f in ldcp.flows if f.size_bytes)
    assert dctcp.counters["drops_buffer"] > 0                 # DCTCP overflows the buffer
    assert max(next(iter(dctcp.queue_series.values()))) >= 0.9 * buf_max


@functools.cache
def faststart(algorithm: str):
    """Run ``ldcp_faststart``, with a snapshot of the long flows at 300 us (the web-search
    flows start then; the long flows are in their stable stage)."""
    scn = load("ldcp_faststart")
    net, _, flows = build(scn, algorithm)
    net.run(300 * PS_PER_US)
    long_ids = [f.flow_id for f in flows if f.tag == "long"]
    snap = {fid: (net.sender(fid).retx_bytes, net.receiver(fid).delivered_bytes)
            for fid in long_ids}
    net.run(scn.duration_ps)
    end = {fid: (net.sender(fid).retx_bytes, net.receiver(fid).delivered_bytes)
           for fid in long_ids}
    return net.result(), snap, end


def test_ldcp_fast_start_completes_a_short_message_in_one_rtt():
    # Reproduction 5a: a 50 KB probe (< BDP) on an idle path arrives within the ideal time
    # (one-way delay + size at line rate): the whole message went out in the first RTT.
    ldcp, _, _ = faststart("ldcp")
    dctcp, _, _ = faststart("dctcp")
    probe = next(f for f in ldcp.flows if f.tag == "probe")
    slow = next(f for f in dctcp.flows if f.tag == "probe")
    fct = probe.finish_ps - probe.start_ps
    assert fct <= probe.ideal_fct_ps + 100_000, (fct, probe.ideal_fct_ps)
    assert slow.finish_ps - slow.start_ps >= 1.5 * fct      # DCTCP's slow start from 10


def test_ldcp_fast_start_losses_spare_the_stable_flows():
    # Reproduction 5b: the web-search flows' fast-start (Not-ECT) packets are dropped at K;
    # the long flows in their stable stage lose nothing and keep most of the port.
    res, snap, end = faststart("ldcp")
    c = res.counters
    assert c["drops_not_ect_at_k"] > 0 and c["drops_buffer"] == 0, c
    for fid in snap:
        assert end[fid][0] == snap[fid][0], (fid, snap[fid], end[fid])   # no retransmission
    moved = sum(end[f][1] - snap[f][1] for f in snap) * 8 * PS_PER_S
    rate = moved / (res.duration_ps - 300 * PS_PER_US) / 1e9
    assert rate >= 0.6 * 100, rate
    done = [f for f in res.flows if f.finish_ps is not None]
    assert len(done) >= 3 and all(f.delivered_bytes == f.size_bytes for f in done), res.flows


def test_ldcp_default_scenario_tail_is_the_time_below_one_packet():
    # docs/results.md, "LDCP's tail": on the default scenario (seed 1) every incast flow loses
    # in fast start (one NAK, no timeout); the flows that then go below one packet make the
    # tail (FCT correlated with the time below one packet), while the long flows, above one
    # packet, take several times their fair share of the port in the incast's second half.
    scn = load("default", {"seed": 1}, ["ldcp"])
    net, _, _ = build(scn, "ldcp")
    net.run(scn.duration_ps)
    res = net.result()
    per_flow = {f.flow_id: net.sender(f.flow_id).measured() for f in net.flows}
    inc = [f for f in res.flows if f.tag == "incast"]
    assert all(per_flow[f.flow_id]["naks"] == 1 and per_flow[f.flow_id]["fast_start_exit"] == 1
               and f.finish_ps is not None for f in inc)
    assert res.counters["timeouts"] == 0
    mech = window_mechanism(res, "incast", per_flow)
    assert mech["corr_fct_below_one"] >= 0.9, mech
    below = [f for f in inc if per_flow[f.flow_id]["below_one_us"] > 0]
    above = [f for f in inc if per_flow[f.flow_id]["below_one_us"] == 0]
    assert len(inc) // 3 <= len(below) < len(inc), len(below)

    def fct(f):
        return f.finish_ps - f.start_ps
    assert statistics.mean(fct(f) for f in below) > max(fct(f) for f in above)
    # the long flows while the last half of the incast flows are unfinished
    finish = sorted(f.finish_ps for f in inc)
    a, b = -(-finish[len(finish) // 2] // res.sample_ps), finish[-1] // res.sample_ps
    longs = sum(gbps(res.flow_series[f.flow_id], res.sample_ps, a, b)
                for f in res.flows if f.size_bytes is None)
    fair = 4 * 100 / (4 + len(finish) - len(finish) // 2)
    assert longs >= 2 * fair, (longs, fair)
