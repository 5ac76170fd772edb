"""Per-flow state traces (sim.net.trace), CSV columns with units, queue labels and plots that
say why they are empty.  Small networks, a few hundred microseconds each."""

from __future__ import annotations

import csv
import json
import math
import textwrap

import pytest

from sim.net import topology
from sim.net.engine import PS_PER_US
from sim.net.network import FlowSpec, Network
from sim.scenario import output

ALGOS = ("dctcp", "ldcp", "dcqcn", "qcn", "timely", "swift")
#: the trace columns each algorithm fills (its engine's state)
FIELDS = {"dctcp": {"cwnd_pkts", "alpha", "rtt_us"}, "ldcp": {"cwnd_pkts"},
          "swift": {"cwnd_pkts", "rtt_us"}, "timely": {"rate_gbps", "rtt_us"},
          "dcqcn": {"rate_gbps", "target_rate_gbps", "alpha"},
          "qcn": {"rate_gbps", "target_rate_gbps"}}


def incast(algo: str, until_us: int, trace: bool = True, params=None):
    """Two long flows (tracked) from 10 us apart and an untracked 200 KB flow into one
    100 Gb/s receiver port."""
    net = Network(algo, params=params, seed=1, sample_ps=5 * PS_PER_US, trace=trace)
    topo = topology.dumbbell(net, senders=3)
    tx, rx = topo.groups["senders"], topo.groups["receivers"][0]
    for i in range(2):
        net.add_flow(FlowSpec(i, tx[i], rx, start_ps=i * 10 * PS_PER_US, tag="long"))
    net.add_flow(FlowSpec(2, tx[2], rx, size_bytes=200_000, start_ps=50 * PS_PER_US))
    net.run(until_us * PS_PER_US)
    return net, net.result()


def by_flow(rows):
    out = {}
    for r in rows:
        out.setdefault(r[1], []).append(r)
    return out


@pytest.mark.parametrize("algo", ALGOS)
def test_tracing_does_not_perturb_the_run(algo):
    # the hooks only read state: the same run, event for event, with and without them
    _, traced = incast(algo, 200)
    _, plain = incast(algo, 200, trace=False)
    assert traced.events == plain.events and traced.counters == plain.counters
    assert traced.flows == plain.flows and traced.queue_series == plain.queue_series
    assert plain.trace == [] and traced.trace
    assert set(traced.trace_fields) == FIELDS[algo], traced.trace_fields
    # tracked flows only (the long ones), time-ordered, starting with each flow's start row
    flows = by_flow(traced.trace)
    assert set(flows) == {0, 1}
    assert [r[0] for r in traced.trace] == sorted(r[0] for r in traced.trace)
    assert all(rows[0][2] == "start" and rows[0][0] == f * 10 * PS_PER_US
               for f, rows in flows.items())


def test_dcqcn_trace_cuts_after_cnps():
    net, res = incast("dcqcn", 300)
    cuts = 0
    for fid, rows in by_flow(res.trace).items():
        rp = net.sender(fid).rp
        cut_rows = [i for i, r in enumerate(rows) if r[2] == "cut"]
        # each cut row is at the cycle the model cut at (a CNP's arrival)
        assert [rows[i][0] for i in cut_rows] == [c * net.clk_ps for c in rp.cut_cycles]
        for i in cut_rows:
            before, after = rows[i - 1], rows[i]
            rate0, rate1, target1 = before[4], after[4], after[5]
            # Rc <- Rc (1 - alpha / 2), alpha <= 1; the target takes the rate before the cut
            assert rate0 / 2 - 1e-6 <= rate1 < rate0 and target1 == rate0, (before, after)
        # the first cut from the line rate with alpha = 1 (its initial value, and the CNP's
        # update (1 - g) + g keeps it): exactly half of 100 Gb/s, the target at 100
        first = rows[cut_rows[0]]
        assert (first[4], first[5], first[6]) == (50.0, 100.0, 1.0), first
        cuts += len(cut_rows)
    assert 0 < cuts <= res.counters["cnps"]


def test_dctcp_trace_cut_follows_the_alpha_rule():
    _, res = incast("dctcp", 400)
    assert res.counters["marks"] > 0
    cuts = 0
    for rows in by_flow(res.trace).values():
        for before, after in zip(rows, rows[1:], strict=False):
            if after[2] != "cut":
                continue
            cwnd, alpha = before[3], after[6]     # the cut uses this ACK's updated alpha
            # RFC 8257: cwnd <- cwnd (1 - alpha / 2), Linux rounds the reduction down, >= 2
            assert after[3] == max(cwnd - math.floor(cwnd * alpha / 2), 2), (before, after)
            assert cwnd / 2 <= after[3] < cwnd
            cuts += 1
    assert cuts >= 4


def test_queue_traces_are_named_after_their_link():
    _, res = incast("dctcp", 20)
    assert list(res.queue_series) == ["sw->rx0"] and "sw->rx0" in res.port_tx_bytes
    net = Network("dctcp")
    topology.chain(net, switches=3, senders=1)
    net.connect(net.switches[0], net.switches[1], 10**11, 10**6)      # a parallel link
    names = [p.name for p in net.switches[0].ports]
    assert names[0] == "s0->s1" and names[-1] == "s0->s1#2" and "s0->tx0" in names
    assert [p.name for p in net.monitored] == ["s0->s1", "s1->s2", "s2->rx0"]


TINY = """
    name = "tiny"
    duration_us = 120
    sample_us = 5
    algorithms = ["dctcp", "dcqcn"]

    [topology]
    kind = "dumbbell"
    senders = 4
    rate_gbps = 10
    delay_us = 1
    {long}
    [[workload]]
    name = "burst"
    kind = "incast"
    src = "senders[2:4]"
    size_kb = 10
    at_us = 20
"""
LONG = """
    [[workload]]
    name = "long"
    kind = "long"
    src = "senders[0:2]"
"""


def run_cli(tmp_path, long: bool):
    from sim.__main__ import main
    path = tmp_path / "tiny.toml"
    path.write_text(textwrap.dedent(TINY.format(long=LONG if long else "")))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    return tmp_path / "out" / "tiny"


def test_csv_columns_carry_units_and_trace_time_is_monotonic(tmp_path, capsys):
    folder = run_cli(tmp_path, long=True)
    capsys.readouterr()
    for algo in ("dctcp", "dcqcn"):
        with open(folder / f"{algo}_queues.csv") as f:
            assert next(csv.reader(f)) == ["time_us", "sw->rx0_queue_bytes"]
        with open(folder / f"{algo}_flows.csv") as f:
            assert next(csv.reader(f)) == ["time_us", "f0_long_gbps", "f1_long_gbps"]
        with open(folder / f"{algo}_trace.csv") as f:
            rows = list(csv.reader(f))
        head = rows[0]
        assert head[:4] == ["time_us", "flow", "tag", "event"]
        assert set(head[4:]) == FIELDS[algo]
        assert all(c.endswith(("_us", "_gbps", "_pkts")) or c == "alpha" for c in head[4:])
        times = [float(r[0]) for r in rows[1:]]
        assert times == sorted(times) and len(times) > (10 if algo == "dctcp" else 1)
        assert {r[1] for r in rows[1:]} == {"0", "1"} and {r[2] for r in rows[1:]} == {"long"}
    manifest = json.loads((folder / ".sim-outputs").read_text())
    assert "dctcp_trace.csv" in manifest and "traces.png" in manifest
    assert "dctcp_trace.csv" in output._own_files(folder, ["dctcp"])     # cleared next time


def test_plots_with_nothing_to_plot_say_so(tmp_path, capsys, monkeypatch):
    said = []
    plain = output._message

    def message(ax, text):
        said.append(text)
        plain(ax, text)
    monkeypatch.setattr(output, "_message", message)
    folder = run_cli(tmp_path, long=False)        # sized flows only: nothing is tracked
    capsys.readouterr()
    for png in ("queues.png", "rates.png", "fct_slowdown_cdf.png", "comparison.png",
                "traces.png"):
        assert (folder / png).stat().st_size > 1000
    assert sum(t.startswith("no tracked flow") for t in said) == 4    # rates + traces, x2
    assert "no drops" in said and "no PFC pause" in said
    assert not (folder / "dctcp_trace.csv").exists()
