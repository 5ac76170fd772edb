"""Sweeps on Dask distributed: a :class:`distributed.LocalCluster` on this machine, or the
workers of an existing scheduler (``tcp://host:8786``).

Each point x algorithm is one task (the same function as the local process pool's); the results
are collected in job order, so ``sweep.csv`` is the same file, row for row, as a local sweep's
(except the measured ``wall_s``/``cpu_s``).  A remote worker runs the scenario from its path
(a bundled scenario: from its name): the workers need this project installed (the same
version) and a scenario file at the same path (a shared file system).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator

from .config import ScenarioError

__all__ = ["LOCAL", "close", "open_client", "run_in_order"]

#: ``--dask`` without an address: a LocalCluster of ``--jobs`` worker processes
LOCAL = "local"

#: how long to try to reach a scheduler
CONNECT_TIMEOUT = "10s"


def _distributed(spec: str):
    try:
        import distributed
    except ImportError:
        raise ScenarioError("sweep", "--dask", spec, "needs the distributed package, not "
                            "installed (pip install distributed)") from None
    return distributed


def open_client(spec: str, jobs: int, *, processes: bool = True):
    """A Dask client and what to close after it (the cluster, for ``LOCAL``).  ``LOCAL``:
    ``jobs`` single-threaded worker processes (the simulator is pure Python: threads would share
    one interpreter lock); else ``spec`` is a scheduler's address."""
    distributed = _distributed(spec)
    if spec == LOCAL:
        cluster = distributed.LocalCluster(n_workers=jobs, threads_per_worker=1,
                                           # ":0": a free port (None still binds the
                                           # default 8787, so two clusters on one machine
                                           # collide)
                                           processes=processes, dashboard_address=":0",
                                           silence_logs=logging.ERROR)
        return distributed.Client(cluster), cluster
    try:
        return distributed.Client(spec, timeout=CONNECT_TIMEOUT), None
    except (OSError, TimeoutError, ValueError) as e:
        raise ScenarioError("sweep", "--dask", spec, "no Dask scheduler reachable at that "
                            f"address (tcp://host:8786): {e}") from None


def run_in_order(client, fn: Callable, jobs: Iterable[tuple]) -> Iterator[tuple[tuple, object]]:
    """Submit ``fn(*job)`` for every job at once; yield ``(job, result)`` in job order (a lost
    worker's tasks are rerun elsewhere by the scheduler).  On an error or Ctrl-C the pending
    tasks are cancelled."""
    jobs = list(jobs)
    futures = [client.submit(fn, *job, pure=False) for job in jobs]
    try:
        for job, future in zip(jobs, futures, strict=True):
            yield job, future.result()
    finally:
        client.cancel([f for f in futures if not f.done()])


def close(client, cluster) -> None:
    client.close()
    if cluster is not None:
        cluster.close()
