"""``python -m sim sweep --dask``: the same sweep.csv as the local sweep, point for point, on a
Dask LocalCluster and on an existing scheduler (its address); a bad address is one error line.
``--resume`` runs only the runs missing from sweep.csv; the progress line; the plots.
(Real ``dask scheduler`` / ``dask worker`` processes: tests/test_sweep_cluster.py.)"""

from __future__ import annotations

import csv
import io
import json

import pytest

distributed = pytest.importorskip("distributed")

import sim.__main__ as cli  # noqa: E402
from sim.__main__ import main  # noqa: E402
from sim.scenario import cluster, output  # noqa: E402
from tests.dumbbell_scenario import dumbbell_toml  # noqa: E402

TINY = dumbbell_toml()

#: measured, not simulated: differ from run to run
MEASURED = ("wall_s", "cpu_s")


def _sweep(path, out, *extra) -> list[dict]:
    assert main(["sweep", str(path), "--out", str(out), "--param",
                 "topology.rate_gbps=10,25", *extra]) == 0
    return _rows(out / "tiny" / "sweep.csv")


def _rows(csv_path) -> list[dict]:
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for k in MEASURED:
            r.pop(k)
    return rows


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dask")
    path = tmp / "tiny.toml"
    path.write_text(TINY)
    rows = _sweep(path, tmp / "serial", "--jobs", "1", "--no-plots")
    assert len(rows) == 4 and all(int(r["events"]) > 100 for r in rows)
    return path, rows


def test_existing_scheduler_same_rows(serial, tmp_path):
    """Two in-process workers behind a TCP scheduler, reached by its address."""
    path, rows = serial
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  protocol="tcp", dashboard_address=":0") as lc:
        assert lc.scheduler_address.startswith("tcp://")
        assert _sweep(path, tmp_path, "--dask", lc.scheduler_address, "--no-plots") == rows


def test_local_cluster_same_rows(serial, tmp_path, monkeypatch):
    """``--dask`` alone: a LocalCluster of --jobs workers (threads here, to start fast)."""
    path, rows = serial
    opened = []
    real = cluster.open_client

    def threads(spec, jobs, processes=True):
        opened.append((spec, jobs))
        return real(spec, jobs, processes=False)

    monkeypatch.setattr(cluster, "open_client", threads)
    assert _sweep(path, tmp_path, "--dask", "--jobs", "2", "--no-plots") == rows
    assert opened == [(cluster.LOCAL, 2)]


def test_unreachable_scheduler_one_line(serial, tmp_path, capsys, monkeypatch):
    path, _ = serial
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", "1s")
    assert main(["sweep", str(path), "--out", str(tmp_path), "--dask",
                 "tcp://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: sweep: --dask = 'tcp://127.0.0.1:9': no Dask scheduler")


def _counting(monkeypatch) -> list:
    """Record the (point overrides, algorithm) of every run the sweep starts."""
    ran, real = [], cli._sweep_job

    def job(scenario, overrides, algo):
        ran.append((overrides["topology.rate_gbps"], algo))
        return real(scenario, overrides, algo)

    monkeypatch.setattr(cli, "_sweep_job", job)
    return ran


def test_resume_runs_only_the_missing(serial, tmp_path, monkeypatch, capsys):
    """A sweep.csv holding runs 3 and 0 (out of order) and the first half of run 1's line (a
    write cut short): --resume runs 1 and 2 only, keeps 0 and 3 as they were (their measured
    wall_s too) and writes every run once, in job order: the serial file."""
    path, rows = serial
    out = tmp_path / "out"
    folder = out / "tiny"
    folder.mkdir(parents=True)
    # an earlier full run of this grid, then its file cut: rows 3, 0 and half of row 1
    ran = _counting(monkeypatch)
    first = _sweep(path, out, "--jobs", "1")           # afresh: every run, the plots
    assert first == rows and len(ran) == 4
    assert len(list(folder.glob("sweep_*.png"))) == 11
    err = capsys.readouterr().err
    assert "sweep: 4/4 runs (100 %)" in err
    text = (folder / "sweep.csv").read_text().splitlines(keepends=True)
    header, body = text[0], text[1:]
    (folder / "sweep.csv").write_text(header + body[3] + body[0] + body[1][:len(body[1]) // 2])
    ran.clear()
    assert _sweep(path, out, "--jobs", "1", "--resume", "--quiet", "--no-plots") == rows
    assert ran == [(10, "ldcp"), (25, "dcqcn")]
    err = capsys.readouterr().err
    assert "resumed: 2 already in sweep.csv, 2 to run" in err and "runs (" not in err
    final = (folder / "sweep.csv").read_text().splitlines(keepends=True)
    assert final[1] == body[0] and final[4] == body[3] and len(final) == 5   # as written
    assert [(r["point"], r["algorithm"]) for r in json.loads(
        (folder / "sweep.json").read_text())] == [(0, "dcqcn"), (0, "ldcp"), (1, "dcqcn"),
                                                   (1, "ldcp")]
    # complete: nothing runs; without --resume: everything again
    ran.clear()
    assert _sweep(path, out, "--jobs", "1", "--resume", "--quiet", "--no-plots") == rows
    assert ran == []
    assert _sweep(path, out, "--jobs", "1", "--quiet", "--no-plots") == rows
    assert len(ran) == 4 and not list(folder.glob("sweep_*.png"))   # stale plots removed


def test_resume_other_grid_one_line(serial, tmp_path, capsys):
    """A sweep.csv of another grid is not silently mixed in (nor dropped)."""
    path, _ = serial
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "sweep.csv").write_text("point,topology.delay_us,algorithm,events\n0,1,ldcp,5\n")
    assert main(["sweep", str(path), "--out", str(tmp_path), "--param",
                 "topology.rate_gbps=10,25", "--resume"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: ") and "not this sweep's" in err[-1]
    (folder / "sweep.csv").write_text("point,topology.rate_gbps,algorithm,events\n"
                                      "0,40,ldcp,5\n")
    assert main(["sweep", str(path), "--out", str(tmp_path), "--param",
                 "topology.rate_gbps=10,25", "--resume"]) == 2
    assert "not in this grid" in capsys.readouterr().err


def test_progress_line_in_a_log():
    """20 runs, 5 resumed: one line per tenth of the runs, the count from 5, ending at 20/20."""
    stream = io.StringIO()
    progress = cli.SweepProgress(20, already=5, stream=stream)
    for _ in range(15):
        progress()
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("sweep: 6/20 runs (30 %), ")
    assert lines[-1].startswith("sweep: 20/20 runs (100 %), ") and lines[-1].endswith(
        "about 0 s left")
    assert len(lines) == 8                   # tenths 3..10
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    tty = Terminal()
    progress = cli.SweepProgress(2, stream=tty)
    progress()
    progress.clear()                          # before a run's line on stdout
    progress()
    assert tty.getvalue().startswith("\rsweep: 1/2 runs (50 %), ")
    assert "\r\x1b[K\rsweep: 2/2 runs (100 %), " in tty.getvalue()
    assert tty.getvalue().endswith("left\n")
    quiet = io.StringIO()
    off = cli.SweepProgress(3, stream=quiet, enabled=False)
    off()
    assert quiet.getvalue() == ""


def test_sweep_plots_two_parameters(tmp_path):
    """Two swept parameters: x the first, a line per algorithm x value of the second; a metric
    with no value anywhere still gives its file (saying so)."""
    rows = [{"point": p, "a.x": x, "b.y": y, "algorithm": algo, "m": x * y, "none": None}
            for p, (x, y) in enumerate([(1, 5), (1, 6), (2, 5), (2, 6)]) for algo in ("u", "v")]
    names = output.write_sweep_plots(rows, ["a.x", "b.y"], ["m", "none"], tmp_path)
    assert names == ["sweep_m.png", "sweep_none.png"]
    for n in names:
        assert (tmp_path / n).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
