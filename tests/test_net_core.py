"""The network core: delivery despite drops, PFC losslessness, ECMP, determinism, errors.

Every run is a few hundred microseconds of simulated time on the golden models; each assertion
is a property the simulator must have whatever the algorithm's tuning.
"""

from __future__ import annotations

import pytest

from hw.params import ConfigError
from sim.net.algorithms import DcqcnParams, DctcpParams, LdcpParams
from sim.net.engine import PS_PER_S, PS_PER_US
from sim.net.network import FlowSpec, Network, PfcConfig, SwitchConfig
from sim.net.topology import dumbbell, leaf_spine

G100 = 100 * 10**9


def incast(algorithm, params=None, senders=6, size=60_000, queue=40_000, pfc=None,
           duration_us=3000):
    sw = SwitchConfig(queue_bytes=queue, buffer_bytes=4 * queue, pfc=pfc or PfcConfig())
    net = Network(algorithm, params, sw, sample_ps=5 * PS_PER_US)
    topo = dumbbell(net, senders=senders, rate_bps=G100, delay_ps=PS_PER_US)
    rx = topo.groups["receivers"][0]
    for i, s in enumerate(topo.groups["senders"]):
        net.add_flow(FlowSpec(i, s, rx, size_bytes=size + 137 * i))
    net.run(duration_us * PS_PER_US)
    return net.result()


@pytest.mark.parametrize("algorithm", ["dctcp", "dcqcn", "qcn", "ldcp"])
def test_every_byte_delivered_once_despite_drops(algorithm):
    # A 40 KB queue under a 6-to-1 incast of ~60 KB flows: the switch drops, go-back-N and the
    # timeouts recover, and every flow completes with exactly its bytes delivered in order.
    params = {"ldcp": LdcpParams(rto_ns=100_000), "dctcp": DctcpParams(rto_ns=200_000)}.get(
        algorithm)
    res = incast(algorithm, params, senders=6 if algorithm != "ldcp" else 3)
    for f in res.flows:
        assert f.finish_ps is not None, (algorithm, f)
        assert f.delivered_bytes == f.size_bytes, (algorithm, f)
        assert f.finish_ps - f.start_ps >= f.ideal_fct_ps, (algorithm, f)
    c = res.counters
    if algorithm != "ldcp":
        assert c["drops_buffer"] > 0 and c["retransmitted_packets"] > 0, c


def test_pfc_makes_the_incast_lossless():
    lossy = incast("dcqcn", DcqcnParams(profile="paper"), queue=60_000, duration_us=600)
    pfc = PfcConfig(enabled=True, xoff_bytes=8_000, xon_bytes=4_000, headroom_bytes=20_000,
                    pause_time_ps=20 * PS_PER_US)
    lossless = incast("dcqcn", DcqcnParams(profile="paper"), queue=60_000, pfc=pfc,
                      duration_us=600)
    assert lossy.counters["drops_buffer"] > 0
    c = lossless.counters
    assert c["drops_buffer"] == 0 and c["drops_not_ect_at_k"] == 0, c
    assert c["pause_frames"] > 0 and c["paused_ps"] > 0, c
    assert all(f.delivered_bytes == f.size_bytes for f in lossless.flows)


def test_ecmp_spreads_flows_over_the_spines_without_reordering():
    net = Network("dctcp", sample_ps=10 * PS_PER_US)
    topo = leaf_spine(net, leaves=2, spines=2, hosts_per_leaf=8, delay_ps=PS_PER_US)
    for i, (s, d) in enumerate(zip(topo.groups["leaf0"], topo.groups["leaf1"], strict=True)):
        net.add_flow(FlowSpec(i, s, d, size_bytes=200_000))
    net.run(1000 * PS_PER_US)
    res = net.result()
    up = {name: b for name, b in res.port_tx_bytes.items()
          if name in ("leaf0->spine0", "leaf0->spine1")}
    assert len(up) == 2 and all(b > 200_000 for b in up.values()), up
    assert sum(up.values()) >= 8 * 200_000
    assert res.counters["retransmitted_packets"] == 0
    assert all(f.delivered_bytes == f.size_bytes for f in res.flows)


def test_runs_are_deterministic():
    a = incast("dcqcn", duration_us=300)
    b = incast("dcqcn", duration_us=300)
    assert a.events == b.events and a.queue_series == b.queue_series
    assert [f.delivered_bytes for f in a.flows] == [f.delivered_bytes for f in b.flows]


def test_bad_configuration_names_the_field():
    with pytest.raises(ConfigError, match="algorithm"):
        Network("tcp-reno")
    with pytest.raises(ConfigError, match="xon_bytes"):
        PfcConfig(xoff_bytes=100, xon_bytes=200)
    with pytest.raises(ConfigError, match="kmax_bytes"):
        DcqcnParams(kmin_bytes=10_000, kmax_bytes=5_000)
    net = Network("dctcp")
    dumbbell(net, senders=2)
    with pytest.raises(ConfigError, match="dst"):
        net.add_flow(FlowSpec(0, 1, 99))


def test_pfc_watchdog_breaks_a_stuck_pause():
    # A port paused "forever" (a PAUSE with a 1 s pause time, as from a deadlocked neighbour):
    # without the watchdog the flow stalls; with it, after `watchdog_checks` checks the port
    # ignores PAUSE and the flow completes.
    def run_with(checks):
        pfc = PfcConfig(enabled=True, watchdog_checks=checks, watchdog_period_ps=10 * PS_PER_US,
                        watchdog_recovery_ps=200 * PS_PER_US)
        net = Network("dctcp", switch=SwitchConfig(pfc=pfc), sample_ps=10 * PS_PER_US)
        topo = dumbbell(net, senders=1, rate_bps=G100, delay_ps=PS_PER_US)
        rx = topo.groups["receivers"][0]
        net.add_flow(FlowSpec(0, topo.groups["senders"][0], rx, size_bytes=500_000))
        down = net.hosts[rx].nic.peer.ports[net.hosts[rx].nic.peer_port]
        net.sim.at(5 * PS_PER_US, down.pause, PS_PER_S)
        net.run(400 * PS_PER_US)
        return net.result()

    stuck, rescued = run_with(0), run_with(3)
    assert stuck.counters["watchdog_trips"] == 0 and stuck.flows[0].finish_ps is None
    assert rescued.counters["watchdog_trips"] >= 1
    assert rescued.flows[0].delivered_bytes == 500_000
