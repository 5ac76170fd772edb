"""``python -m sim``: list, a tiny run end to end on the core, a two-point sweep, bad files."""

from __future__ import annotations

import csv
import io
import json
import textwrap

import pytest

from sim.__main__ import ProgressBar, main
from sim.scenario import config
from tests.dumbbell_scenario import dumbbell_toml


def tiny_toml(algorithms) -> str:
    """Two long flows and a small incast for 150 us."""
    return dumbbell_toml(duration_us=150, algorithms=algorithms)


@pytest.fixture
def tiny(tmp_path):
    try:
        from sim.net.algorithms import ALGORITHMS
    except ImportError as e:
        pytest.skip(f"simulator core not available: {e}")
    algorithms = [a for a in ("dctcp", "dcqcn") if a in ALGORITHMS]
    path = tmp_path / "tiny.toml"
    path.write_text(tiny_toml(algorithms))
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
            assert next(csv.reader(f)) == ["time_us", "f0_long_gbps", "f1_long_gbps"]
        with open(folder / f"{algo}_trace.csv") as f:     # the 2 long flows are tracked
            trace = list(csv.DictReader(f))
        assert {r["flow"] for r in trace} == {"0", "1"} and trace[0]["event"] == "start"
        with open(folder / f"{algo}_fct.csv") as f:
            assert len(list(csv.reader(f))) == 3
    for png in ("queues.png", "rates.png", "fct_slowdown_cdf.png", "comparison.png",
                "traces.png"):
        assert (folder / png).stat().st_size > 1000


def test_bad_file_fails_before_running(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(tiny_toml(["dctcp"])
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


# -- errors, output folders, Ctrl-C (issue 15) -----------------------------------------------
def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("argv, expect", [
    (["bench", "--senders", "abc"], "argument --senders: expected comma-separated positive"),
    (["bench", "--senders", "10,0"], "argument --senders: expected positive integers"),
    (["bench", "--size-bytes", "-5"], "argument --size-bytes: expected a positive integer"),
    (["run", "default", "--jobs", "0"], "argument --jobs: expected a positive integer, not 0"),
    (["run", "default", "--jobs", "-3"], "argument --jobs: expected a positive integer"),
    (["sweep", "default", "--jobs", "0"], "argument --jobs: expected a positive integer"),
    (["run", "default", "--seeds", "x"], "argument --seeds: expected FIRST..LAST"),
    (["run"], "the following arguments are required: scenario"),
])
def test_usage_errors_are_one_line(argv, expect, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    line = _one_error_line(capsys.readouterr().err)
    assert expect in line and line.startswith("python -m sim ")


def _no_runs(monkeypatch):
    from sim.scenario import runner

    def fail(*a, **k):
        raise AssertionError("simulated although the command line was bad")
    monkeypatch.setattr(runner, "run", fail)


def test_missing_scenario_and_unwritable_out(tiny, tmp_path, capsys, monkeypatch):
    path, _ = tiny
    _no_runs(monkeypatch)
    assert main(["run", "no_such_scenario"]) == 2
    assert "no_such_scenario: no such file" in _one_error_line(capsys.readouterr().err)
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    for cmd in (["run", str(path)], ["sweep", str(path), "--param", "topology.rate_gbps=10"],
                ["bench", "--senders", "2"]):
        assert main([*cmd, "--out", str(blocker / "out"), "--quiet"] if cmd[0] != "sweep"
                    else [*cmd, "--out", str(blocker / "out")]) == 2
        line = _one_error_line(capsys.readouterr().err)
        assert line.startswith("error: cannot write the output folder") and "a_file" in line
    assert blocker.read_text() == "not a folder"


def test_internal_error_is_one_line(tiny, tmp_path, capsys, monkeypatch):
    from sim.scenario import runner

    path, _ = tiny

    def broken(*a, **k):
        raise RuntimeError("core\nexploded")
    monkeypatch.setattr(runner, "run", broken)
    monkeypatch.delenv("SIM_TRACEBACK", raising=False)
    assert main(["run", str(path), "--out", str(tmp_path / "o"), "--quiet"]) == 1
    line = _one_error_line(capsys.readouterr().err)
    assert "internal error, RuntimeError: core exploded" in line and "SIM_TRACEBACK" in line


def test_a_run_clears_what_an_earlier_run_wrote(tiny, tmp_path, capsys):
    path, algorithms = tiny
    if len(algorithms) < 2:
        pytest.skip("needs two algorithms")
    out_dir = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out_dir), "--quiet", "--no-plots"]) == 0
    folder = out_dir / "tiny"
    assert (folder / f"{algorithms[1]}_queues.csv").exists()
    manifest = json.loads((folder / ".sim-outputs").read_text())
    assert "summary.json" in manifest and f"{algorithms[1]}_fct.csv" in manifest
    (folder / "notes.txt").write_text("mine")             # the user's own files stay
    (folder / "my_fct.csv").write_text("mine")
    (folder / "queues.png").write_text("stale plot of an earlier run")
    assert main(["run", str(path), "--out", str(out_dir), "--quiet", "--no-plots",
                 "--algo", algorithms[0]]) == 0
    capsys.readouterr()
    left = sorted(p.name for p in folder.iterdir())
    assert left == sorted(["notes.txt", "my_fct.csv", ".sim-outputs", "summary.json",
                           *(f"{algorithms[0]}_{k}.csv" for k in ("queues", "flows", "fct"))]
                          + [n for n in left if n.startswith(f"{algorithms[0]}_") and
                             n not in {f"{algorithms[0]}_{k}.csv"
                                       for k in ("queues", "flows", "fct")}]), left
    assert not any(n.startswith(algorithms[1]) for n in left)
    assert list(json.loads((folder / "summary.json").read_text())["runs"]) == algorithms[:1]


def test_ctrl_c_keeps_what_finished(tiny, tmp_path, capsys, monkeypatch):
    from sim.scenario import runner

    path, algorithms = tiny
    if len(algorithms) < 2:
        pytest.skip("needs two algorithms")
    real = runner.run

    def run(scn, algo, progress=None):
        if algo == algorithms[1]:
            raise KeyboardInterrupt
        return real(scn, algo, progress)
    monkeypatch.setattr(runner, "run", run)
    out_dir = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out_dir), "--quiet"]) == 130
    captured = capsys.readouterr()
    line = _one_error_line(captured.err)
    assert line.startswith(f"interrupted (Ctrl-C): {algorithms[1]} stopped")
    assert f"results of {algorithms[0]} written" in line
    folder = out_dir / "tiny"
    summary = json.loads((folder / "summary.json").read_text())
    assert list(summary["runs"]) == [algorithms[0]] and summary["complete"] is False
    assert algorithms[1] in summary["interrupted"]
    assert (folder / f"{algorithms[0]}_fct.csv").exists()
    assert not (folder / f"{algorithms[1]}_fct.csv").exists()

    monkeypatch.setattr(runner, "run", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt))
    assert main(["run", str(path), "--out", str(out_dir), "--quiet", "--seeds", "1..2",
                 "--jobs", "1"]) == 130
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.rstrip().splitlines()[-1].endswith("nothing written")
    assert not (folder / "summary.json").exists()          # the earlier run's files are gone


def test_ctrl_c_of_a_real_process(tmp_path):
    """SIGINT to ``python -m sim run`` once the first algorithm finished: exit 130, one line,
    no traceback, the first algorithm's outputs written."""
    import os
    import signal
    import subprocess
    import sys
    import time

    try:
        from sim.net.algorithms import ALGORITHMS
    except ImportError as e:
        pytest.skip(f"simulator core not available: {e}")
    if not {"dctcp", "ldcp"} <= set(ALGORITHMS):
        pytest.skip("needs dctcp and ldcp")
    path = tmp_path / "slow.toml"
    path.write_text(tiny_toml(["dctcp", "ldcp"])
                    .replace("duration_us = 150", "duration_us = 150")
                    .replace('name = "tiny"', 'name = "slow"'))
    raw = path.read_text().replace("duration_us = 150", "duration_us = 100000")
    path.write_text(raw.replace("senders = 4", "senders = 4"))
    out_dir = tmp_path / "out"
    env = {**os.environ, "PYTHONWARNINGS": ""}
    # the child starts with SIGINT at its default disposition: a suite launched in the
    # background of a non-interactive shell inherits SIGINT ignored, and Python then installs
    # no KeyboardInterrupt handler
    proc = subprocess.Popen([sys.executable, "-m", "sim", "run", str(path), "--out",
                             str(out_dir), "--no-plots"], stderr=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    done = out_dir / "slow" / "dctcp_fct.csv"
    while not done.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    if proc.poll() is not None:
        pytest.skip("the run finished before it could be interrupted")
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    last = [line for line in err.splitlines() if line.strip()][-1]
    assert last.startswith("interrupted (Ctrl-C): ldcp stopped") and "results of dctcp" in last
    assert json.loads((out_dir / "slow" / "summary.json").read_text())["runs"].keys() == {"dctcp"}


def test_large_runs_print_an_estimate(tiny, tmp_path, capsys, monkeypatch):
    from sim.scenario import runner

    path, algorithms = tiny
    scn = config.load(str(path))
    estimate = runner.estimate_events(scn)
    measured = runner.run(scn, algorithms[0]).result.events
    assert measured / 4 < estimate < measured * 4
    assert main(["run", str(path), "--out", str(tmp_path / "a"), "--quiet", "--no-plots"]) == 0
    assert "events per run" not in capsys.readouterr().err
    monkeypatch.setattr(runner, "EVENTS_WARN", estimate)
    assert main(["run", str(path), "--out", str(tmp_path / "b"), "--quiet", "--no-plots"]) == 0
    err = capsys.readouterr().err
    assert f"tiny: about {estimate:.1e} events per run, {len(algorithms)} run(s)" in err


def test_run_param_sets_a_knob_and_moves_the_outcome(tiny, tmp_path, capsys):
    """``run --param`` as sweep's: DCTCP's marking threshold K bounds the standing queue, so
    a smaller K gives a smaller queue p99 (and the summary echoes the value)."""
    path, algorithms = tiny
    if "dctcp" not in algorithms:
        pytest.skip("needs dctcp")
    p99 = {}
    for k in (5, 60):
        out_dir = tmp_path / f"k{k}"
        assert main(["run", str(path), "--algo", "dctcp", "--out", str(out_dir), "--quiet",
                     "--no-plots", "--duration-us", "400", "--param", f"algo.dctcp.k_kb={k}",
                     "--param", "workload[1].size_kb=20"]) == 0
        summary = json.loads((out_dir / "tiny" / "summary.json").read_text())
        assert summary["scenario"]["file"]["algo"]["dctcp"]["k_kb"] == k
        assert summary["scenario"]["file"]["workload"][1]["size_kb"] == 20
        p99[k] = summary["runs"]["dctcp"]["metrics"]["headline"]["queue_p99_kb"]
    capsys.readouterr()
    assert p99[5] < p99[60] / 2, p99
    for bad, expect in ((["--param", "algo.dctcp.k_kb"], "--param needs key.path=value"),
                        (["--param", "algo.dctcp.k_kb=0"], "algo.dctcp.k_kb = 0"),
                        (["--param", "algo.dctcp.nope=1"], "unknown key")):
        assert main(["run", str(path), "--out", str(tmp_path / "bad"), *bad]) == 2
        assert expect in _one_error_line(capsys.readouterr().err)


DCQCN_TWO_FLOWS = """
    name = "knobs"
    duration_us = 1000
    sample_us = 5
    algorithms = ["dcqcn"]

    [topology]
    kind = "dumbbell"
    senders = 2
    rate_gbps = 10
    delay_us = 1

    [algo.dcqcn]
    profile = "hpcc-mlx"

    [[workload]]
    name = "long"
    kind = "long"
"""


def test_dcqcn_knob_from_a_scenario_moves_the_outcome(tmp_path, capsys):
    """A reaction-point knob set with ``--param algo.dcqcn.<knob>``: a shorter rate-increase
    timer T (``rpg_time_reset``) recovers the rate faster after the cuts, so two DCQCN flows
    keep the link busier.  A bad knob value fails before any run, naming the key."""
    try:
        from sim.net.algorithms import DcqcnParams
    except ImportError as e:
        pytest.skip(f"simulator core not available: {e}")
    if "rpg_time_reset" not in DcqcnParams.__dataclass_fields__:
        pytest.skip("the core's DcqcnParams has no reaction-point knobs yet")
    path = tmp_path / "knobs.toml"
    path.write_text(textwrap.dedent(DCQCN_TWO_FLOWS))
    util = {}
    for t_us in (50, 900):
        out_dir = tmp_path / f"t{t_us}"
        assert main(["run", str(path), "--out", str(out_dir), "--quiet", "--no-plots",
                     "--param", f"algo.dcqcn.rpg_time_reset={t_us}"]) == 0
        summary = json.loads((out_dir / "knobs" / "summary.json").read_text())
        util[t_us] = summary["runs"]["dcqcn"]["metrics"]["headline"]["utilization"]
    capsys.readouterr()
    assert util[50] > util[900] + 0.1, util
    for bad, expect in (("rpg_gd=99", "algo.dcqcn.rpg_gd = 99"),
                        ("rt_guard=1", "algo.dcqcn.rt_guard = 1: expected true or false"),
                        ("rpg_time_reset=0", "algo.dcqcn.rpg_time_reset = 0")):
        assert main(["run", str(path), "--out", str(tmp_path / "bad"), "--quiet",
                     "--param", f"algo.dcqcn.{bad}"]) == 2
        assert expect in _one_error_line(capsys.readouterr().err)
