"""TIMELY and Swift on the network simulator: NIC-timestamp RTTs, knobs from a scenario, and the
two reproductions (``sim/scenarios/timely_incast.toml``, ``sim/scenarios/swift_incast.toml``;
figures in ``docs/timely.md`` and ``docs/swift.md``)."""

from __future__ import annotations

import functools

import pytest

import sim.net.swift  # noqa: F401  (registers "swift")
import sim.net.timely  # noqa: F401  (registers "timely")
from sim.net.engine import PS_PER_S, PS_PER_US
from sim.scenario import ScenarioError, load
from sim.scenario.metrics import percentile
from sim.scenario.runner import build

CLK_PS = 4000       # the simulator's engine clock (250 MHz): the NIC timestamps' unit

# the queue-size forms of TIMELY: T_low = T_high at the gradient form's T_low and T_high
TIMELY_FORMS = {
    "gradient": {},
    "queue_10us": {"algo.timely.t_high_us": 10},
    "queue_50us": {"algo.timely.t_low_us": 50},
}
SWIFT_512 = {"topology.senders": 514, "workload[1].src": "senders[2:514]",
             "workload[1].size_kb": 16}


@functools.cache
def run(scenario: str, algorithm: str, overrides: tuple = ()):
    scn = load(scenario, dict(overrides), [algorithm])
    net, _, _ = build(scn, algorithm)
    net.run(scn.duration_ps)
    return scn, net, net.result()


def timely(form: str):
    return run("timely_incast", "timely", tuple(TIMELY_FORMS[form].items()))


def second_half(scn, net, res) -> tuple[float, float]:
    """(p99 completion RTT in µs, aggregate goodput in Gb/s) over the second half."""
    half = scn.duration_ps // 2
    rtts = [r for f in net.flows for t, r in zip(net.sender(f.flow_id).rtt.times_ps,
                                                  net.sender(f.flow_id).rtt.rtt_cycles,
                                                  strict=True) if t >= half]
    n = len(next(iter(res.flow_series.values())))
    a = n // 2
    got = sum(s[n - 1] - s[a] for s in res.flow_series.values())
    gbps = got * 8 * PS_PER_S / ((n - 1 - a) * res.sample_ps) / 1e9
    return percentile(rtts, 99) * CLK_PS / PS_PER_US, gbps


def test_timely_rtt_is_the_nic_timestamp_difference_minus_serialization():
    # The first completion of the first flow, on an idle path (hand-computed): the segment's
    # first bit leaves the NIC at 0; its last packet (16 x 1000 B at 100 Gb/s: 1.28 µs) crosses
    # a 1 µs link, the switch (store and forward: 80 ns) and a 1 µs link; the 64 B ACK crosses
    # the same two links (5.12 ns serialization each).  Completion at 5370.24 ns = cycle 1342
    # of 4 ns; the segment's serialization is floor(16000 * 335544 / 2**24) = 319 cycles
    # (0.02 cycles per byte in UQ.24, rounded down), so RTT = 1023 cycles (4.092 µs).
    _, net, _ = timely("gradient")
    first = net.sender(net.flows[0].flow_id).rtt
    assert (first.times_ps[0], first.rtt_cycles[0]) == (5_370_240, 1023)


def test_timely_gradient_keeps_both_tail_rtt_and_throughput():
    grad = second_half(*timely("gradient"))
    q10 = second_half(*timely("queue_10us"))
    q50 = second_half(*timely("queue_50us"))
    print(f"gradient {grad}, queue 10 us {q10}, queue 50 us {q50}")
    # gradient: near line rate with a tail RTT of a few base RTTs
    assert grad[1] >= 97 and grad[0] <= 16, grad
    # queue-size form at T_low's target: a tail as low, but visibly less throughput
    assert q10[0] >= 0.8 * grad[0] and q10[1] <= grad[1] - 3, (q10, grad)
    # queue-size form at T_high's target: the queue sits at the target (a tail several times
    # the gradient's) and the overshoots cost throughput as well
    assert q50[0] >= 3 * grad[0] and q50[1] <= grad[1] - 10, (q50, grad)
    for form in TIMELY_FORMS:
        c = timely(form)[2].counters
        assert c["drops_buffer"] == 0 and c["timeouts"] == 0, (form, c)


def test_timely_knobs_come_from_the_scenario():
    scn, net, _ = timely("queue_10us")
    cfg = net.sender(net.flows[0].flow_id).cfg
    assert (cfg.t_low_us, cfg.t_high_us, cfg.min_rtt_us, cfg.segment_bytes) == (10, 10, 20, 16384)
    assert cfg.clk_hz == 250_000_000 and cfg.line_rate_mbps == 100_000
    with pytest.raises(ScenarioError, match="t_low_us"):
        load("timely_incast", {"algo.timely.t_low_us": 60}, ["timely"])
    with pytest.raises(ScenarioError, match="segment_bytes"):
        load("timely_incast", {"algo.timely.segment_bytes": 1000}, ["timely"])


def incast_flows(res):
    return [f for f in res.flows if f.size_bytes is not None]


def swift_checks(overrides: tuple, senders: int):
    scn, net, res = run("swift_incast", "swift", overrides)
    c = res.counters
    inc = incast_flows(res)
    assert len(inc) == senders and all(f.finish_ps is not None for f in inc)
    assert c["drops_buffer"] == 0 and c["drops_not_ect_at_k"] == 0 and c["timeouts"] == 0, c
    assert c["retransmitted_packets"] == 0
    # every incast flow went below one packet and was paced
    assert c["flows_below_one_packet"] >= senders
    senders_ = [net.sender(f.flow_id) for f in inc]
    assert all(s.cwnd_min < 65536 for s in senders_) and sum(s.paced for s in senders_) > 0
    # once the windows have converged (300 µs after the incast), the queue stays below the
    # largest target delay's worth of bytes: (base 8 + 1 hop x 1 + fs_range 20) µs x 100 Gb/s
    p = scn.params["swift"]
    bound = (p.base_target_us + p.hop_scale_us + p.fs_range_us) * 100e3 / 8
    q = next(iter(res.queue_series.values()))
    end = max(f.finish_ps for f in inc)
    tail = q[800 * PS_PER_US // res.sample_ps: end // res.sample_ps]
    assert tail and max(tail) <= bound, (max(tail), bound)
    return senders_, max(q), max(tail)


def test_swift_large_incast_stays_bounded_without_drops():
    senders, qmax, qtail = swift_checks((), 256)
    cw = sorted(s.cwnd_min for s in senders)
    assert cw[len(cw) // 2] < 0.5 * 65536          # the median flow went below half a packet
    print(f"swift 256: q max {qmax}, after convergence {qtail}, median min cwnd "
          f"{cw[len(cw) // 2] / 65536:.3f}")


def test_swift_512_senders_go_deeper_below_one_packet():
    senders, qmax, qtail = swift_checks(tuple(SWIFT_512.items()), 512)
    cw = sorted(s.cwnd_min for s in senders)
    assert cw[len(cw) // 2] < 0.25 * 65536
    print(f"swift 512: q max {qmax}, after convergence {qtail}, median min cwnd "
          f"{cw[len(cw) // 2] / 65536:.3f}")


def test_swift_beside_ldcp_and_dctcp():
    # LDCP (reproduction 4): no buffer drop either, only fast-start packets dropped at K;
    # DCTCP, whose window never goes below one packet, overflows the buffer; NewReno repairs
    # most losses, but flows with a window too small for three duplicate ACKs wait for the
    # timeout, so DCTCP's tail FCT is well above both (measured 1.42 ms against 0.72-0.73).
    # Swift's tail FCT is LDCP's or better (within 10 %).
    _, _, swift = run("swift_incast", "swift")
    _, _, ldcp = run("swift_incast", "ldcp")
    _, _, dctcp = run("swift_incast", "dctcp")
    assert ldcp.counters["drops_buffer"] == 0
    assert all(f.finish_ps is not None for f in incast_flows(ldcp))
    assert dctcp.counters["drops_buffer"] > 0
    assert dctcp.counters["timeouts"] > 0

    def p99_fct(res):
        return percentile([f.finish_ps - f.start_ps if f.finish_ps is not None else 10**18
                           for f in incast_flows(res)], 99)
    assert p99_fct(swift) <= 1.1 * p99_fct(ldcp), (p99_fct(swift), p99_fct(ldcp))
    assert p99_fct(dctcp) > 1.5 * p99_fct(ldcp), (p99_fct(dctcp), p99_fct(ldcp))


def test_loss_recovery_go_back_n_and_timeouts():
    # A 100 KB egress queue, below what either algorithm's delay target needs: losses happen.
    # TIMELY (no PFC) recovers them by NAK and keeps the port busy; Swift, whose target queue
    # (29 µs, ~360 KB) does not fit, sees NAKs and retransmission timeouts (fast recovery and
    # RTO in its model) and still finishes every incast flow.
    scn, net, res = run("timely_incast", "timely", (
        ("switch.pfc.enabled", False), ("switch.queue_kb", 100), ("duration_us", 3000),
        ("algo.timely.rto_us", 300)))
    c = res.counters
    assert c["drops_buffer"] > 0 and c["retransmitted_packets"] > 0, c
    assert second_half(scn, net, res)[1] >= 90
    _, _, res = run("swift_incast", "swift", (
        ("switch.queue_kb", 100), ("algo.swift.init_cwnd", 4.0), ("algo.swift.rto_us", 200)))
    c = res.counters
    assert c["drops_buffer"] > 0 and c["timeouts"] > 0 and c["retransmitted_packets"] > 0, c
    assert all(f.finish_ps is not None for f in incast_flows(res))
