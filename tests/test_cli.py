"""``python -m sim``: list, a tiny run end to end on the core, a two-point sweep, bad files."""

from __future__ import annotations

import csv
import io
import json
import textwrap

import pytest

from sim.__main__ import ProgressBar, main
from sim.scenario import config

TINY = """
    name = "tiny"
    description = "two long flows and a small incast"
    duration_us = 150
    sample_us = 5
    algorithms = {algorithms}

    [topology]
    kind = "dumbbell"
    senders = 4
    rate_gbps = 10
    delay_us = 1

    [[workload]]
    name = "long"
    kind = "long"
    src = "senders[0:2]"

    [[workload]]
    name = "burst"
    kind = "incast"
    src = "senders[2:4]"
    size_kb = 10
    at_us = 20
"""


@pytest.fixture
def tiny(tmp_path):
    try:
        from sim.net.algorithms import ALGORITHMS
    except ImportError as e:
        pytest.skip(f"simulator core not available: {e}")
    algorithms = [a for a in ("dctcp", "dcqcn") if a in ALGORITHMS]
    path = tmp_path / "tiny.toml"
    path.write_text(textwrap.dedent(TINY.format(algorithms=json.dumps(algorithms))))
    return path, algorithms


def test_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in config.bundled():
        assert name in out
    assert "default" in out and "100G" in out
    assert "algorithm dctcp" in out


def test_run_end_to_end(tiny, tmp_path, capsys):
    path, algorithms = tiny
    out_dir = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out_dir), "--quiet", "--tag", "a"]) == 0
    printed = capsys.readouterr().out
    lines = printed.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["algorithm",
                                                                            "events"])
    assert [line.split()[0] for line in lines[header + 1: header + 1 + len(algorithms)]] == \
        algorithms
    folder = out_dir / "tiny-a"
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["scenario"]["name"] == "tiny" and summary["scenario"]["seed"] == 1
    assert list(summary["runs"]) == algorithms
    for algo in algorithms:
        run = summary["runs"][algo]
        assert run["events"] > 0 and run["events_per_s"] > 0 and run["flows"] == 4
        fct = run["metrics"]["fct"]
        assert fct["flows"] == 2 and fct["finished"] == 2     # 2 x 10 KB at 10G in 130 us
        with open(folder / f"{algo}_queues.csv") as f:
            rows = list(csv.reader(f))
        assert rows[0][0] == "time_us" and len(rows) == 1 + 150 // 5 + 1
        with open(folder / f"{algo}_flows.csv") as f:
            assert next(csv.reader(f)) == ["time_us", "f0_long", "f1_long"]
        with open(folder / f"{algo}_fct.csv") as f:
            assert len(list(csv.reader(f))) == 3
    for png in ("queues.png", "rates.png", "fct_slowdown_cdf.png", "comparison.png"):
        assert (folder / png).stat().st_size > 1000


def test_bad_file_fails_before_running(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(textwrap.dedent(TINY.format(algorithms='["dctcp"]'))
                    .replace('src = "senders[2:4]"', 'src = "senders[2:5]"'))
    out_dir = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out_dir)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: workload[1].src = 'senders[2:5]'" in err and "has 4 hosts" in err
    assert not out_dir.exists()
    assert main(["run", "no_such_scenario"]) == 2
    assert "bundled: " in capsys.readouterr().err


def test_sweep_grid(tiny, tmp_path, capsys):
    path, algorithms = tiny
    out_dir = tmp_path / "out"
    assert main(["sweep", str(path), "--algo", algorithms[0], "--jobs", "1", "--out",
                 str(out_dir), "--duration-us", "60", "--param", "topology.rate_gbps=10,25"]) == 0
    printed = capsys.readouterr().out
    assert "[0] duration_us=60 topology.rate_gbps=10" in printed
    with open(out_dir / "tiny" / "sweep.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["topology.rate_gbps"] for r in rows] == ["10", "25"]
    assert all(r["algorithm"] == algorithms[0] and int(r["events"]) > 0 for r in rows)
    assert main(["sweep", str(path), "--param", "topology.senders=4,0"]) == 2
    assert "topology.senders = 0" in capsys.readouterr().err     # checked before any run


def test_progress_bar_in_a_log():
    stream = io.StringIO()
    bar = ProgressBar("x/dctcp", 1000, stream=stream)
    for t in range(0, 1001, 10):
        bar(t)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 11 and lines[0].startswith("x/dctcp: 0% of")
    assert lines[-1].startswith("x/dctcp: 100% of")


def test_progress_bar_on_a_terminal():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    stream = Tty()
    bar = ProgressBar("x/ldcp", 2_000_000, stream=stream)
    bar(0)
    bar(1_000_000)              # within 0.2 s of the last draw: skipped
    bar(2_000_000)              # the end is always drawn
    bar.done()
    text = stream.getvalue()
    assert text.count("\r") == 2 and "100.0%" in text and text.endswith("\n")
    assert "2/2 us" in text
