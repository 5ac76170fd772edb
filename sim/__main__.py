"""``python -m sim``: run network-simulator scenarios.

::

    python -m sim list                                   # bundled scenarios
    python -m sim run default [--algo ldcp,dctcp] [--out out] [--duration-us 500] [--seed 2]
        [--tag seed2] [--quiet] [--no-plots] [--seeds 1..5 [--jobs 2]]
    python -m sim sweep default --param algo.ldcp.alpha=0.5,1.0 --param topology.senders=8,16 \\
        [--jobs 2]
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
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from sim.scenario import config, output, runner
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
    if getattr(args, "duration_us", None) is not None:
        out["duration_us"] = config.parse_value(args.duration_us)
    if getattr(args, "seed", None) is not None:
        out["seed"] = args.seed
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


def run_scenario(scn, quiet: bool = False) -> list:
    runs = []
    for algo in scn.algorithms:
        bar = ProgressBar(f"{scn.name}/{algo}", scn.duration_ps, enabled=not quiet)
        runs.append(runner.run(scn, algo, progress=bar))
        bar.done()
    return runs


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
    if not args.seeds and scn.replications > 1:
        args.seeds = list(range(scn.seed, scn.seed + scn.replications))
    if not args.seeds:
        runs = run_scenario(scn, args.quiet)
        folder, data = output.write_all(scn, runs, args.out, plots=not args.no_plots,
                                        tag=args.tag)
        print(f"{scn.name}: {scn.description}".rstrip(": "))
        print(output.table(data))
        print(f"outputs: {folder}/")
        return 0
    # replications: every algorithm at every seed (the outputs of the first seed's runs, the
    # spread of every metric over all of them)
    path = str(config.find(args.scenario))
    jobs = [(seed, algo) for seed in args.seeds for algo in scn.algorithms]
    base = {**_overrides(args), **({"algorithms": list(scn.algorithms)})}
    print(f"{scn.name}: {len(args.seeds)} seeds x {len(scn.algorithms)} algorithms = "
          f"{len(jobs)} runs, {args.jobs} process(es)", file=sys.stderr)
    runs: dict = {}
    if args.jobs <= 1:
        for seed, algo in jobs:
            runs[seed, algo] = _run_job(path, {**base, "seed": seed}, algo)
            if not args.quiet:
                print(f"  seed {seed} {algo}: {runs[seed, algo].cpu_s:.1f} s CPU",
                      file=sys.stderr)
    else:
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            futures = {job: pool.submit(_run_job, path, {**base, "seed": job[0]}, job[1])
                       for job in jobs}
            for job, future in futures.items():
                runs[job] = future.result()
                if not args.quiet:
                    print(f"  seed {job[0]} {job[1]}: {runs[job].cpu_s:.1f} s CPU",
                          file=sys.stderr)
    per_seed = {}
    for seed in args.seeds:
        seed_scn = config.load(args.scenario, {**_overrides(args), "seed": seed},
                               _algos(args.algo))
        per_seed[seed] = output.summary(seed_scn, [runs[seed, a] for a in scn.algorithms])
    reps = output.replications(per_seed)
    first = config.load(args.scenario, {**_overrides(args), "seed": args.seeds[0]},
                        _algos(args.algo))
    folder, data = output.write_all(first, [runs[args.seeds[0], a] for a in scn.algorithms],
                                    args.out, plots=not args.no_plots, tag=args.tag, reps=reps)
    print(f"{scn.name}: {scn.description}".rstrip(": "))
    print(f"seed {args.seeds[0]}:")
    print(output.table(data))
    print(output.spread_table(reps))
    print(f"outputs: {folder}/ (replications.csv: every metric by seed)")
    return 0


def _parse_params(params: list[str], source: str) -> list[tuple[str, list]]:
    grid = []
    for item in params:
        key, sep, values = item.partition("=")
        if not sep or not values:
            raise ScenarioError(source, item, config.missing(),
                                "--param needs key=value[,value...]")
        grid.append((key.strip(), [config.parse_value(v.strip()) for v in values.split(",")]))
    return grid


def _sweep_job(scenario: str, overrides: dict, algo: str) -> dict:
    scn = config.load(scenario, overrides, [algo])
    run = runner.run(scn, algo)
    summary = output.run_summary(run)
    return {"events": summary["events"], "wall_s": summary["wall_s"], "cpu_s": summary["cpu_s"],
            **summary["metrics"]["headline"]}


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
    print(f"sweep {name}: {len(points)} points x algorithms = {len(jobs)} runs, "
          f"{args.jobs} process(es)", file=sys.stderr)
    rows = []

    def label(overrides):
        return " ".join(f"{k}={config.show(v)}" for k, v in overrides.items()) or "(base)"

    def record(i, overrides, algo, result):
        row = {"point": i, **{k: _jsonable(v) for k, v in overrides.items()}, "algorithm": algo,
               **result}
        rows.append(row)
        print(f"[{i}] {label(overrides)} {algo}: util {result['utilization']:.3f}  q p99 "
              f"{result['queue_p99_kb']:.1f} KB  sd p99 {_fmt(result['slowdown_p99'])}  Jain "
              f"{_fmt(result['jain'])}  drops {result['drops']}  unfinished "
              f"{result['unfinished']}  {result['cpu_s']:.1f} s CPU",
              flush=True)

    if args.jobs <= 1:
        for i, overrides, algo in jobs:
            record(i, overrides, algo, _sweep_job(path, overrides, algo))
    else:
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            futures = [(i, o, a, pool.submit(_sweep_job, path, o, a)) for i, o, a in jobs]
            for i, o, a, future in futures:
                record(i, o, a, future.result())
    folder = Path(args.out) / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sweep.json").write_text(json.dumps(rows, indent=1))
    with open(folder / "sweep.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"outputs: {folder}/sweep.csv, sweep.json")
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
    for n in [int(s) for s in args.senders.split(",")]:
        cases.append((f"incast {n}", incast_scenario(n, args.size_bytes, args.incast_algo)))
    entries = []
    print(f"{'case':<14}{'algorithm':>10}{'flows':>9}{'sim us':>9}{'events':>12}"
          f"{'wall s':>9}{'cpu s':>8}{'ev/cpu s':>11}{'finished':>10}")
    for case, scn in cases:
        for algo in scn.algorithms:
            bar = ProgressBar(f"{case}/{algo}", scn.duration_ps, enabled=not args.quiet)
            run = runner.run(scn, algo, progress=bar)
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
            print(f"{case:<14}{algo:>10}{entry['flows']:>9}{entry['sim_us']:>9,.0f}"
                  f"{res.events:>12,}{run.wall_s:>9.2f}{run.cpu_s:>8.2f}"
                  f"{run.events_per_s:>11,.0f}"
                  f"{finished:>6}/{len(sized):<4}", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"python": sys.version.split()[0], "cpu_count": os.cpu_count(),
            "incast_size_bytes": args.size_bytes, "incast_algorithm": args.incast_algo}
    (out / "bench.json").write_text(json.dumps({"meta": meta, "runs": entries}, indent=1))
    print(f"outputs: {out / 'bench.json'}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sim", description=__doc__.split("\n")[0])
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
    run.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                     help="processes for the replications (default: the CPUs)")
    sweep = sub.add_parser("sweep", help="run a parameter grid across local processes")
    common(sweep)
    sweep.add_argument("--param", action="append",
                       help="key.path=v1,v2 (repeatable; the grid is the cartesian product)")
    sweep.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes")
    bench = sub.add_parser("bench", help="events/s and wall time (writes out/bench.json)")
    bench.add_argument("--senders", default="100,1000,10000", help="incast sizes to time")
    bench.add_argument("--size-bytes", type=int, default=8000, help="bytes per incast sender")
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
    except ScenarioError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
