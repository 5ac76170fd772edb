"""``python -m sim sweep --dask``: the same sweep.csv as the local sweep, point for point, on a
Dask LocalCluster and on an existing scheduler (its address); a bad address is one error line."""

from __future__ import annotations

import csv
import textwrap

import pytest

distributed = pytest.importorskip("distributed")

from sim.__main__ import main  # noqa: E402
from sim.scenario import cluster  # noqa: E402

TINY = """
    name = "tiny"
    description = "two long flows and a small incast"
    duration_us = 50
    sample_us = 5
    algorithms = ["dcqcn", "ldcp"]

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

#: measured, not simulated: differ from run to run
MEASURED = ("wall_s", "cpu_s")


def _sweep(path, out, *extra) -> list[dict]:
    assert main(["sweep", str(path), "--out", str(out), "--param",
                 "topology.rate_gbps=10,25", *extra]) == 0
    with open(out / "tiny" / "sweep.csv") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for k in MEASURED:
            r.pop(k)
    return rows


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dask")
    path = tmp / "tiny.toml"
    path.write_text(textwrap.dedent(TINY))
    rows = _sweep(path, tmp / "serial", "--jobs", "1")
    assert len(rows) == 4 and all(int(r["events"]) > 100 for r in rows)
    return path, rows


def test_existing_scheduler_same_rows(serial, tmp_path):
    """Two in-process workers behind a TCP scheduler, reached by its address."""
    path, rows = serial
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  protocol="tcp", dashboard_address=None) as lc:
        assert lc.scheduler_address.startswith("tcp://")
        assert _sweep(path, tmp_path, "--dask", lc.scheduler_address) == rows


def test_local_cluster_same_rows(serial, tmp_path, monkeypatch):
    """``--dask`` alone: a LocalCluster of --jobs workers (threads here, to start fast)."""
    path, rows = serial
    opened = []
    real = cluster.open_client

    def threads(spec, jobs, processes=True):
        opened.append((spec, jobs))
        return real(spec, jobs, processes=False)

    monkeypatch.setattr(cluster, "open_client", threads)
    assert _sweep(path, tmp_path, "--dask", "--jobs", "2") == rows
    assert opened == [(cluster.LOCAL, 2)]


def test_unreachable_scheduler_one_line(serial, tmp_path, capsys, monkeypatch):
    path, _ = serial
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", "1s")
    assert main(["sweep", str(path), "--out", str(tmp_path), "--dask",
                 "tcp://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: sweep: --dask = 'tcp://127.0.0.1:9': no Dask scheduler")
