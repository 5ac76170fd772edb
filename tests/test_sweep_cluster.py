"""``python -m sim sweep --dask tcp://...`` on a real cluster: a ``dask scheduler`` and two
``dask worker`` processes started here on localhost (single-threaded workers, no dashboard).

The sweep gives the serial sweep.csv point for point (but the measured ``wall_s``/``cpu_s``);
with one worker killed (SIGKILL) after the first run is written, the scheduler reruns the lost
run on the other worker: the sweep still completes with the same rows and writes no run twice.

The kill test runs under ``CC_LONG=1`` only: for the kill to land mid-sweep the runs must take
about a second each, and its serial and cluster sweeps of six such runs cost about 20 s of CPU
(35 s of wall on a loaded 2-core machine).  By default: the cluster's start (about 2 s of CPU)
and a sweep of four 50 us runs against it.
"""

from __future__ import annotations

import csv
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")

from sim.__main__ import main  # noqa: E402
from tests.dumbbell_scenario import dumbbell_toml  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DASK = Path(sys.executable).parent / "dask"
MEASURED = ("wall_s", "cpu_s")
LONG = bool(os.environ.get("CC_LONG"))

#: an LDCP dumbbell whose runs take about half a second of CPU each, so that the kill lands
#: while both workers are busy
SCENARIO = dumbbell_toml(name="slowish", description="two long flows and a small incast, 3 ms",
                         duration_us=3000, sample_us=50, algorithms=["ldcp"])
GRID = ["--param", "topology.rate_gbps=10,25,40", "--param", "topology.delay_us=1,2"]
RUNS = 6
#: the same network for 50 us, DCQCN and LDCP: four cheap runs
TINY = dumbbell_toml()
TINY_GRID = ["--param", "topology.rate_gbps=10,25"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rows(path: Path) -> list[dict]:
    with open(path) as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for k in MEASURED:
            r.pop(k)
    return rows


class Cluster:
    """A scheduler and its workers as processes of their own (killed when the module ends)."""

    def __init__(self, workers: int):
        if not DASK.exists():
            pytest.skip(f"no dask command next to {sys.executable}")
        self.address = f"tcp://127.0.0.1:{_free_port()}"
        env = {**os.environ, "PYTHONPATH": str(ROOT)}     # the workers import sim
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "cwd": ROOT,
                 "env": env}
        self.scheduler = subprocess.Popen(
            [str(DASK), "scheduler", "--host", "127.0.0.1", "--port",
             self.address.rsplit(":", 1)[1], "--no-dashboard",
             "--dashboard-address", ":0"], **quiet)
        self.workers = []
        # --no-nanny: a killed worker stays dead (a nanny would restart it)
        for _ in range(workers):
            self.workers.append(subprocess.Popen(
                [str(DASK), "worker", self.address, "--nthreads", "1", "--no-nanny",
                 "--no-dashboard", "--host", "127.0.0.1", "--death-timeout", "60"], **quiet))
        try:
            # generous: on a 2-core machine busy with Verilator builds (the suite under xdist)
            # the three processes take tens of seconds to import dask and start
            with distributed.Client(self.address, timeout="180s") as client:
                client.wait_for_workers(workers, timeout=180)
        except BaseException:
            self.close()                # never leave the processes behind
            raise

    def close(self) -> None:
        for p in [*self.workers, self.scheduler]:
            if p.poll() is None:
                p.kill()
        for p in [*self.workers, self.scheduler]:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass


@pytest.fixture(scope="module")
def real_cluster(request):
    started = []
    request.addfinalizer(lambda: [c.close() for c in started])
    t0 = time.perf_counter()
    started.append(Cluster(2))
    print(f"scheduler and 2 workers up in {time.perf_counter() - t0:.1f} s")
    return started[0]


def _serial(tmp_path_factory, text: str, grid: list[str], runs: int):
    tmp = tmp_path_factory.mktemp("cluster")
    name = "tiny" if '"tiny"' in text else "slowish"
    path = tmp / f"{name}.toml"
    path.write_text(text)
    assert main(["sweep", str(path), "--out", str(tmp / "serial"), "--jobs", "1", "--quiet",
                 "--no-plots", *grid]) == 0
    rows = _rows(tmp / "serial" / name / "sweep.csv")
    assert len(rows) == runs and all(int(r["events"]) > 100 for r in rows)
    return path, rows


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    return _serial(tmp_path_factory, TINY, TINY_GRID, 4)


@pytest.fixture(scope="module")
def serial_slow(tmp_path_factory):
    return _serial(tmp_path_factory, SCENARIO, GRID, RUNS)


def test_real_cluster_same_rows(serial, real_cluster, tmp_path):
    path, rows = serial
    assert main(["sweep", str(path), "--out", str(tmp_path), "--dask", real_cluster.address,
                 "--quiet", "--no-plots", *TINY_GRID]) == 0
    assert _rows(tmp_path / "tiny" / "sweep.csv") == rows


@pytest.mark.skipif(not LONG, reason="CC_LONG=1: six runs of about a second, twice")
def test_worker_killed_mid_sweep(serial_slow, real_cluster, tmp_path):
    """The sweep as a process of its own; a worker SIGKILLed once the first run is in
    sweep.csv (both workers busy then); every run printed and written once."""
    path, rows = serial_slow
    alive = [w for w in real_cluster.workers if w.poll() is None]
    assert alive, "no worker left"
    csv_path = tmp_path / "slowish" / "sweep.csv"
    sweep = subprocess.Popen(
        [sys.executable, "-m", "sim", "sweep", str(path), "--out", str(tmp_path), "--dask",
         real_cluster.address, "--quiet", "--no-plots", *GRID],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not csv_path.exists():
            assert sweep.poll() is None, sweep.communicate()
            assert time.monotonic() < deadline, "no run written in 60 s"
            time.sleep(0.02)
        written_at_kill = len(_rows(csv_path))
        alive[0].send_signal(signal.SIGKILL)
        alive[0].wait(timeout=10)
        out, err = sweep.communicate(timeout=120)
    finally:
        if sweep.poll() is None:
            sweep.kill()
            sweep.wait()
    assert sweep.returncode == 0, err
    assert written_at_kill < RUNS, "the sweep ended before the kill: make the runs longer"
    assert _rows(csv_path) == rows
    printed = [line.split(":")[0] for line in out.splitlines() if line.startswith("[")]
    assert len(printed) == RUNS and len(set(printed)) == RUNS, out
