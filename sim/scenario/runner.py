"""Build a validated scenario on the simulator core and run it for one algorithm."""

from __future__ import annotations

import time
from dataclasses import dataclass

from . import core
from .config import Scenario
from .fields import ScenarioError, missing
from .workload import Flow, generate_flows


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
