"""Reproduction 1 on the network core: N long-lived DCTCP flows into one bottleneck.

A thin wrapper over :func:`sim.net.topology.dumbbell` that keeps the DCTCP sawtooth
reproduction (``tests/test_net_dctcp.py``) in the paper's units: the base RTT is split into four
equal one-way link delays (host-switch-host and back).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .algorithms import DctcpParams
from .engine import PS_PER_S, PS_PER_US
from .network import FlowSpec, Network, SwitchConfig
from .topology import dumbbell


@dataclass
class DumbbellResult:
    n: int
    rate_bps: int
    rtt_ps: int
    mtu: int
    k_bytes: int
    sample_ps: int
    queue_bytes: list[int] = field(default_factory=list)   # bottleneck data queue, sampled
    delivered: list[int] = field(default_factory=list)      # bytes per flow at the end
    marks: int = 0
    drops: dict = field(default_factory=dict)
    events: int = 0
    duration_ps: int = 0

    def utilization(self) -> float:
        """Bottleneck utilization over the whole run, from the bytes delivered in order."""
        return sum(self.delivered) * 8 * PS_PER_S / (self.rate_bps * self.duration_ps)


def run_dctcp_dumbbell(n: int, rate_bps: int, rtt_us: float, k_packets: int, mtu: int = 1500,
                       duration_us: float = 20_000.0, sample_us: float = 1.0,
                       buf_packets: int = 2000, stagger_us: float = 0.0) -> DumbbellResult:
    """``n`` long-lived DCTCP flows with step marking at ``k_packets`` (CE when the queue
    exceeds K, HPCC's strict comparison)."""
    rtt_ps = round(rtt_us * PS_PER_US)
    params = DctcpParams(k_bytes=k_packets * mtu, init_cwnd=10, rto_ns=10**6)
    sw = SwitchConfig(buffer_bytes=buf_packets * mtu * 2, queue_bytes=buf_packets * mtu, mtu=mtu)
    sample_ps = round(sample_us * PS_PER_US)
    net = Network("dctcp", params, sw, sample_ps=sample_ps)
    topo = dumbbell(net, senders=n, receivers=1, rate_bps=rate_bps, delay_ps=rtt_ps // 4)
    rx = topo.groups["receivers"][0]
    for i, src in enumerate(topo.groups["senders"]):
        net.add_flow(FlowSpec(i, src, rx, start_ps=round(i * stagger_us * PS_PER_US)))
    duration_ps = round(duration_us * PS_PER_US)
    net.run(duration_ps)
    res = net.result()
    c = res.counters
    drops = {k: v for k, v in c.items() if k.startswith("drops_") and v}
    return DumbbellResult(n, rate_bps, rtt_ps, mtu, k_packets * mtu, sample_ps,
                          queue_bytes=next(iter(res.queue_series.values())),
                          delivered=[f.delivered_bytes for f in res.flows], marks=c["marks"],
                          drops=drops, events=res.events, duration_ps=duration_ps)
