"""Build a validated scenario on the simulator core and run it for one algorithm."""

from __future__ import annotations

import time
from dataclasses import dataclass

from . import core
from .config import Scenario
from .fields import ScenarioError, missing
from .workload import _REF, Flow, generate_flows, parse_ref

EVENTS_PER_PACKET = 8       # calibrated on the bundled scenarios (data + ACK, every hop)
EVENTS_WARN = 100_000_000   # `run` prints the estimate above this (minutes of CPU)
EVENTS_PER_S = 200_000      # a conservative rate of the core, for the printed time estimate


@dataclass
class Run:
    algorithm: str
    result: object          # sim.net.network.RunResult
    wall_s: float
    flows: list[Flow]
    cpu_s: float = 0.0      # process CPU time of the run: steadier than wall on a shared machine

    @property
    def events_per_s(self) -> float:
        """Simulated events per second of CPU time (of wall time if CPU time is unknown)."""
        seconds = self.cpu_s or self.wall_s
        return self.result.events / seconds if seconds > 0 else 0.0


def build(scn: Scenario, algorithm: str):
    """The network, its topology and the flows of ``scn`` for ``algorithm`` (not run yet)."""
    api = core.api()
    net = api.Network(algorithm=algorithm, params=scn.params[algorithm],
                      switch=scn.switch_for(algorithm), seed=scn.seed, sample_ps=scn.sample_ps)
    net.engine = getattr(scn, "engine", None)     # (sim.net.engine_api; None: the default)
    topo = scn.topology.build(net, api.topology)
    predicted = scn.topology.groups()
    actual = {name: len(topo.groups.get(name, ())) for name in predicted}
    if actual != predicted:
        raise RuntimeError(f"topology {scn.topology.kind}: the core built groups {actual}, the "
                           f"scenario layer expected {predicted}")
    try:
        flows = generate_flows(scn.workloads, topo.groups, scn.topology, scn.duration_ps,
                               scn.seed, scn.cdfs)
    except ValueError as e:
        raise ScenarioError(scn.source, "workload", missing(), str(e)) from None
    for f in flows:
        net.add_flow(api.FlowSpec(flow_id=f.flow_id, src=f.src, dst=f.dst,
                                  size_bytes=f.size_bytes, start_ps=f.start_ps,
                                  stop_ps=f.stop_ps, tag=f.tag, track=f.track))
    return net, topo, flows


@dataclass(frozen=True)
class PathGroup:
    """Flows whose paths have the same length, propagation, base RTT and slowest link."""
    pairs: tuple[tuple[str, str], ...]   # (source group, destination group), in flow order
    flows: int
    links: int                  # links of the data path
    propagation_ps: int         # every link's delay, out and back
    base_rtt_ps: int            # plus serialization: a data packet out, an ACK back, per hop
    rate_bps: int               # the slowest link of the data path
    mtu: int

    @property
    def serialization_ps(self) -> int:
        return self.base_rtt_ps - self.propagation_ps

    @property
    def bdp_bytes(self) -> float:
        return self.rate_bps * self.base_rtt_ps / 8e12


def paths(scn: Scenario, algorithm: str | None = None) -> list[PathGroup]:
    """The distinct paths of the flows of ``scn`` (for ``algorithm``'s switch: its MTU), on the
    core's topology with the run's ECMP choices; a path's base RTT is
    :meth:`sim.net.network.Network.base_rtt_ps` (what LDCP takes as its flows' RTT)."""
    from sim.net.packet import ACK

    api = core.api()
    algorithm = algorithm or scn.algorithms[0]
    switch = scn.switch_for(algorithm)
    net = api.Network(algorithm=algorithm, params=scn.params[algorithm], switch=switch,
                      seed=scn.seed, sample_ps=scn.sample_ps)
    topo = scn.topology.build(net, api.topology)
    group_of = {}
    for name, hosts in topo.groups.items():
        if name != "all":
            for h in hosts:
                group_of.setdefault(h, name)
    try:
        flows = generate_flows(scn.workloads, topo.groups, scn.topology, scn.duration_ps,
                               scn.seed, scn.cdfs)
    except ValueError as e:
        raise ScenarioError(scn.source, "workload", missing(), str(e)) from None
    groups: dict[tuple, list] = {}
    seen: dict[tuple[int, int], tuple] = {}
    for f in flows:
        key = seen.get((f.src, f.dst))
        if key is None:
            if f.src == f.dst:
                continue
            fwd = net._path(f.src, f.dst, f.flow_id)
            back = net._path(f.dst, f.src, f.flow_id, ACK)
            prop = sum(p.delay_ps for p in fwd) + sum(p.delay_ps for p in back)
            key = seen[(f.src, f.dst)] = (len(fwd), prop, net.base_rtt_ps(f.src, f.dst,
                                                                          f.flow_id),
                                          min(p.rate_bps for p in fwd))
        entry = groups.setdefault(key, [{}, 0])
        entry[0].setdefault((group_of.get(f.src, "?"), group_of.get(f.dst, "?")), None)
        entry[1] += 1
    return [PathGroup(tuple(pairs), n, *key, switch.mtu)
            for key, (pairs, n) in sorted(groups.items(), key=lambda kv: (-kv[1][1], kv[0]))]


def path_lines(groups: list[PathGroup], most: int = 8) -> list[str]:
    """What ``python -m sim run`` prints of :func:`paths` before it simulates."""
    if not groups:
        return []
    mtu = groups[0].mtu
    lines = [f"paths (base RTT = propagation out and back + store-and-forward of a {mtu} B "
             f"packet per hop out and a 64 B ACK per hop back; BDP = base RTT x the path's "
             f"slowest link):"]

    for g in groups[:most]:
        pairs = ", ".join(f"{a} -> {b}" for a, b in g.pairs[:3])
        if len(g.pairs) > 3:
            pairs += f" and {len(g.pairs) - 3} more"
        bdp = g.bdp_bytes
        lines.append(f"  {pairs} ({g.flows} flow{'s' * (g.flows != 1)}, {g.links} links): "
                     f"RTT {g.base_rtt_ps / 10**6:.3f} us ({g.propagation_ps / 10**6:.3f} "
                     f"propagation + {g.serialization_ps / 10**6:.3f} store-and-forward), "
                     f"BDP {bdp:,.0f} B = {bdp / g.mtu:,.1f} packets at "
                     f"{g.rate_bps / 1e9:g} Gb/s")
    if len(groups) > most:
        rest = groups[most:]
        lines.append(f"  ... {len(rest)} more path kinds ({sum(g.flows for g in rest)} flows)")
    return lines


def check(scn: Scenario) -> None:
    """The checks that need the core: build every algorithm's network once, without running it
    (flows from a host to itself, and whatever the core's builders reject, such as a switch
    profile that the marker cannot hold), so that a bad combination fails before any run."""
    for algorithm in scn.algorithms:
        try:
            build(scn, algorithm)
        except ScenarioError:
            raise
        except ValueError as e:          # hw.params.ConfigError and the core's own checks
            raise ScenarioError(scn.source, f"algo.{algorithm}", missing(),
                                f"the core rejects this scenario for {algorithm}: {e}") from None


def run(scn: Scenario, algorithm: str, progress=None) -> Run:
    net, _, flows = build(scn, algorithm)
    start, cpu = time.perf_counter(), time.process_time()
    net.run(scn.duration_ps, progress=progress)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return Run(algorithm, net.result(), wall, flows, cpu)


def _carried_bytes(w, scn: Scenario, sizes: dict[str, int]) -> float:
    """An upper-bound-ish estimate of the bytes workload ``w`` puts on the wire in the run:
    what it offers, at most what its source and destination access links carry."""
    topo, end = scn.topology, scn.duration_ps
    n_src, n_dst = (len(parse_ref(getattr(w, k), sizes)[1]) for k in ("src", "dst"))
    rate = {k: topo.group_rate_bps(_REF.match(getattr(w, k)).group(1)) for k in ("src", "dst")}
    cap_bps = min(n_src * rate["src"], n_dst * rate["dst"])
    if w.kind == "long":
        stop = end if w.stop_ps is None else min(w.stop_ps, end)
        return cap_bps * max(0, stop - w.start_ps) / 8e12
    if w.kind == "incast":
        starts = [w.at_ps + k * (w.period_ps or 0) for k in range(w.repeat)]
        offered = n_src * w.size_bytes * sum(t < end for t in starts)
        return min(offered, cap_bps * max(0, end - w.at_ps) / 8e12)
    if w.kind == "cdf":
        stop = end if w.stop_ps is None else min(w.stop_ps, end)
        offered = float(w.load) * w.bottleneck_rate(topo, n_src, n_dst) * max(0, stop - w.start_ps)
        return min(offered, cap_bps * max(0, stop - w.start_ps)) / 8e12
    return 0.0


def estimate_events(scn: Scenario) -> int:
    """Rough number of simulated events of one algorithm's run (packets the workloads can
    carry x :data:`EVENTS_PER_PACKET`), to warn before a very long run.  Within a factor of a
    few of the measured count on the bundled scenarios."""
    sizes = scn.topology.groups()
    mtu = getattr(scn.switch, "mtu", 1000)
    packets = sum(_carried_bytes(w, scn, sizes) for w in scn.workloads) / mtu
    return int(packets * EVENTS_PER_PACKET)
