"""Scenario files (TOML) -> a validated, frozen :class:`Scenario`.

Everything is checked here, before any simulation starts: unknown keys, types, ranges (each
class's own ``ConfigError``), unit conversions, algorithm names and their parameter sections,
group references against the groups the topology will have, distribution files and the number
of flows a Poisson workload would generate.  Every error is a :class:`ScenarioError` naming the
file, the key path (``workload[1].load``), the value and the problem.

Layout of a file (``sim/scenario/README.md`` has the full reference)::

    name = "default"                  # output folder out/<name>/ (default: the file's stem)
    description = "..."
    seed = 1
    replications = 1                  # >1: seeds seed .. seed + replications - 1, with spread
    duration_us = 2000                # any time unit: _ps _ns _us _ms
    sample_us = 5
    algorithms = ["dctcp", "ldcp", "dcqcn", "qcn"]
    # engine = "rtl"                  # golden | fast | rtl (sim.net.engine_api; default: each
                                      # algorithm's own)

    [topology]                        # kind = dumbbell | chain | leaf_spine, and its parameters
    kind = "dumbbell"
    senders = 16
    rate_gbps = 100
    delay_us = 1                      # per link; or base_rtt_us = 4 (topologies.py)

    [switch]                          # sim.net.network.SwitchConfig; [switch.pfc] PfcConfig
    buffer_kb = 12000
    lfsr_seed = 7                     # the switches' LFSRs (default: the run's seed)

    [algo.ldcp]                       # the algorithm's params class, field by field
    alpha = 1.0

    [[workload]]                      # kind = long | incast | cdf (sim/scenario/workload.py)
    name = "long"
    kind = "long"
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from hw.params import check_int
from sim.workloads import DistributionError, load_cdf

from . import core
from .fields import ScenarioError, build, join, missing, show
from .topologies import TOPOLOGIES
from .units import FAMILIES, split_unit
from .workload import WORKLOADS, parse_ref

BUNDLED_DIR = Path(__file__).resolve().parent.parent / "scenarios"
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
MAX_SAMPLES = 2_000_000


@dataclass(frozen=True)
class RunSettings:
    """The top-level keys."""
    name: str
    description: str = ""
    seed: int = 1
    duration_ps: int = 1_000_000_000
    sample_ps: int = 1_000_000
    algorithms: tuple[str, ...] | None = None       # default: every registered algorithm
    replications: int = 1
    engine: str | None = None       # congestion engines: golden | fast | rtl (sim.net.engine_api)

    def __post_init__(self):
        check_int(self, "seed", self.seed, 0, 2**63 - 1)
        check_int(self, "replications", self.replications, 1, 1000)
        check_int(self, "duration_ps", self.duration_ps, 1, 10**13)
        check_int(self, "sample_ps", self.sample_ps, max(1, -(-self.duration_ps // MAX_SAMPLES)),
                  self.duration_ps, lo_name=f"duration_ps / {MAX_SAMPLES:,} samples",
                  hi_name="duration_ps")


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    source: str
    seed: int
    duration_ps: int
    sample_ps: int
    algorithms: tuple[str, ...]
    topology: object
    switch: object
    params: dict = field(repr=False)        # algorithm name -> its params instance
    workloads: tuple = ()
    cdfs: dict = field(default_factory=dict, repr=False)   # cdf workload name -> Cdf
    raw: dict = field(default_factory=dict, repr=False)    # the file as read (for the echo)
    switches: dict = field(default_factory=dict)           # algorithm -> [switch_for] override
    replications: int = 1                                  # seeds seed .. seed + n - 1
    engine: str | None = None                              # None: each algorithm's default

    def switch_for(self, algorithm: str):
        return self.switches.get(algorithm, self.switch)


def bundled() -> dict[str, Path]:
    """Bundled scenario name -> file."""
    return {p.stem: p for p in sorted(BUNDLED_DIR.glob("*.toml"))}


def find(name_or_path: str) -> Path:
    """A scenario file: an existing path, or the name of a bundled scenario."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    files = bundled()
    if name_or_path in files:
        return files[name_or_path]
    raise ScenarioError(name_or_path, "", missing(),
                        f"no such file and no bundled scenario of that name; bundled: "
                        f"{', '.join(files)}")


def read(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f, parse_float=Decimal)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(str(path), "", missing(), f"not valid TOML: {e}") from None


def load(name_or_path: str, overrides: dict | None = None, algorithms: list[str] | None = None
         ) -> Scenario:
    """Read, override (``{"duration_us": 100, "algo.ldcp.alpha": 0.5}``) and validate."""
    path = find(name_or_path)
    raw = read(path)
    for key, value in (overrides or {}).items():
        set_path(raw, key, value, str(path))
    if algorithms:
        raw["algorithms"] = list(algorithms)
    return from_dict(raw, str(path), path.parent, default_name=path.stem)


def parse_value(text: str):
    """A command-line value as TOML (``0.5``, ``16``, ``true``, ``"x"``), else a string."""
    try:
        return tomllib.loads(f"v = {text}", parse_float=Decimal)["v"]
    except tomllib.TOMLDecodeError:
        return text


_PATH = re.compile(r"^[A-Za-z_]\w*(\[\d+\])?(\.[A-Za-z_]\w*(\[\d+\])?)*$")
_STEP = re.compile(r"([A-Za-z_]\w*)(?:\[(\d+)\])?")


def set_path(raw: dict, dotted: str, value, source: str = "") -> None:
    """Set ``raw[...]`` at ``a.b[1].c``; a unit-suffixed key replaces its other spellings
    (``duration_us`` removes ``duration_ms``)."""
    if not _PATH.match(dotted) or dotted.endswith("]"):
        raise ScenarioError(source, dotted, value, "not a key path (like algo.ldcp.alpha or "
                            "workload[1].load)")
    *steps, last = [m.groups() for m in _STEP.finditer(dotted)]
    node = raw
    for key, index in steps:
        node = node.setdefault(key, {})
        if index is not None:
            if not isinstance(node, list) or int(index) >= len(node):
                raise ScenarioError(source, dotted, value, f"{key} has no element [{index}]")
            node = node[int(index)]
        if not isinstance(node, dict):
            raise ScenarioError(source, dotted, value, f"{key} is not a table")
    key = last[0]
    target = _canonical(key)
    for other in [k for k in node if _canonical(k) == target]:
        del node[other]
    node[key] = value


def _canonical(key: str) -> str:
    """Spellings of one field map to one string: ``duration_us``, ``duration_ms`` -> same."""
    unit = split_unit(key)
    return f"{unit[0]}|{FAMILIES.index(unit[1])}" if unit else key


def from_dict(raw: dict, source: str = "<scenario>", base_dir: Path | None = None,
              default_name: str = "scenario") -> Scenario:
    api = core.api()
    sections = ("topology", "switch", "switch_for", "algo", "workload")
    top = dict(raw)
    top.setdefault("name", default_name)
    settings = build(RunSettings, top, source, "", skip=sections)
    if not _NAME.match(settings.name):
        raise ScenarioError(source, "name", settings.name,
                            "use letters, digits, '_', '-', '.' (it names the output folder)")
    algorithms = tuple(api.ALGORITHMS) if settings.algorithms is None else settings.algorithms
    for i, name in enumerate(algorithms):
        if name not in api.ALGORITHMS:
            raise ScenarioError(source, join("algorithms", i), name,
                                f"unknown algorithm; known: {', '.join(api.ALGORITHMS)}")
    if not algorithms or len(set(algorithms)) != len(algorithms):
        raise ScenarioError(source, "algorithms", list(algorithms),
                            "needs at least one algorithm, each once")
    if settings.engine is not None:
        from sim.net.engine_api import check_engine
        for name in algorithms:
            try:
                check_engine(name, api.ALGORITHMS[name].engines, settings.engine)
            except ValueError as e:
                raise ScenarioError(source, "engine", settings.engine,
                                    f"{name} cannot run it: {e.allowed}") from None

    topology = _topology(raw.get("topology", missing()), source)
    switch_raw = raw.get("switch", {})
    if not isinstance(switch_raw, dict):
        raise ScenarioError(source, "switch", switch_raw, "expected a table")
    switch = build(api.SwitchConfig, switch_raw, source, "switch")
    switches = _switch_overrides(raw.get("switch_for", {}), switch_raw, tuple(api.ALGORITHMS),
                                 api, source)
    params = _params(raw.get("algo", {}), api.ALGORITHMS, source)
    workloads, cdfs = _workloads(raw.get("workload", missing()), topology, settings, source,
                                 base_dir)
    return Scenario(settings.name, settings.description, source, settings.seed,
                    settings.duration_ps, settings.sample_ps, tuple(algorithms), topology,
                    switch, params, workloads, cdfs, raw, switches, settings.replications,
                    settings.engine)


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _switch_overrides(table, switch_raw: dict, algorithms, api, source: str) -> dict:
    """``[switch_for.<algorithm>]``: keys of ``[switch]`` that differ for one algorithm (e.g.
    PFC on for DCQCN, off for LDCP, in one side-by-side comparison).  Any registered algorithm
    may be named (``--algo`` may run a subset of the file's algorithms)."""
    if not isinstance(table, dict):
        raise ScenarioError(source, "switch_for", table,
                            "expected a table of [switch_for.<algorithm>] tables")
    out = {}
    for name, section in table.items():
        if name not in algorithms:
            raise ScenarioError(source, join("switch_for", name), section,
                                f"unknown algorithm; known: {', '.join(algorithms)}")
        if not isinstance(section, dict):
            raise ScenarioError(source, join("switch_for", name), section, "expected a table")
        out[name] = build(api.SwitchConfig, _merge(switch_raw, section), source,
                          join("switch_for", name))
    return out


def _topology(table, source: str):
    if not isinstance(table, dict):
        raise ScenarioError(source, "topology", table, "a [topology] table is required")
    kind = table.get("kind", missing())
    if kind not in TOPOLOGIES:
        raise ScenarioError(source, "topology.kind", kind,
                            f"expected one of {', '.join(TOPOLOGIES)}")
    return build(TOPOLOGIES[kind], table, source, "topology", skip=("kind",))


def _params(table, algorithms: dict, source: str) -> dict:
    if not isinstance(table, dict):
        raise ScenarioError(source, "algo", table, "expected a table of [algo.<name>] tables")
    for name, section in table.items():
        if name not in algorithms:
            raise ScenarioError(source, join("algo", name), section,
                                f"unknown algorithm; known: {', '.join(algorithms)}")
        if not isinstance(section, dict):
            raise ScenarioError(source, join("algo", name), section, "expected a table")
    return {name: build(spec.params_cls, table.get(name, {}), source, join("algo", name))
            for name, spec in algorithms.items()}


def _workloads(items, topology, settings: RunSettings, source: str, base_dir: Path | None):
    if not isinstance(items, list) or not items:
        raise ScenarioError(source, "workload", items,
                            "at least one [[workload]] table is required")
    sizes = topology.groups()
    workloads, cdfs, names = [], {}, set()
    for i, table in enumerate(items):
        path = join("workload", i)
        if not isinstance(table, dict):
            raise ScenarioError(source, path, table, "expected a table")
        kind = table.get("kind", missing())
        if kind not in WORKLOADS:
            raise ScenarioError(source, join(path, "kind"), kind,
                                f"expected one of {', '.join(WORKLOADS)}")
        w = build(WORKLOADS[kind], table, source, path, skip=("kind",))
        if not _NAME.match(w.name) or w.name in names:
            raise ScenarioError(source, join(path, "name"), w.name,
                                "needs a unique name of letters, digits, '_', '-', '.'")
        names.add(w.name)
        start_field = "at_ps" if kind == "incast" else "start_ps"
        start = getattr(w, start_field)
        if start >= settings.duration_ps:
            key = next((k for k in table if _canonical(k) == _canonical(start_field)),
                       start_field)
            raise ScenarioError(source, join(path, key), table.get(key, start),
                                f"workload {w.name!r} starts at {start / 10**6:g} us, at or "
                                f"after the end of the run (duration = "
                                f"{settings.duration_ps / 10**6:g} us)")
        counts = {}
        for key in ("src", "dst"):
            try:
                counts[key] = len(parse_ref(getattr(w, key), sizes)[1])
            except ValueError as e:
                raise ScenarioError(source, join(path, key), getattr(w, key), str(e)) from None
        if kind == "cdf":
            try:
                cdfs[w.name] = cdf = load_cdf(w.distribution, base_dir)
            except DistributionError as e:
                raise ScenarioError(source, join(path, "distribution"), w.distribution,
                                    str(e)) from None
            rate = w.bottleneck_rate(topology, counts["src"], counts["dst"])
            expected = w.expected_flows(cdf, rate, settings.duration_ps)
            if expected > w.max_flows:
                raise ScenarioError(source, join(path, "load"), w.load,
                                    f"would generate about {expected:.0f} flows, more than "
                                    f"max_flows = {w.max_flows} (raise max_flows if intended)")
        workloads.append(w)
    return tuple(workloads), cdfs


def echo(s: Scenario) -> dict:
    """The scenario as read, JSON-ready (decimals as floats), for summaries."""
    def plain(v):
        if isinstance(v, Decimal):
            return float(v)
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, list):
            return [plain(x) for x in v]
        return v
    return plain(s.raw)


__all__ = ["Scenario", "ScenarioError", "load", "from_dict", "find", "bundled", "parse_value",
           "set_path", "echo", "show"]
