"""Workload sections (``[[workload]]``) and the flows they generate.

Hosts are named by **group references**: ``"senders"`` (the whole group), ``"senders[3]"`` (one
host), ``"senders[0:8]"`` (a Python-style slice).  The groups are the topology's
(:meth:`~sim.scenario.topologies.DumbbellTopology.groups`).

Kinds (each has a ``name``, the tag of its flows, and ``src``/``dst`` group references):

``long``
    One long-lived flow from every ``src`` host ``i`` to ``dst[i % len(dst)]``, starting at
    ``start + i * stagger``, stopping at ``stop`` (or the end of the run).
``incast``
    At ``at`` (and ``repeat - 1`` more times, every ``period``), every ``src`` host sends
    ``size`` bytes to ``dst[i % len(dst)]`` at once.
``cdf``
    Poisson arrivals in ``[start, stop)`` at a target ``load`` of a bottleneck, sizes from a
    flow-size distribution (:mod:`sim.workloads`), source uniform over ``src``, destination
    uniform over ``dst`` (redrawn while equal to the source).  The bottleneck is
    ``bottleneck_bps`` if given, else the access links of the ``dst`` hosts
    (``bottleneck = "dst"``, the default: the receivers' downlinks) or of the ``src`` hosts
    (``"src"``: every sender's uplink, the usual definition for all-to-all traffic).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from hw.params import check_choice, check_int, check_real
from sim.workloads import arrival_rate_per_ps, poisson_flows

_REF = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\[(\d*)(?::(\d*))?\])?$")


def parse_ref(ref: str, sizes: dict[str, int]) -> tuple[str, range]:
    """``"senders[0:8]"`` -> ``("senders", range(0, 8))``; ValueError naming the problem."""
    m = _REF.match(ref)
    if not m:
        raise ValueError("expected a group reference: name, name[i] or name[a:b]")
    name, first, last = m.group(1), m.group(2), m.group(3)
    if name not in sizes:
        raise ValueError(f"unknown group {name!r}; this topology has: {', '.join(sizes)}")
    n = sizes[name]
    if first is None:
        return name, range(n)
    if last is None and ":" not in ref:
        if first == "" or int(first) >= n:
            raise ValueError(f"index out of range: group {name!r} has {n} hosts")
        return name, range(int(first), int(first) + 1)
    lo = int(first) if first else 0
    hi = int(last) if last else n
    if not lo < hi <= n:
        raise ValueError(f"empty or out-of-range slice: group {name!r} has {n} hosts")
    return name, range(lo, hi)


def resolve_ref(ref: str, groups: dict[str, list[int]]) -> list[int]:
    """Host ids of a group reference, against the built topology's groups."""
    name, idx = parse_ref(ref, {k: len(v) for k, v in groups.items()})
    return [groups[name][i] for i in idx]


@dataclass(frozen=True)
class LongWorkload:
    name: str
    src: str = "senders"
    dst: str = "receivers"
    start_ps: int = 0
    stop_ps: int | None = None
    stagger_ps: int = 0
    jitter_ps: int = 0

    kind = "long"

    def __post_init__(self):
        check_int(self, "start_ps", self.start_ps, 0)
        check_int(self, "stagger_ps", self.stagger_ps, 0)
        check_int(self, "jitter_ps", self.jitter_ps, 0, 10**12)
        if self.stop_ps is not None:
            check_int(self, "stop_ps", self.stop_ps, self.start_ps + 1, lo_name="start_ps + 1")


@dataclass(frozen=True)
class IncastWorkload:
    name: str
    size_bytes: int
    src: str = "senders"
    dst: str = "receivers"
    at_ps: int = 0
    repeat: int = 1
    period_ps: int | None = None
    track: bool = False
    jitter_ps: int = 0

    kind = "incast"

    def __post_init__(self):
        check_int(self, "size_bytes", self.size_bytes, 1, 10**12)
        check_int(self, "at_ps", self.at_ps, 0)
        check_int(self, "jitter_ps", self.jitter_ps, 0, 10**12)
        check_int(self, "repeat", self.repeat, 1, 10**6)
        if self.repeat > 1 or self.period_ps is not None:      # required when repeating
            check_int(self, "period_ps", self.period_ps, 1)


@dataclass(frozen=True)
class CdfWorkload:
    name: str
    load: float
    distribution: str = "web_search"
    src: str = "senders"
    dst: str = "receivers"
    bottleneck: str = "dst"
    bottleneck_bps: int | None = None
    start_ps: int = 0
    stop_ps: int | None = None
    seed: int | None = None
    max_flows: int = 200_000
    track: bool = False

    kind = "cdf"

    def __post_init__(self):
        check_real(self, "load", self.load, 0.0, 1.0, lo_open=True)
        check_choice(self, "bottleneck", self.bottleneck, ("dst", "src"))
        if self.bottleneck_bps is not None:
            check_int(self, "bottleneck_bps", self.bottleneck_bps, 10**6, 10**15)
        check_int(self, "start_ps", self.start_ps, 0)
        if self.stop_ps is not None:
            check_int(self, "stop_ps", self.stop_ps, self.start_ps + 1, lo_name="start_ps + 1")
        if self.seed is not None:
            check_int(self, "seed", self.seed, 0)
        check_int(self, "max_flows", self.max_flows, 1)

    def bottleneck_rate(self, topology, src_hosts: int, dst_hosts: int) -> int:
        """The rate the load refers to: ``bottleneck_bps``, or the sum of the access links of
        the ``dst`` (or ``src``) hosts."""
        if self.bottleneck_bps is not None:
            return self.bottleneck_bps
        ref, hosts = (self.dst, dst_hosts) if self.bottleneck == "dst" else (self.src, src_hosts)
        return topology.group_rate_bps(_REF.match(ref).group(1)) * hosts

    def expected_flows(self, cdf, rate_bps: int, duration_ps: int) -> float:
        stop = duration_ps if self.stop_ps is None else min(self.stop_ps, duration_ps)
        return arrival_rate_per_ps(cdf, self.load, rate_bps) * max(0, stop - self.start_ps)


WORKLOADS = {cls.kind: cls for cls in (LongWorkload, IncastWorkload, CdfWorkload)}


@dataclass(frozen=True)
class Flow:
    """A planned flow, in the terms of ``sim.net.network.FlowSpec``."""
    flow_id: int
    src: int
    dst: int
    size_bytes: int | None
    start_ps: int
    stop_ps: int | None
    tag: str
    track: bool


def generate_flows(workloads, groups: dict[str, list[int]], topology, duration_ps: int,
                   seed: int, cdfs: dict) -> list[Flow]:
    """Every flow of every workload, numbered from 0 in workload order.  Deterministic: a
    ``cdf`` workload draws from ``random.Random(f"{seed}:{name}")`` (its own ``seed`` if set,
    else the scenario's), so adding a workload does not change another's flows; so do the
    ``jitter`` of ``long`` and ``incast`` workloads (each flow's start moved later by a uniform
    whole number of picoseconds in ``[0, jitter]``, drawn in flow order)."""
    flows: list[Flow] = []

    def add(src, dst, size, start, stop, tag, track):
        if src == dst:
            raise ValueError(f"workload {tag!r}: a flow from host {src} to itself (src and dst "
                             f"overlap)")
        flows.append(Flow(len(flows), src, dst, size, start, stop, tag, track))

    for w in workloads:
        src = resolve_ref(w.src, groups)
        dst = resolve_ref(w.dst, groups)
        if w.kind in ("long", "incast"):
            rng = random.Random(f"{seed}:{w.name}")

            def jitter(w=w, rng=rng):
                return rng.randint(0, w.jitter_ps) if w.jitter_ps else 0
        if w.kind == "long":
            for i, s in enumerate(src):
                add(s, dst[i % len(dst)], None, w.start_ps + i * w.stagger_ps + jitter(),
                    w.stop_ps, w.name, True)
        elif w.kind == "incast":
            for r in range(w.repeat):
                at = w.at_ps + r * (w.period_ps or 0)
                for i, s in enumerate(src):
                    add(s, dst[i % len(dst)], w.size_bytes, at + jitter(), None, w.name,
                        w.track)
        else:
            rng = random.Random(f"{seed if w.seed is None else w.seed}:{w.name}")
            rate = w.bottleneck_rate(topology, len(src), len(dst))
            stop = duration_ps if w.stop_ps is None else min(w.stop_ps, duration_ps)
            if len(set(src) | set(dst)) < 2:
                raise ValueError(f"workload {w.name!r}: src and dst are the same single host")
            for start, size in poisson_flows(cdfs[w.name], w.load, rate, w.start_ps, stop, rng):
                s = rng.choice(src)
                d = rng.choice(dst)
                while d == s:
                    s, d = rng.choice(src), rng.choice(dst)
                add(s, d, size, start, None, w.name, w.track)
    return flows
