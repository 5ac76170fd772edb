"""Scenario files: loading, unit conversion, and every class of validation error naming its key.

Most tests run against a small fake of the core's registry (``sim.scenario.core.api``) so that
they pin the scenario layer's behaviour independently of the algorithms' parameter classes; the
last ones load every bundled scenario against the real core.
"""

from __future__ import annotations

import random
import textwrap
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from hw.params import check_choice, check_int, check_real
from sim.scenario import config
from sim.scenario.fields import ScenarioError


@dataclass(frozen=True)
class FakeParams:
    alpha: float = 0.5
    k_bytes: int = 20_000
    rto_ns: int = 1_000_000
    mode: str = "a"
    fast: bool = True

    def __post_init__(self):
        check_real(self, "alpha", self.alpha, 0.0, 1.0, lo_open=True)
        check_int(self, "k_bytes", self.k_bytes, 1, 10**7)
        check_choice(self, "mode", self.mode, ("a", "b"))


@dataclass(frozen=True)
class FakePfc:
    enabled: bool = False
    xoff_bytes: int = 200_000
    pause_time_ps: int = 50_000_000

    def __post_init__(self):
        check_int(self, "xoff_bytes", self.xoff_bytes, 1)


@dataclass(frozen=True)
class FakeSwitch:
    buffer_bytes: int = 4_000_000
    mtu: int = 1000
    pfc: FakePfc = field(default_factory=FakePfc)


FAKE = SimpleNamespace(
    ALGORITHMS={name: SimpleNamespace(name=name, params_cls=FakeParams)
                for name in ("dctcp", "ldcp")},
    SwitchConfig=FakeSwitch, PfcConfig=FakePfc)

BASE = """
    name = "t"
    duration_us = 100
    sample_us = 1
    algorithms = ["dctcp", "ldcp"]

    [topology]
    kind = "dumbbell"
    senders = 8
    rate_gbps = 100
    delay_us = 1.5

    [switch]
    buffer_kb = 1200
    [switch.pfc]
    enabled = true
    pause_time_us = 2

    [algo.ldcp]
    alpha = 0.25
    k_kb = 40
    rto_us = 3

    [[workload]]
    name = "long"
    kind = "long"
    src = "senders[0:2]"

    [[workload]]
    name = "burst"
    kind = "incast"
    src = "senders[2:8]"
    size_kb = 64
    at_us = 10
"""


@pytest.fixture(autouse=True)
def fake_core(monkeypatch):
    monkeypatch.setattr("sim.scenario.core.api", lambda: FAKE)


def load(tmp_path, text, name="t.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return config.load(str(path))


def error(tmp_path, text) -> str:
    with pytest.raises(ScenarioError) as e:
        load(tmp_path, text)
    message = str(e.value)
    assert str(tmp_path / "t.toml") in message, message      # every error names the file
    return message


def edit(old: str, new: str) -> str:
    assert old in BASE, old
    return BASE.replace(old, new)


def test_valid_file_converts_units_exactly(tmp_path):
    s = load(tmp_path, BASE)
    assert (s.duration_ps, s.sample_ps) == (100_000_000, 1_000_000)
    assert s.topology.delay_ps == 1_500_000 and s.topology.rate_bps == 100_000_000_000
    assert s.switch == FakeSwitch(buffer_bytes=1_200_000,
                                  pfc=FakePfc(enabled=True, pause_time_ps=2_000_000))
    assert s.params["ldcp"] == FakeParams(alpha=0.25, k_bytes=40_000, rto_ns=3000)
    assert s.params["dctcp"] == FakeParams()                    # no section: the defaults
    assert [w.kind for w in s.workloads] == ["long", "incast"]
    assert s.workloads[1].size_bytes == 64_000 and s.workloads[1].at_ps == 10_000_000
    assert s.algorithms == ("dctcp", "ldcp") and s.seed == 1


@pytest.mark.parametrize("old, new, expect", [
    # unknown keys, at every level
    ("sample_us = 1", "sample_us = 1\nsampel_us = 2", ["sampel_us = 2", "unknown key",
                                                       "sample_{ps|ns|us|ms}"]),
    ("alpha = 0.25", "alfa = 0.25", ["algo.ldcp.alfa = 0.25", "unknown key", "alpha"]),
    ("enabled = true", "enable = true", ["switch.pfc.enable", "unknown key"]),
    ("at_us = 10", "at_us = 10\nsenders = 3", ["workload[1].senders = 3", "unknown key"]),
    ("senders = 8", "senders = 8\nspines = 2", ["topology.spines", "unknown key"]),
    # wrong types
    ("senders = 8", 'senders = "8"', ["topology.senders = '8'", "expected an integer"]),
    ("senders = 8", "senders = 8.0", ["topology.senders = 8.0", "expected an integer"]),
    ("alpha = 0.25", "alpha = true", ["algo.ldcp.alpha = True", "expected a number"]),
    ("enabled = true", "enabled = 1", ["switch.pfc.enabled = 1", "expected true or false"]),
    ("kind = \"long\"", "kind = \"long\"\ndst = 3", ["workload[0].dst = 3",
                                                    "expected a string"]),
    # out of range: the class's own ConfigError, on the key that set the field
    ("alpha = 0.25", "alpha = 1.5", ["algo.ldcp.alpha = 1.5", "FakeParams.alpha",
                                     "allowed 0.0 < alpha <= 1.0"]),
    ("k_kb = 40", "k_kb = 0", ["algo.ldcp.k_kb = 0", "k_bytes"]),
    ("senders = 8", "senders = 0", ["topology.senders = 0", "1 <= senders"]),
    ("senders = 8", "senders = 1024", ["topology.senders = 1024", "1024 switch ports"]),
    ("size_kb = 64", "size_kb = -1", ["workload[1].size_kb = -1", "size_bytes"]),
    ("pause_time_us = 2", "pause_time_us = 2\nxoff_kb = 0", ["switch.pfc.xoff_kb = 0"]),
    ("sample_us = 1", "sample_us = 200", ["sample_us = 200", "duration_ps"]),
    ("sample_us = 1", "sample_ns = 0.01", ["sample_ns = 0.01", "2,000,000 samples"]),
    ("alpha = 0.25", 'mode = "c"', ["algo.ldcp.mode = 'c'", "one of 'a', 'b'"]),
    # unknown groups and bad references
    ('src = "senders[0:2]"', 'src = "senderz"', ["workload[0].src = 'senderz'",
                                                 "unknown group 'senderz'",
                                                 "senders, receivers, all"]),
    ('src = "senders[0:2]"', 'src = "senders[0:9]"', ["workload[0].src", "has 8 hosts"]),
    ('src = "senders[2:8]"', 'src = "senders[8]"', ["workload[1].src", "out of range"]),
    ('src = "senders[0:2]"', 'src = "senders[0:2"', ["workload[0].src", "group reference"]),
    # unknown algorithms
    ('algorithms = ["dctcp", "ldcp"]', 'algorithms = ["dctcp", "tcp"]',
     ["algorithms[1] = 'tcp'", "unknown algorithm", "dctcp, ldcp"]),
    ("[algo.ldcp]", "[algo.swift]", ["algo.swift", "unknown algorithm"]),
    ('algorithms = ["dctcp", "ldcp"]', "algorithms = []", ["algorithms = []"]),
    # unit conversions that are not whole numbers of the field's unit
    ("delay_us = 1.5", "delay_ns = 0.0005", ["topology.delay_ns = 0.0005", "whole number"]),
    ("rto_us = 3", "rto_us = 0.0000001", ["algo.ldcp.rto_us", "whole number"]),
    ("size_kb = 64", "size_kb = 64.0005", ["workload[1].size_kb = 64.0005", "whole number"]),
    ("senders = 8", "senders_us = 8", ["topology.senders_us", "unknown key"]),
    # one field set twice, required keys, kinds
    ("delay_us = 1.5", "delay_us = 1.5\ndelay_ns = 1500", ["topology.delay_ns",
                                                          "already set by topology.delay_us"]),
    ("size_kb = 64", "", ["workload[1].size_{bytes|kb|mb}", "required key is missing"]),
    ('kind = "incast"', 'kind = "burst"', ["workload[1].kind = 'burst'", "long, incast, cdf"]),
    ('kind = "dumbbell"', 'kind = "torus"', ["topology.kind = 'torus'", "leaf_spine"]),
    ('name = "burst"', 'name = "long"', ["workload[1].name = 'long'", "unique"]),
    ('name = "t"', 'name = "a b"', ["name = 'a b'", "output folder"]),
    # a workload that would start after the run ends (issue 15)
    ("at_us = 10", "at_us = 100", ["workload[1].at_us = 100", "workload 'burst' starts at "
                                   "100 us, at or after the end of the run (duration = 100 us)"]),
    ('src = "senders[0:2]"', 'src = "senders[0:2]"\nstart_ms = 0.5',
     ["workload[0].start_ms = 0.5", "workload 'long' starts at 500 us"]),
])
def test_errors_name_file_key_value_and_problem(tmp_path, old, new, expect):
    message = error(tmp_path, edit(old, new))
    for fragment in expect:
        assert fragment in message, (fragment, message)


def test_missing_sections_and_toml_syntax(tmp_path):
    assert "topology" in error(tmp_path, 'name = "x"\n[[workload]]\nname = "a"\nkind = "long"')
    msg = error(tmp_path, BASE.split("[[workload]]")[0])
    assert "workload" in msg and "at least one" in msg
    assert "not valid TOML" in error(tmp_path, BASE + "\nsenders = = 3\n")


def test_cdf_workload_checks_distribution_and_flow_count(tmp_path):
    cdf = textwrap.dedent("""
        [[workload]]
        name = "web"
        kind = "cdf"
        load = 0.5
        distribution = "web_search"
    """)
    s = load(tmp_path, BASE + cdf)
    assert s.cdfs["web"].name == "web_search"
    msg = error(tmp_path, BASE + cdf.replace("web_search", "no_such.csv"))
    assert "workload[2].distribution = 'no_such.csv'" in msg and "web_search" in msg
    (tmp_path / "mine.csv").write_text("size_bytes,cdf\n100,0\n300,1\n")
    assert load(tmp_path, BASE + cdf.replace("web_search", "mine.csv")).cdfs["web"].mean == 200
    # 50 % of 100 Gb/s for 100 us at a 1.6 MB mean is ~0.4 flows; 10 s would be ~37,000
    msg = error(tmp_path, BASE.replace("duration_us = 100", "duration_ms = 10000")
                .replace("sample_us = 1", "sample_us = 10000") +
                cdf + "max_flows = 1000\n")
    assert "workload[2].load = 0.5" in msg and "max_flows = 1000" in msg
    assert "workload[2].load = 1.5" in error(tmp_path, BASE + cdf.replace("0.5", "1.5"))
    assert "workload[2].bottleneck = 'mid'" in error(
        tmp_path, BASE + cdf + 'bottleneck = "mid"\n')


def test_overrides_replace_other_spellings(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text(textwrap.dedent(BASE))
    s = config.load(str(path), {"duration_ms": config.parse_value("0.05"),
                                "algo.ldcp.alpha": config.parse_value("1"),
                                "workload[1].size_bytes": 1500,
                                "topology.senders": config.parse_value("16")}, ["ldcp"])
    assert s.duration_ps == 50_000_000 and s.params["ldcp"].alpha == 1.0
    assert s.workloads[1].size_bytes == 1500 and s.topology.senders == 16
    assert s.algorithms == ("ldcp",)
    with pytest.raises(ScenarioError, match="workload has no element"):
        config.load(str(path), {"workload[5].load": 1})
    with pytest.raises(ScenarioError, match="not a key path"):
        config.load(str(path), {"algo..x": 1})
    assert config.parse_value("true") is True and config.parse_value("fast") == "fast"


def test_predicted_groups(tmp_path):
    s = load(tmp_path, edit('kind = "dumbbell"\n    senders = 8',
                            'kind = "leaf_spine"\n    leaves = 3\n    hosts_per_leaf = 4')
             .replace("rate_gbps", "host_rate_gbps")
             .replace("senders[0:2]", "leaf0").replace("senders[2:8]", "leaf1[1:4]")
             .replace('size_kb = 64', 'size_kb = 64\n    dst = "leaf2[3]"')
             .replace('src = "leaf0"', 'src = "leaf0"\n    dst = "leaf2"'))
    assert s.topology.groups() == {"leaf0": 4, "leaf1": 4, "leaf2": 4, "all": 12}


# ---- against the real core ------------------------------------------------------------------


def _real_core_or_skip():
    try:
        from sim.net.algorithms import ALGORITHMS
    except ImportError as e:   # the core's registry has not landed in this checkout
        pytest.skip(f"simulator core not available: {e}")
    return ALGORITHMS


@pytest.mark.parametrize("name", sorted(config.bundled()))
def test_bundled_scenarios_validate_on_the_core(monkeypatch, name):
    monkeypatch.undo()
    algorithms = _real_core_or_skip()
    from sim.scenario import runner

    raw = config.read(config.bundled()[name])
    missing = [a for a in raw.get("algorithms", []) + list(raw.get("algo", {}))
               if a not in algorithms]
    if missing:
        pytest.skip(f"algorithms not in the core yet: {missing}")
    scn = config.load(name)
    assert scn.name == name and scn.description
    runner.check(scn)       # the core builds the predicted groups and every flow is valid


def test_workload_generation_is_deterministic_and_leaves_global_rng(monkeypatch, tmp_path):
    monkeypatch.undo()
    _real_core_or_skip()
    from sim.scenario import runner

    state = random.getstate()
    scn = config.load("websearch_leafspine", {"duration_us": 200}, ["dctcp"])
    first = runner.build(scn, "dctcp")[2]
    again = runner.build(scn, "dctcp")[2]
    other = runner.build(config.load("websearch_leafspine", {"duration_us": 200, "seed": 2},
                                     ["dctcp"]), "dctcp")[2]
    assert first == again and first != other and len(first) > 10
    assert random.getstate() == state


def test_core_rejection_is_reported_before_any_run(tmp_path, monkeypatch):
    from hw.params import ConfigError
    from sim.scenario import runner

    s = load(tmp_path, BASE)
    built = []

    def fake_build(scn, algorithm):
        built.append(algorithm)
        if algorithm == "ldcp":
            raise ConfigError("MarkerConfig", "k_min", 7, "0 <= k_min <= 5")

    monkeypatch.setattr(runner, "build", fake_build)
    with pytest.raises(ScenarioError) as e:
        runner.check(s)
    assert built == ["dctcp", "ldcp"]
    assert str(e.value).startswith(f"{tmp_path / 't.toml'}: algo.ldcp: the core rejects")
    assert "MarkerConfig.k_min = 7" in str(e.value)


def test_switch_for_overrides_one_algorithm_and_survives_an_algorithm_subset(monkeypatch):
    monkeypatch.undo()                                    # the real core's algorithms
    from sim.scenario import load
    scn = load("pfc_spreading")
    assert scn.switch_for("dcqcn").pfc.enabled and not scn.switch_for("ldcp").pfc.enabled
    assert scn.switch_for("dctcp").pfc.xoff_bytes == scn.switch.pfc.xoff_bytes
    only = load("default", algorithms=["ldcp"])          # [switch_for.dcqcn] still valid
    assert only.algorithms == ("ldcp",) and not only.switch_for("ldcp").pfc.enabled
    with pytest.raises(ScenarioError, match="switch_for.tcp"):
        load("default", overrides={"switch_for.tcp.mtu": 1500})


def test_a_workload_may_start_just_before_the_end(tmp_path):
    s = load(tmp_path, edit("at_us = 10", "at_us = 99.999"))
    assert s.workloads[1].at_ps == 99_999_000


def test_event_estimate_scales_with_the_run(tmp_path):
    from sim.scenario import runner

    short = runner.estimate_events(load(tmp_path, BASE))
    longer = runner.estimate_events(load(tmp_path, edit("duration_us = 100",
                                                        "duration_us = 1000")))
    assert 0 < short < longer
    # the long flows carry at most the receivers' link: 100 Gb/s x 1 ms / 1000 B packets,
    # plus the 6 x 64 KB burst
    packets = 100e9 * 1e-3 / 8 / 1000 + 6 * 64_000 / 1000
    assert longer == int(packets * runner.EVENTS_PER_PACKET)
