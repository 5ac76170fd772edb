"""N-to-1 dumbbell: N senders and one receiver behind one switch, DCTCP flows.

::

    sender 0 ──┐
    sender 1 ──┤                      bottleneck
       ...     ├── switch ── port N ─────────────► receiver
    sender N-1─┘   (marker model on every egress queue)

Every link has the same rate and one-way delay ``rtt / 4`` (host-switch-host and back), so the
base RTT without queueing is ``rtt`` plus serialization.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hw.switch.marker_config import MarkerConfig
from sim.models.dctcp import DctcpConfig
from sim.models.marker import MarkerModel

from .dctcp_host import DctcpFlow
from .engine import PS_PER_S, PS_PER_US, Simulator
from .network import ACK, EgressPort, Switch


@dataclass
class DumbbellResult:
    n: int
    rate_bps: int
    rtt_ps: int
    mtu: int
    k_bytes: int
    sample_ps: int
    queue_bytes: list[int] = field(default_factory=list)   # bottleneck data queue, sampled
    delivered: list[int] = field(default_factory=list)      # packets per flow at the end
    marks: int = 0
    drops: dict = field(default_factory=dict)
    events: int = 0
    duration_ps: int = 0

    def utilization(self) -> float:
        """Bottleneck utilization over the whole run, from the bytes delivered in order."""
        return sum(self.delivered) * self.mtu * 8 * PS_PER_S / (self.rate_bps * self.duration_ps)


def run_dctcp_dumbbell(n: int, rate_bps: int, rtt_us: float, k_packets: int, mtu: int = 1500,
                       duration_us: float = 20_000.0, sample_us: float = 1.0,
                       buf_packets: int = 2000, stagger_us: float = 0.0) -> DumbbellResult:
    """Run ``n`` long-lived DCTCP flows into one bottleneck with DCTCP step marking at
    ``k_packets`` (CE when the queue exceeds K, HPCC's strict comparison)."""
    sim = Simulator()
    rtt_ps = round(rtt_us * PS_PER_US)
    delay = rtt_ps // 4
    marker_cfg = MarkerConfig.dctcp(ports=n + 1, priorities=2, k=k_packets * mtu,
                                    buf_max=buf_packets * mtu, shared_buffer=buf_packets * mtu * 2,
                                    compare="gt")
    marker = MarkerModel(marker_cfg)
    switch = Switch(sim, marker)
    flows: list[DctcpFlow] = []
    hosts: dict[int, dict[int, DctcpFlow]] = {}

    def host_deliver(host_id):
        def deliver(pkt):
            flow = hosts[host_id][pkt.flow]
            if pkt.kind == ACK:
                flow.on_ack(pkt)
            else:
                flow.on_data(pkt)
        return deliver

    receiver = n
    for h in range(n + 1):
        port = switch.add_port(rate_bps, delay, host_deliver(h))
        switch.route[h] = port
        hosts[h] = {}
    receiver_nic = EgressPort(sim, rate_bps, delay, switch.receive, name="rx.nic")
    cfg = DctcpConfig(init_cwnd=10)
    for i in range(n):
        nic = EgressPort(sim, rate_bps, delay, switch.receive, name=f"h{i}.nic")
        flow = DctcpFlow(sim, i, i, receiver, nic, cfg, mtu,
                         start_ps=round(i * stagger_us * PS_PER_US))
        flow.reverse_nic = receiver_nic
        hosts[i][i] = flow
        hosts[receiver][i] = flow
        flows.append(flow)

    result = DumbbellResult(n, rate_bps, rtt_ps, mtu, k_packets * mtu,
                            round(sample_us * PS_PER_US))
    bottleneck = switch.route[receiver]

    def sample():
        result.queue_bytes.append(marker.queue(bottleneck, 0))
        sim.after(result.sample_ps, sample)

    sim.at(0, sample)
    duration_ps = round(duration_us * PS_PER_US)
    sim.run(duration_ps)
    result.delivered = [f.receiver.expected for f in flows]
    result.marks = sum(p.marks for p in switch.ports)
    result.drops = {str(k.name): v for p in switch.ports for k, v in p.drops.items()}
    result.events = sim.events
    result.duration_ps = duration_ps
    return result
