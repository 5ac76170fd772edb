"""The run's seed feeds every random source of the network: each switch's marker LFSR, each
QCN congestion point (per switch and port) and reaction point (per flow), ECMP, and the
workloads' draws.  The same seed reproduces a run exactly; another seed changes a run whose
outcome depends on the draws.  ``python -m sim run --seeds`` gives replications with the mean
and spread of every metric."""

from __future__ import annotations

import csv
import json
import textwrap

from sim.__main__ import main
from sim.net.algorithms import DcqcnParams, QcnParams
from sim.net.engine import PS_PER_US
from sim.net.network import FlowSpec, Network, SwitchConfig
from sim.net.topology import dumbbell, leaf_spine
from sim.scenario import load
from sim.scenario.metrics import summarize
from sim.scenario.runner import run
from sim.scenario.workload import IncastWorkload, LongWorkload, generate_flows


def red_incast(seed: int):
    """RED marking (DCQCN's profile, p_max 1) under an 8-to-1 incast: every mark is a draw."""
    params = DcqcnParams(profile="paper", kmin_bytes=5_000, kmax_bytes=200_000, pmax=1.0)
    net = Network("dcqcn", params, SwitchConfig(queue_bytes=400_000, buffer_bytes=800_000),
                  seed=seed, sample_ps=5 * PS_PER_US)
    topo = dumbbell(net, senders=8, rate_bps=100 * 10**9, delay_ps=PS_PER_US)
    rx = topo.groups["receivers"][0]
    for i, s in enumerate(topo.groups["senders"]):
        net.add_flow(FlowSpec(i, s, rx, 100_000))
    net.run(150 * PS_PER_US)
    return net.result()


def test_same_seed_same_run_other_seed_other_run():
    a, b, c = red_incast(7), red_incast(7), red_incast(8)
    assert a.counters["marks"] > 100
    assert a == b
    assert a.seed == 7 and c.seed == 8
    assert a.counters["marks"] != c.counters["marks"] or a.queue_series != c.queue_series
    assert [f.finish_ps for f in a.flows] != [f.finish_ps for f in c.flows]


def lfsr_seeds(seed: int):
    net = Network("qcn", QcnParams(), seed=seed)
    leaf_spine(net, leaves=2, spines=2, hosts_per_leaf=2)
    topo_hosts = list(net.hosts)
    net.add_flow(FlowSpec(0, topo_hosts[0], topo_hosts[-1], 1000))
    net.add_flow(FlowSpec(1, topo_hosts[1], topo_hosts[-1], 1000))
    markers = [sw.marker.lfsr_state for sw in net.switches]
    cps = [p.cp.lfsr for sw in net.switches for p in sw.ports]
    rps = [net.sender(f).rp.lfsr for f in (0, 1)]
    return markers, cps, rps


def test_every_lfsr_has_its_own_seed_and_the_run_seed_moves_them_all():
    markers, cps, rps = lfsr_seeds(1)
    assert len(set(markers)) == len(markers) == 4                # one per switch
    assert len(set(cps)) == len(cps) == 2 * 2 + 2 * 4             # one per switch port
    assert len(set(rps)) == 2                                     # one per flow
    assert all(0 < x < 1 << 32 for x in markers + cps + rps)
    again = lfsr_seeds(1)
    other = lfsr_seeds(2)
    assert again == (markers, cps, rps)
    assert not set(other[0]) & set(markers) and not set(other[1]) & set(cps)
    assert not set(other[2]) & set(rps)


def test_ecmp_choices_follow_the_seed():
    def uplinks(seed):
        net = Network("dctcp", seed=seed)
        topo = leaf_spine(net, leaves=2, spines=4, hosts_per_leaf=1)
        a, b = topo.groups["leaf0"][0], topo.groups["leaf1"][0]
        return [net._path(a, b, flow)[1].name for flow in range(32)]
    one, two = uplinks(1), uplinks(2)
    assert one == uplinks(1)
    assert len(set(one)) == 4 and one != two


def test_workload_jitter_is_seeded_and_bounded():
    groups = {"senders": list(range(10)), "receivers": [10]}
    wl = (LongWorkload("long", src="senders[0:2]", jitter_ps=3000),
          IncastWorkload("burst", 1000, src="senders[2:10]", at_ps=50_000, jitter_ps=2000))

    def starts(seed):
        return [f.start_ps for f in generate_flows(wl, groups, None, 10**9, seed, {})]
    s1 = starts(1)
    assert s1 == starts(1) and s1 != starts(2)
    assert all(0 <= t <= 3000 for t in s1[:2])
    assert all(50_000 <= t <= 52_000 for t in s1[2:]) and len(set(s1[2:])) > 4
    nojit = (LongWorkload("long", src="senders[0:2]"),)
    assert [f.start_ps for f in generate_flows(nojit, groups, None, 10**9, 3, {})] == [0, 0]


SCENARIO = """
    name = "reps"
    duration_us = 120
    sample_us = 5
    algorithms = ["dcqcn", "dctcp"]

    [topology]
    kind = "dumbbell"
    senders = 4
    rate_gbps = 100
    delay_us = 1

    [algo.dcqcn]
    kmin_kb = 5
    pmax = 1.0

    [[workload]]
    name = "burst"
    kind = "incast"
    src = "senders"
    size_kb = 60
    at_us = 10
    jitter_us = 1
"""


def test_run_with_seeds_prints_and_writes_the_spread(tmp_path, capsys):
    path = tmp_path / "reps.toml"
    path.write_text(textwrap.dedent(SCENARIO))
    out = tmp_path / "out"
    assert main(["run", str(path), "--seeds", "3..5", "--jobs", "1", "--out", str(out),
                 "--quiet", "--no-plots"]) == 0
    printed = capsys.readouterr().out
    assert "3 seeds 3..5: mean ±sd, [min, max]" in printed
    reps = json.loads((out / "reps" / "replications.json").read_text())
    assert reps["seeds"] == [3, 4, 5] and list(reps["runs"]) == ["dcqcn", "dctcp"]
    p99 = reps["runs"]["dcqcn"]["metrics.headline.slowdown_p99"]
    assert len(p99["values"]) == 3 and p99["n"] == 3
    assert p99["min"] <= p99["mean"] <= p99["max"] and p99["max"] > p99["min"]
    mean = sum(p99["values"]) / 3
    sd = (sum((v - mean) ** 2 for v in p99["values"]) / 2) ** 0.5
    assert abs(p99["mean"] - mean) < 1e-9 and abs(p99["sd"] - sd) < 1e-9
    assert reps["runs"]["dctcp"]["events"]["n"] == 3
    with open(out / "reps" / "replications.csv") as f:
        rows = list(csv.DictReader(f))
    assert {"seed_3", "seed_4", "seed_5", "mean", "sd"} <= set(rows[0])
    summary = json.loads((out / "reps" / "summary.json").read_text())
    assert summary["scenario"]["seed"] == 3


def test_the_replications_key_runs_seed_to_seed_plus_n_minus_1(tmp_path):
    # A scenario with ``seed = 7`` and ``replications = 3`` and no --seeds: seeds 7, 8 and 9,
    # each the same run as the scenario alone at that seed (one process).
    text = textwrap.dedent(SCENARIO).replace('name = "reps"', 'name = "reps"\nseed = 7\n'
                                             'replications = 3')
    text = text.replace('algorithms = ["dcqcn", "dctcp"]', 'algorithms = ["dctcp"]')
    path = tmp_path / "reps.toml"
    path.write_text(text)
    out = tmp_path / "out"
    assert main(["run", str(path), "--jobs", "1", "--out", str(out), "--quiet",
                 "--no-plots"]) == 0
    reps = json.loads((out / "reps" / "replications.json").read_text())
    assert reps["seeds"] == [7, 8, 9]
    alone = [run(load(str(path), {"seed": s}), "dctcp").result for s in (7, 8, 9)]
    assert reps["runs"]["dctcp"]["events"]["values"] == [r.events for r in alone]
    p99 = reps["runs"]["dctcp"]["metrics.headline.slowdown_p99"]["values"]
    assert p99 == [summarize(r)["headline"]["slowdown_p99"] for r in alone]
    assert len(set(p99)) > 1                  # (the seeds moved the incast's jitter)
    assert json.loads((out / "reps" / "summary.json").read_text())["scenario"]["seed"] == 7
