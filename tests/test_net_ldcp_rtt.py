"""LDCP in the simulator takes each flow's base RTT from its path (unless the scenario sets
one), and derives the initial window (the BDP), the retransmission timeout and the sub-1
timer's period from it; the chosen values are in each flow's record.

Expected values by hand: a data packet of 1000 B takes 80 ns per 100 Gb/s hop, an ACK (64 B)
5.12 ns; the RTT is every link's delay both ways plus one data packet per hop out and one ACK
per hop back.  IW = ceil(100 Gb/s * RTT / 8000 bit), RTO = 8 RTTs, the timer's RTT register
round(RTT * 250 MHz) cycles.
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
                                "bdp_packets": 53.0, "rto_us": 33.36}


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
    assert s[0]["rto_us"] == 65.36 and s[1]["rto_us"] == 130.724


def test_a_scenario_can_still_set_the_rtt_and_the_window():
    net = Network("ldcp", LdcpParams(base_rtt_ns=10_000, iw=20, rto_ns=500_000))
    topo = dumbbell(net, senders=1, rate_bps=G100, delay_ps=PS_PER_US)
    net.add_flow(FlowSpec(0, topo.groups["senders"][0], topo.groups["receivers"][0], 10_000))
    assert settings(net)[0] == {"base_rtt_us": 10.0, "rtt_cycles": 2500, "iw_packets": 20,
                                "bdp_packets": 125.0, "rto_us": 500.0}
