"""Topology builders: they add hosts, switches and links to a :class:`Network` and name groups.

Host ids are node ids; every host hangs off exactly one switch (its ToR).  Each builder returns a
:class:`Topology` with the host groups workloads refer to and the ports worth sampling (the
bottlenecks), which the network records as queue time series.

* ``dumbbell``: ``senders`` and ``receivers`` behind one switch (N-to-1 incast when
  ``receivers = 1``); the receivers' downlinks are the bottleneck.
* ``chain``: ``switches`` switches in a line, senders on the first, receivers on the last; every
  inter-switch hop adds control-loop delay (the L3QCN comparison).  ``cross_senders`` hosts on
  the last switch send to the same receivers, so the congestion is at the last hop.
* ``leaf_spine``: ``leaves`` ToRs with ``hosts_per_leaf`` hosts each, every leaf linked to every
  one of ``spines`` spines; ECMP over the spines by flow hash.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hw.params import check_int

from .network import Network


@dataclass
class Topology:
    kind: str
    hosts: list[int]
    groups: dict[str, list[int]]
    switches: list = field(default_factory=list)


def _hosts(net: Network, n: int, prefix: str) -> list:
    return [net.add_host(f"{prefix}{i}") for i in range(n)]


def dumbbell(net: Network, senders: int, receivers: int = 1, rate_bps: int = 100 * 10**9,
             delay_ps: int = 1_000_000, receiver_rate_bps: int | None = None) -> Topology:
    check_int("dumbbell", "senders", senders, 1, 100_000)
    check_int("dumbbell", "receivers", receivers, 1, 100_000)
    sw = net.add_switch("sw")
    tx = _hosts(net, senders, "tx")
    rx = _hosts(net, receivers, "rx")
    for h in tx:
        net.connect(h, sw, rate_bps, delay_ps)
    for h in rx:
        _, down = net.connect(h, sw, receiver_rate_bps or rate_bps, delay_ps)
        net.monitor(down)
    return Topology("dumbbell", [h.id for h in tx + rx],
                    {"senders": [h.id for h in tx], "receivers": [h.id for h in rx],
                     "all": [h.id for h in tx + rx]}, [sw])


def chain(net: Network, switches: int, senders: int, receivers: int = 1,
          rate_bps: int = 100 * 10**9, delay_ps: int = 1_000_000, cross_senders: int = 0,
          hop_delay_ps: int | None = None) -> Topology:
    check_int("chain", "switches", switches, 1, 64)
    check_int("chain", "senders", senders, 1, 100_000)
    check_int("chain", "receivers", receivers, 1, 100_000)
    check_int("chain", "cross_senders", cross_senders, 0, 100_000)
    sws = [net.add_switch(f"s{i}") for i in range(switches)]
    for a, b in zip(sws, sws[1:], strict=False):
        up, _ = net.connect(a, b, rate_bps, hop_delay_ps if hop_delay_ps is not None
                            else delay_ps)
        net.monitor(up)
    tx = _hosts(net, senders, "tx")
    cross = _hosts(net, cross_senders, "cx")
    rx = _hosts(net, receivers, "rx")
    for h in tx:
        net.connect(h, sws[0], rate_bps, delay_ps)
    for h in cross:
        net.connect(h, sws[-1], rate_bps, delay_ps)
    for h in rx:
        _, down = net.connect(h, sws[-1], rate_bps, delay_ps)
        net.monitor(down)
    groups = {"senders": [h.id for h in tx], "receivers": [h.id for h in rx],
              "cross_senders": [h.id for h in cross], "all": [h.id for h in tx + cross + rx]}
    return Topology("chain", groups["all"], groups, sws)


def leaf_spine(net: Network, leaves: int, spines: int, hosts_per_leaf: int,
               host_rate_bps: int = 100 * 10**9, fabric_rate_bps: int = 100 * 10**9,
               delay_ps: int = 1_000_000) -> Topology:
    check_int("leaf_spine", "leaves", leaves, 1, 256)
    check_int("leaf_spine", "spines", spines, 1, 256)
    check_int("leaf_spine", "hosts_per_leaf", hosts_per_leaf, 1, 10_000)
    spine_sw = [net.add_switch(f"spine{i}") for i in range(spines)]
    groups: dict[str, list[int]] = {"all": []}
    leaf_sw = []
    for li in range(leaves):
        leaf = net.add_switch(f"leaf{li}")
        leaf_sw.append(leaf)
        for s in spine_sw:
            up, down = net.connect(leaf, s, fabric_rate_bps, delay_ps)
            net.monitor(up)
        hosts = _hosts(net, hosts_per_leaf, f"l{li}h")
        for h in hosts:
            _, down = net.connect(h, leaf, host_rate_bps, delay_ps)
            net.monitor(down)
        groups[f"leaf{li}"] = [h.id for h in hosts]
        groups["all"] += groups[f"leaf{li}"]
    return Topology("leaf_spine", groups["all"], groups, spine_sw + leaf_sw)
