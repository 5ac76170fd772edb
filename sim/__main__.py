"""``python -m sim``: run network-simulator scenarios.

::

    python -m sim list                                   # bundled scenarios
    python -m sim run default [--algo ldcp,dctcp] [--out out] [--duration-us 500] [--seed 2]
        [--tag seed2] [--quiet] [--no-plots] [--seeds 1..5 [--jobs 2]]
        [--param algo.dctcp.k_kb=30 ...] [--engine rtl]
    python -m sim sweep default --param algo.ldcp.alpha=0.5,1.0 --param topology.senders=8,16 \\
        [--jobs 2] [--dask [tcp://host:8786]] [--resume] [--quiet] [--no-plots]
    python -m sim bench [--senders 100,1000,10000]       # events/s and wall time (not a test)

A scenario is a TOML file or the name of a bundled one (``sim/scenarios/``).  The whole file is
validated before anything runs; an error names the file, the key, the value and the problem.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import os
import signal
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from sim.scenario import cluster, config, output, runner
from sim.scenario.fields import ScenarioError

PS_PER_US = 10**6


class ProgressBar:
    """A one-line progress bar on stderr: simulated time done, wall time so far.  Redraws at
    most every 0.2 s (on a terminal) or every 10 % (in a log, one line each)."""

    def __init__(self, label: str, total_ps: int, stream=None, enabled: bool = True):
        self.label, self.total, self.enabled = label, total_ps, enabled
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.start = time.perf_counter()
        self.last_draw = -1.0
        self.last_decile = -1

    def __call__(self, now_ps: int) -> None:
        if not self.enabled:
            return
        frac = min(1.0, now_ps / self.total) if self.total else 1.0
        elapsed = time.perf_counter() - self.start
        if self.tty:
            if elapsed - self.last_draw < 0.2 and frac < 1.0:
                return
            self.last_draw = elapsed
            filled = int(frac * 30)
            self.stream.write(f"\r{self.label:<12} [{'#' * filled}{'.' * (30 - filled)}] "
                              f"{frac * 100:5.1f}%  {now_ps / PS_PER_US:,.0f}/"
                              f"{self.total / PS_PER_US:,.0f} us  {elapsed:6.1f} s")
        else:
            decile = int(frac * 10)
            if decile == self.last_decile:
                return
            self.last_decile = decile
            self.stream.write(f"{self.label}: {decile * 10}% of {self.total / PS_PER_US:,.0f} us"
                              f" simulated, {elapsed:.1f} s\n")
        self.stream.flush()

    def done(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _tag(text: str) -> str:
    if text and not all(c.isalnum() or c in "_.-" for c in text):
        raise argparse.ArgumentTypeError("use letters, digits, '_', '-', '.'")
    return text


def _algos(text: str | None) -> list[str] | None:
    return [a.strip() for a in text.split(",") if a.strip()] if text else None


def _overrides(args) -> dict:
    out = {}
    for item in getattr(args, "run_params", None) or []:     # run --param key.path=value
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ScenarioError(args.scenario, item, config.missing(),
                                "--param needs key.path=value (one value; sweep takes lists)")
        out[key.strip()] = config.parse_value(value.strip())
    if getattr(args, "duration_us", None) is not None:
        out["duration_us"] = config.parse_value(args.duration_us)
    if getattr(args, "seed", None) is not None:
        out["seed"] = args.seed
    if getattr(args, "engine", None) is not None:
        out["engine"] = args.engine
    return out


def cmd_list(args) -> int:
    for name, path in config.bundled().items():
        try:
            description = str(config.read(path).get("description", "")).strip()
        except ScenarioError as e:
            description = f"(unreadable: {e})"
        print(f"{name:<22} {description.splitlines()[0] if description else ''}")
    from sim.scenario import core

    print()
    for name, spec in core.api().ALGORITHMS.items():
        print(f"algorithm {name:<12} {spec.description}")
    return 0


def run_scenario(scn, quiet: bool = False, on_done=None) -> list:
    """Every algorithm of ``scn`` in turn; ``on_done(run)`` as soon as each finishes."""
    runs = []
    for algo in scn.algorithms:
        bar = ProgressBar(f"{scn.name}/{algo}", scn.duration_ps, enabled=not quiet)
        try:
            runs.append(runner.run(scn, algo, progress=bar))
        finally:
            bar.done()
        if on_done is not None:
            on_done(runs[-1])
    return runs


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, not {value}")
    return value


def _int_list(text: str) -> list[int]:
    """``100,1000`` -> ``[100, 1000]`` (positive integers)."""
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated positive integers (like 100,1000), not {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, not {text!r}")
    return values


def _warn_events(scn, runs: int | None = None, stream=None) -> int:
    """Print the estimated event count of ``scn`` first when it is very large."""
    events = runner.estimate_events(scn)
    if events >= runner.EVENTS_WARN:
        runs = len(scn.algorithms) if runs is None else runs
        minutes = events / runner.EVENTS_PER_S / 60
        print(f"{scn.name}: about {events:.1e} events per run, {runs} run(s): roughly "
              f"{minutes:,.0f} min of CPU each (at ~{runner.EVENTS_PER_S:,} events/s); "
              f"--duration-us shortens it, Ctrl-C stops it keeping what finished",
              file=stream or sys.stderr, flush=True)
    return events


def _ignore_sigint() -> None:
    """Worker processes: Ctrl-C is the parent's to handle (no traceback from each worker)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _pool(jobs: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(max_workers=jobs, initializer=_ignore_sigint)


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """After Ctrl-C (or a failed run): end the running workers, cancel the queued jobs."""
    workers = list((getattr(pool, "_processes", None) or {}).values())   # shutdown clears it
    terminate = getattr(pool, "terminate_workers", None)      # Python 3.14
    if terminate is not None:
        terminate()
    else:
        for proc in workers:
            if proc.is_alive():
                proc.terminate()
        for proc in workers:
            proc.join(timeout=5)
    pool.shutdown(wait=True, cancel_futures=True)


def _interrupted(writer, current: str | None, what: str = "algorithm") -> int:
    done = [r.algorithm for r in writer.runs]
    stopped = ("stopped while plotting" if current == "plotting" else
               f"{current} stopped" if current else "stopped")
    note = f"interrupted (Ctrl-C): {stopped}"
    if done:
        writer.interrupt(f"{stopped}; finished: {', '.join(done)}")
        kept = f"results of {', '.join(done)} written to {writer.folder}/"
    else:
        kept = f"no {what} had finished, nothing written"
    print(f"\n{note}; {kept}", file=sys.stderr, flush=True)
    return 130


def _seeds(text: str) -> list[int]:
    """``1..5`` (inclusive) or ``1,4,9``."""
    try:
        if ".." in text:
            a, b = text.split("..")
            seeds = list(range(int(a), int(b) + 1))
        else:
            seeds = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("expected FIRST..LAST or a,b,c (integers)") from None
    if not seeds or min(seeds) < 0:
        raise argparse.ArgumentTypeError("at least one seed, none negative")
    return seeds


def _run_job(scenario: str, overrides: dict, algo: str):
    return runner.run(config.load(scenario, overrides, [algo]), algo)


def cmd_run(args) -> int:
    scn = config.load(args.scenario, _overrides(args), _algos(args.algo))
    runner.check(scn)
    for line in runner.path_lines(runner.paths(scn)):    # before any run
        print(line)
    sys.stdout.flush()
    if not args.seeds and scn.replications > 1:
        args.seeds = list(range(scn.seed, scn.seed + scn.replications))
    if args.seeds:
        first = config.load(args.scenario, {**_overrides(args), "seed": args.seeds[0]},
                            _algos(args.algo))
    else:
        first = scn
    writer = output.RunWriter(first, output.folder_for(args.out, scn.name, args.tag),
                              plots=not args.no_plots)
    writer.start()                                # an unwritable --out fails here, before a run
    _warn_events(scn, len(scn.algorithms) * len(args.seeds or [0]))
    if not args.seeds:
        current = None
        try:
            for algo in scn.algorithms:
                current = algo
                bar = ProgressBar(f"{scn.name}/{algo}", scn.duration_ps, enabled=not args.quiet)
                try:
                    run = runner.run(scn, algo, progress=bar)
                finally:
                    bar.done()
                writer.add(run)                   # written as soon as it finishes
            current = "plotting"
            data = writer.finish()
        except KeyboardInterrupt:
            return _interrupted(writer, current)
        print(f"{scn.name}: {scn.description}".rstrip(": "))
        print(output.table(data))
        print(f"outputs: {writer.folder}/")
        return 0
    # replications: every algorithm at every seed (the outputs of the first seed's runs, the
    # spread of every metric over all of them)
    path = str(config.find(args.scenario))
    jobs = [(seed, algo) for seed in args.seeds for algo in scn.algorithms]
    base = {**_overrides(args), **({"algorithms": list(scn.algorithms)})}
    print(f"{scn.name}: {len(args.seeds)} seeds x {len(scn.algorithms)} algorithms = "
          f"{len(jobs)} runs, {args.jobs} process(es)", file=sys.stderr)
    runs: dict = {}

    def done(job, run):
        runs[job] = run
        if job[0] == args.seeds[0]:
            writer.add(run)                       # the first seed's outputs, as they finish
        if not args.quiet:
            print(f"  seed {job[0]} {job[1]}: {run.cpu_s:.1f} s CPU", file=sys.stderr)

    current = None
    try:
        if args.jobs <= 1:
            for job in jobs:
                current = f"seed {job[0]} {job[1]}"
                done(job, _run_job(path, {**base, "seed": job[0]}, job[1]))
        else:
            pool = _pool(args.jobs)
            try:
                futures = {job: pool.submit(_run_job, path, {**base, "seed": job[0]}, job[1])
                           for job in jobs}
                for job, future in futures.items():
                    current = f"seed {job[0]} {job[1]}"
                    done(job, future.result())
            except BaseException:         # Ctrl-C or a failed run: end the workers now
                _stop_pool(pool)
                raise
            pool.shutdown()
        current = "plotting"
        reps = _replications(args, scn, runs)
        data = writer.finish(reps)
    except KeyboardInterrupt:
        complete = [s for s in args.seeds if all((s, a) in runs for a in scn.algorithms)]
        if complete:
            output.write_replications(writer.folder, _replications(args, scn, runs, complete))
        return _interrupted(writer, current, "run of the first seed")
    print(f"{scn.name}: {scn.description}".rstrip(": "))
    print(f"seed {args.seeds[0]}:")
    print(output.table(data))
    print(output.spread_table(reps))
    print(f"outputs: {writer.folder}/ (replications.csv: every metric by seed)")
    return 0


def _replications(args, scn, runs: dict, seeds=None) -> dict:
    per_seed = {}
    for seed in seeds or args.seeds:
        seed_scn = config.load(args.scenario, {**_overrides(args), "seed": seed},
                               _algos(args.algo))
        per_seed[seed] = output.summary(seed_scn, [runs[seed, a] for a in scn.algorithms])
    return output.replications(per_seed)


def _parse_params(params: list[str], source: str) -> list[tuple[str, list]]:
    grid = []
    for item in params:
        key, sep, values = item.partition("=")
        if not sep or not values:
            raise ScenarioError(source, item, config.missing(),
                                "--param needs key=value[,value...]")
        grid.append((key.strip(), [config.parse_value(v.strip()) for v in values.split(",")]))
    return grid


SWEEP_FILES = ("sweep.csv", "sweep.json")
#: the per-metric plots of a sweep (removed with its files when a sweep starts afresh)
SWEEP_PLOTS = "sweep_*.png"
#: the columns of a sweep row that are not headline metrics
SWEEP_NOT_METRICS = ("events", "wall_s", "cpu_s")


def _sweep_job(scenario: str, overrides: dict, algo: str) -> dict:
    scn = config.load(scenario, overrides, [algo])
    run = runner.run(scn, algo)
    summary = output.run_summary(run)
    return {"events": summary["events"], "wall_s": summary["wall_s"], "cpu_s": summary["cpu_s"],
            **summary["metrics"]["headline"]}


class SweepProgress:
    """Runs done / total, elapsed wall time and the time left on stderr: redrawn in place on a
    terminal, in a log one line per tenth of the runs.  The time left extrapolates the runs of
    this invocation (runs resumed from sweep.csv took no time here)."""

    def __init__(self, total: int, already: int = 0, stream=None, enabled: bool = True):
        self.total, self.done, self.already, self.enabled = total, already, already, enabled
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.start = time.perf_counter()
        self.last_decile = already * 10 // total if total else 10

    def text(self) -> str:
        elapsed = time.perf_counter() - self.start
        ran, left = self.done - self.already, self.total - self.done
        eta = f"{elapsed / ran * left:.0f} s" if ran else "?"
        return (f"sweep: {self.done}/{self.total} runs ({self.done * 100 // self.total} %), "
                f"{elapsed:.1f} s elapsed, about {eta} left")

    def clear(self) -> None:
        """Before a line on stdout: wipe the progress line of a terminal (redrawn after)."""
        if self.enabled and self.tty and self.done < self.total:
            self.stream.write("\r\x1b[K")
            self.stream.flush()

    def __call__(self) -> None:
        """One more run done."""
        self.done += 1
        if not self.enabled:
            return
        if self.tty:
            self.stream.write("\r" + self.text() + ("\n" if self.done == self.total else ""))
        else:
            decile = self.done * 10 // self.total
            if decile == self.last_decile:
                return
            self.last_decile = decile
            self.stream.write(self.text() + "\n")
        self.stream.flush()


def _cell(value) -> str:
    """A value as csv.DictWriter writes it (how resumed rows are matched with the jobs)."""
    return "" if value is None else str(value)


def _parse_cell(text: str):
    """A sweep.csv cell back to the value that wrote it (None, bool, int, float, else text)."""
    if text == "":
        return None
    if text in ("True", "False"):
        return text == "True"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _sweep_row(i: int, overrides: dict, algo: str, result: dict) -> dict:
    return {"point": i, **{k: _jsonable(v) for k, v in overrides.items()}, "algorithm": algo,
            **result}


def _resumed_rows(folder: Path, jobs: list) -> dict[int, dict]:
    """The runs of an earlier ``sweep.csv`` in ``folder`` that are jobs of this sweep, matched
    by the point's parameters and the algorithm (not by the point number: a grid may grow), by
    job index.  A cut-off last line (a write interrupted) is dropped: that run is redone."""
    path = folder / "sweep.csv"
    if not path.is_file():
        return {}
    keys = list(jobs[0][1])
    index = {(tuple(_cell(_jsonable(o[k])) for k in keys), a): n
             for n, (_, o, a) in enumerate(jobs)}
    done: dict[int, dict] = {}
    lines = path.read_text().splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):    # a write cut short: its last line is not whole
        lines.pop()
    reader = csv.DictReader(lines)
    fields = reader.fieldnames or []
    if not fields:
        return {}
    if fields[:1] != ["point"] or "algorithm" not in fields or \
            fields[1:fields.index("algorithm")] != keys:
        raise output.OutputError(
            f"{path}: its columns are not this sweep's (point, {', '.join(keys)}, "
            f"algorithm, ...): remove it or run without --resume")
    metrics = fields[fields.index("algorithm") + 1:]
    for raw in reader:
        if None in raw or None in raw.values():   # a line cut short (or too long)
            continue
        n = index.get((tuple(raw[k] for k in keys), raw["algorithm"]))
        if n is None:
            raise output.OutputError(
                f"{path}: holds a run that is not in this grid (point {raw['point']}, "
                f"{raw['algorithm']}): remove it or run without --resume")
        i, overrides, algo = jobs[n]
        done[n] = _sweep_row(i, overrides, algo, {m: _parse_cell(raw[m]) for m in metrics})
    return done


def cmd_sweep(args) -> int:
    path = str(config.find(args.scenario))
    grid = _parse_params(args.param or [], path)
    points = []
    for values in itertools.product(*[v for _, v in grid]):
        overrides = {**_overrides(args), **{k: v for (k, _), v in zip(grid, values, strict=True)}}
        scn = config.load(args.scenario, overrides, _algos(args.algo))   # validate every point
        runner.check(scn)
        points.append((overrides, scn))
    name = points[0][1].name
    jobs = [(i, overrides, algo) for i, (overrides, scn) in enumerate(points)
            for algo in scn.algorithms]
    folder = output.check_writable(Path(args.out) / name)     # before any run
    if args.resume:
        done = _resumed_rows(folder, jobs)
    else:
        done = {}
        output.remove_files(folder, [*SWEEP_FILES, *(p.name for p in folder.glob(SWEEP_PLOTS))])
    todo = [(n, *job) for n, job in enumerate(jobs) if n not in done]
    where = (f"{args.jobs} process(es)" if not args.dask else
             f"Dask LocalCluster of {args.jobs} worker(s)" if args.dask == cluster.LOCAL else
             f"Dask scheduler {args.dask}")
    resumed = (f"; resumed: {len(done)} already in sweep.csv, {len(todo)} to run"
               if args.resume else "")
    print(f"sweep {name}: {len(points)} points x algorithms = {len(jobs)} runs, {where}"
          f"{resumed}", file=sys.stderr)
    progress = SweepProgress(len(jobs), len(done), enabled=not args.quiet)

    def label(overrides):
        return " ".join(f"{k}={config.show(v)}" for k, v in overrides.items()) or "(base)"

    def record(n, i, overrides, algo, result):
        done[n] = _sweep_row(i, overrides, algo, result)
        progress.clear()
        print(f"[{i}] {label(overrides)} {algo}: util {result['utilization']:.3f}  q p99 "
              f"{result['queue_p99_kb']:.1f} KB  sd p99 {_fmt(result['slowdown_p99'])}  Jain "
              f"{_fmt(result['jain'])}  drops {result['drops']}  unfinished "
              f"{result['unfinished']}  {result['cpu_s']:.1f} s CPU",
              flush=True)
        write()
        progress()

    if todo:
        _warn_events(max((points[i][1] for _, i, _, _ in todo), key=runner.estimate_events),
                     len(todo))

    def write():
        # every run done so far, in job order (resumed runs among them)
        rows = [done[n] for n in sorted(done)]
        # each file whole or not at all (a Ctrl-C while writing keeps the previous one)
        (folder / "sweep.json.tmp").write_text(json.dumps(rows, indent=1))
        os.replace(folder / "sweep.json.tmp", folder / "sweep.json")
        with open(folder / "sweep.csv.tmp", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        os.replace(folder / "sweep.csv.tmp", folder / "sweep.csv")

    try:
        if not todo:
            pass
        elif args.dask:
            client, local = cluster.open_client(args.dask, args.jobs)
            # a bundled scenario by its name: each worker finds its own copy
            target = path if Path(args.scenario).is_file() else args.scenario
            try:
                results = cluster.run_in_order(client, _sweep_job,
                                               [(target, o, a) for _, _, o, a in todo])
                for (n, i, o, a), (_, result) in zip(todo, results, strict=True):
                    record(n, i, o, a, result)
            finally:
                cluster.close(client, local)
        elif args.jobs <= 1:
            for n, i, overrides, algo in todo:
                record(n, i, overrides, algo, _sweep_job(path, overrides, algo))
        else:
            pool = _pool(args.jobs)
            try:
                futures = [(n, i, o, a, pool.submit(_sweep_job, path, o, a))
                           for n, i, o, a in todo]
                for n, i, o, a, future in futures:
                    record(n, i, o, a, future.result())
            except BaseException:         # Ctrl-C or a failed run: end the workers now
                _stop_pool(pool)
                raise
            pool.shutdown()
    except KeyboardInterrupt:
        kept = (f"{len(done)} of {len(jobs)} runs written to {folder}/sweep.csv (--resume "
                f"runs the rest)" if done else "no run had finished, nothing written")
        print(f"\ninterrupted (Ctrl-C); {kept}", file=sys.stderr, flush=True)
        return 130
    if not todo:
        write()                           # the same runs, in this grid's job order
    outputs = f"outputs: {folder}/sweep.csv, sweep.json"
    if grid and not args.no_plots:
        rows = [done[n] for n in sorted(done)]
        metrics = [k for k in rows[0] if k not in SWEEP_NOT_METRICS
                   and k not in ("point", "algorithm", *points[0][0])]
        plots = output.write_sweep_plots(rows, [k for k, _ in grid], metrics, folder)
        outputs += f", {len(plots)} plots ({SWEEP_PLOTS}: each metric against {grid[0][0]})"
    print(outputs)
    return 0


def _fmt(v) -> str:
    return "-" if v is None else f"{v:.3g}"


def _jsonable(v):
    from decimal import Decimal
    return float(v) if isinstance(v, Decimal) else v


def incast_scenario(senders: int, size_bytes: int, algorithm: str, rate_gbps: int = 100):
    """The benchmark's incast: ``senders`` x ``size_bytes`` at time 0 into host 0 of a
    leaf-spine (as many leaves of at most 500 hosts as needed, 4 spines: one switch of the core
    has at most 1024 ports), run for twice the time the receiver's link needs to carry it plus
    2 ms (two default retransmission timeouts, so that flows which lost packets can finish)."""
    hosts = senders + 1
    leaves = -(-hosts // 500)
    per_leaf = -(-hosts // leaves)
    drain_us = senders * size_bytes * 8 / (rate_gbps * 1000)
    duration_us = int(drain_us * 2) + 2000
    workloads = []
    for leaf in range(leaves):
        first = 1 if leaf == 0 else 0
        last = min(per_leaf, hosts - leaf * per_leaf)
        if last > first:
            workloads.append({"name": f"incast{leaf}", "kind": "incast",
                              "src": f"leaf{leaf}[{first}:{last}]", "dst": "leaf0[0]",
                              "size_bytes": size_bytes})
    raw = {"name": f"bench_incast_{senders}", "seed": 1, "duration_us": duration_us,
           "sample_us": max(1, duration_us // 200), "algorithms": [algorithm],
           "description": f"incast of {senders} x {size_bytes} B",
           "topology": {"kind": "leaf_spine", "leaves": leaves, "spines": 4,
                        "hosts_per_leaf": per_leaf, "host_rate_gbps": rate_gbps,
                        "fabric_rate_gbps": rate_gbps, "delay_us": 1},
           "workload": workloads}
    return config.from_dict(raw, f"<bench incast {senders}>")


def cmd_bench(args) -> int:
    cases = [("default", config.load("default", algorithms=_algos(args.algo)))]
    for n in args.senders:
        cases.append((f"incast {n}", incast_scenario(n, args.size_bytes, args.incast_algo)))
    out = output.check_writable(Path(args.out))                 # before any run
    meta = {"python": sys.version.split()[0], "cpu_count": os.cpu_count(),
            "incast_size_bytes": args.size_bytes, "incast_algorithm": args.incast_algo}
    entries = []
    print(f"{'case':<14}{'algorithm':>10}{'flows':>9}{'sim us':>9}{'events':>12}"
          f"{'wall s':>9}{'cpu s':>8}{'ev/cpu s':>11}{'finished':>10}")
    try:
        for case, scn in cases:
            for algo in scn.algorithms:
                bar = ProgressBar(f"{case}/{algo}", scn.duration_ps, enabled=not args.quiet)
                try:
                    run = runner.run(scn, algo, progress=bar)
                finally:
                    bar.done()
                res = run.result
                sized = [f for f in res.flows if f.size_bytes is not None]
                finished = sum(f.finish_ps is not None for f in sized)
                entry = {"case": case, "algorithm": algo,
                         "flows": len(res.flows),
                         "sim_us": scn.duration_ps / PS_PER_US, "events": res.events,
                         "wall_s": round(run.wall_s, 3), "cpu_s": round(run.cpu_s, 3),
                         "events_per_s": round(run.events_per_s),
                         "sized_flows": len(sized), "finished": finished}
                entries.append(entry)
                (out / "bench.json").write_text(json.dumps({"meta": meta, "runs": entries},
                                                           indent=1))
                print(f"{case:<14}{algo:>10}{entry['flows']:>9}{entry['sim_us']:>9,.0f}"
                      f"{res.events:>12,}{run.wall_s:>9.2f}{run.cpu_s:>8.2f}"
                      f"{run.events_per_s:>11,.0f}"
                      f"{finished:>6}/{len(sized):<4}", flush=True)
    except KeyboardInterrupt:
        kept = (f"{len(entries)} measurement(s) written to {out / 'bench.json'}" if entries
                else "nothing written")
        print(f"\ninterrupted (Ctrl-C); {kept}", file=sys.stderr, flush=True)
        return 130
    print(f"outputs: {out / 'bench.json'}")
    return 0


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line: ``python -m sim run: error: argument --jobs: ...``."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def main(argv=None) -> int:
    parser = _Parser(prog="python -m sim", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the bundled scenarios")

    def common(p):
        p.add_argument("scenario", help="a scenario file or the name of a bundled scenario")
        p.add_argument("--algo", help="comma-separated algorithms (default: the scenario's)")
        p.add_argument("--out", type=Path, default=Path("out"), help="output folder (out)")
        p.add_argument("--duration-us", help="override the simulated duration (us)")
        p.add_argument("--seed", type=int, help="override the scenario's seed")

    run = sub.add_parser("run", help="run a scenario for one or several algorithms")
    common(run)
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    run.add_argument("--tag", default="", type=_tag,
                     help="output folder out/<scenario>-<tag> (to keep variants apart)")
    run.add_argument("--seeds", type=_seeds,
                     help="replications: run every algorithm at each seed (1..5 or 1,4,9) and "
                     "print the mean and spread of every metric (default: the scenario's "
                     "replications, from its seed)")
    run.add_argument("--param", action="append", dest="run_params", metavar="KEY=VALUE",
                     help="set a key of the scenario, as sweep does (algo.dcqcn.kmin_kb=50, "
                     "topology.senders=8, workload[1].load=0.5; value read as TOML; "
                     "repeatable)")
    run.add_argument("--jobs", type=_positive, default=os.cpu_count() or 1,
                     help="processes for the replications (default: the CPUs)")
    run.add_argument("--engine", help="the congestion engines' implementation: golden (the "
                     "models), fast (LDCP's twin), rtl (the Verilated RTL: the dcqcn, qcn "
                     "and ldcp engines and the switches' markers), engine / engine-rtl (ONE "
                     "multi-flow engine per NIC for dcqcn and qcn: its golden model / its "
                     "Verilated RTL); "
                     "default: the scenario's engine key, else each algorithm's own")
    sweep = sub.add_parser("sweep", help="run a parameter grid across local processes "
                           "or a Dask cluster")
    common(sweep)
    sweep.add_argument("--param", action="append",
                       help="key.path=v1,v2 (repeatable; the grid is the cartesian product)")
    sweep.add_argument("--jobs", type=_positive, default=os.cpu_count() or 1,
                       help="processes (with --dask: the LocalCluster's workers)")
    sweep.add_argument("--dask", nargs="?", const="local", metavar="ADDRESS",
                       help="run the points on Dask distributed: alone, a LocalCluster of "
                       "--jobs worker processes; with an address (tcp://host:8786), the "
                       "workers of that running scheduler")
    sweep.add_argument("--resume", action="store_true",
                       help="keep the runs already in the output's sweep.csv (matched by the "
                       "point's parameters and algorithm) and run only the missing ones "
                       "(default: start afresh, removing the earlier sweep files)")
    sweep.add_argument("--quiet", action="store_true", help="no progress line")
    sweep.add_argument("--no-plots", action="store_true",
                       help="skip the PNG plots (each headline metric against the first "
                       "--param)")
    bench = sub.add_parser("bench", help="events/s and wall time (writes out/bench.json)")
    bench.add_argument("--senders", type=_int_list, default=[100, 1000, 10000],
                       help="incast sizes to time (100,1000,10000)")
    bench.add_argument("--size-bytes", type=_positive, default=8000,
                       help="bytes per incast sender")
    bench.add_argument("--algo", help="algorithms of the default scenario (default: all)")
    bench.add_argument("--incast-algo", default="dctcp",
                       help="algorithm of the incasts (dctcp: the cheapest endpoint, so the "
                       "numbers show the core's own growth)")
    bench.add_argument("--out", type=Path, default=Path("out"))
    bench.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    try:
        return {"list": cmd_list, "run": cmd_run, "sweep": cmd_sweep,
                "bench": cmd_bench}[args.command](args)
    except (ScenarioError, output.OutputError) as e:
        print(f"error: {_one_line(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted (Ctrl-C); nothing written", file=sys.stderr)
        return 130
    except BrokenPipeError:            # `python -m sim list | head`
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        print(f"error: {where}{e.strerror or _one_line(e)}", file=sys.stderr)
        return 1
    except Exception as e:             # a bug: one line, the traceback on request
        if os.environ.get("SIM_TRACEBACK"):
            raise
        print(f"error: internal error, {type(e).__name__}: {_one_line(e)} (SIM_TRACEBACK=1 "
              f"shows the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
