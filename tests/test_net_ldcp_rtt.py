"""LDCP in the simulator takes each flow's base RTT from its path (unless the scenario sets
one), and derives the initial window (the BDP), the retransmission timeout and the sub-1
timer's period from it; the chosen values are in each flow's record.

Expected values by hand: a data packet of 1000 B takes 80 ns per 100 Gb/s hop, an ACK (64 B)
5.12 ns; the RTT is every link's delay both ways plus one data packet per hop out and one ACK
per hop back.  IW = ceil(100 Gb/s * RTT / 8000 bit), the timer's RTT register round(RTT *
250 MHz) cycles; RTO = max(8 RTTs, RTT + the path's worst queueing), where a switch egress full to
its 2 MB limit (the default queue_bytes) drains in 2e6 * 8 bit / 100 Gb/s = 160 us per switch
hop.
"""

from __future__ import annotations

from sim.net.algorithms import LdcpParams
from sim.net.engine import PS_PER_US
from sim.net.network import FlowSpec, Network
from sim.net.topology import dumbbell, leaf_spine

G100 = 100 * 10**9


def settings(net):
    net.run(5 * PS_PER_US)
    return {f.flow_id: f.settings for f in net.result().flows}


def test_dumbbell_flow_takes_its_path_rtt():
    net = Network("ldcp")
    topo = dumbbell(net, senders=2, rate_bps=G100, delay_ps=PS_PER_US)
    rx = topo.groups["receivers"][0]
    net.add_flow(FlowSpec(0, topo.groups["senders"][0], rx, 10_000))
    rtt_ps = 4 * PS_PER_US + 2 * 80_000 + 2 * 5_120            # 4.17024 us
    assert net.base_rtt_ps(topo.groups["senders"][0], rx) == rtt_ps
    assert settings(net)[0] == {"base_rtt_us": 4.1702, "rtt_cycles": 1043, "iw_packets": 53,
                                "bdp_packets": 53.0, "rto_us": 164.172}   # 160 + 4.17 us


def test_flows_on_longer_paths_get_longer_rtts_and_larger_windows():
    net = Network("ldcp")
    topo = leaf_spine(net, leaves=2, spines=2, hosts_per_leaf=2, delay_ps=2 * PS_PER_US)
    a, b = topo.groups["leaf0"]
    c, _ = topo.groups["leaf1"]
    net.add_flow(FlowSpec(0, a, b, 10_000))          # within the leaf: 2 hops
    net.add_flow(FlowSpec(1, a, c, 10_000))          # across a spine: 4 hops
    s = settings(net)
    near = 8 * PS_PER_US + 2 * 80_000 + 2 * 5_120      # 8.17024 us
    far = 16 * PS_PER_US + 4 * 80_000 + 4 * 5_120      # 16.34048 us
    assert s[0]["base_rtt_us"] == 8.1702 and s[1]["base_rtt_us"] == 16.3405
    assert s[0]["iw_packets"] == 103 and s[1]["iw_packets"] == 205     # ceil(RTT * 12.5 /us)
    assert s[0]["rtt_cycles"] == round(near * 250e6 / 1e12) == 2043
    assert s[1]["rtt_cycles"] == round(far * 250e6 / 1e12) == 4085
    # one switch egress within the leaf, three across the spine (leaf, spine, leaf)
    assert s[0]["rto_us"] == 168.172 and s[1]["rto_us"] == 496.34
    assert net.max_queueing_ps(a, b) == 160 * PS_PER_US
    assert net.max_queueing_ps(a, c, 1) == 480 * PS_PER_US


def test_a_scenario_can_still_set_the_rtt_and_the_window():
    net = Network("ldcp", LdcpParams(base_rtt_ns=10_000, iw=20, rto_ns=500_000))
    topo = dumbbell(net, senders=1, rate_bps=G100, delay_ps=PS_PER_US)
    net.add_flow(FlowSpec(0, topo.groups["senders"][0], topo.groups["receivers"][0], 10_000))
    assert settings(net)[0] == {"base_rtt_us": 10.0, "rtt_cycles": 2500, "iw_packets": 20,
                                "bdp_packets": 125.0, "rto_us": 500.0}


def test_without_deep_queues_the_timeout_is_8_rtts():
    # a 20 KB queue drains in 1.6 us: 8 RTTs (33.36 us) is the larger
    from sim.net.network import SwitchConfig
    net = Network("ldcp", switch=SwitchConfig(queue_bytes=20_000, buffer_bytes=40_000))
    topo = dumbbell(net, senders=1, rate_bps=G100, delay_ps=PS_PER_US)
    net.add_flow(FlowSpec(0, topo.groups["senders"][0], topo.groups["receivers"][0], 10_000))
    assert settings(net)[0]["rto_us"] == 33.36
