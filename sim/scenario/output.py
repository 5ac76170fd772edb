"""Outputs of a scenario run, in ``<out>/<scenario name>/``.

- ``summary.json``: the scenario as read, seed, and per algorithm the events, wall and CPU
  time, events per CPU second and every metric of :func:`sim.scenario.metrics.summarize`;
- ``<algo>_queues.csv`` (``time_us``, ``<link>_queue_bytes`` per sampled port, named after
  the link it feeds: ``sw->rx0``), ``<algo>_flows.csv`` (``time_us`` at the end of each sample
  interval, ``f<id>_<tag>_gbps`` per tracked flow), ``<algo>_trace.csv`` (the tracked flows'
  engine state, :func:`write_trace`), ``<algo>_fct.csv`` (one row per sized flow), if PFC
  paused a sampled port, ``<algo>_pause.csv`` (``<link>_paused``: 1 where the port was paused
  at the sample), and where the engine chose settings per flow,
  ``<algo>_flow_settings.csv`` (LDCP: each flow's base RTT from its path, the RTT register in
  cycles, IW, BDP window, RTO);
- with replications (``--seeds``), ``replications.json``/``.csv``: every metric by seed with
  its mean, standard deviation, min and max;
- ``queues.png``, ``rates.png``, ``traces.png``, ``fct_slowdown_cdf.png``, ``comparison.png``
  (:func:`write_plots`; titles carry the scenario name).

A run writes into a fresh folder or first removes what an earlier run wrote there
(:func:`prepare_folder`): the files listed in the folder's ``.sim-outputs`` manifest (every
file a run created, rewritten after each write) and the names a run writes (``summary.json``,
``<algorithm>_queues.csv`` of a registered algorithm, the plots, ...); nothing else, so a
user's own files in the folder stay.  :class:`RunWriter` writes each algorithm's CSVs and an
updated ``summary.json`` as soon as it finishes, so an interrupted run keeps what finished.
"""

from __future__ import annotations

import csv
import json
import math
import os
from pathlib import Path

from sim.net.engine import PS_PER_US

from . import metrics
from .config import Scenario, echo

PLOT_PORTS = 6       # queue lines per panel: the ports with the deepest queues
PLOT_FLOWS = 12      # rate lines per panel: the flows that delivered most
RATE_SMOOTH_PS = 10 * PS_PER_US   # rate plots average over at least this (the CSV keeps all)


def run_summary(run) -> dict:
    res = run.result
    return {"events": res.events, "wall_s": round(run.wall_s, 3), "cpu_s": round(run.cpu_s, 3),
            "events_per_s": round(run.events_per_s), "flows": len(res.flows),
            "metrics": metrics.summarize(res, {f.flow_id: f.stop_ps for f in run.flows})}


def summary(scn: Scenario, runs: list) -> dict:
    return {"scenario": {"name": scn.name, "description": scn.description, "source": scn.source,
                         "seed": scn.seed, "duration_us": scn.duration_ps / PS_PER_US,
                         "sample_us": scn.sample_ps / PS_PER_US,
                         "algorithms": [r.algorithm for r in runs], "file": echo(scn)},
            "runs": {r.algorithm: run_summary(r) for r in runs}}


class OutputError(Exception):
    """The output folder cannot be written (raised before anything is simulated)."""


MANIFEST = ".sim-outputs"
RUN_FILES = ("summary.json", "replications.json", "replications.csv", "queues.png", "rates.png",
             "fct_slowdown_cdf.png", "comparison.png", "traces.png")
RUN_SERIES = ("queues", "flows", "fct", "pause", "flow_settings", "trace")  # <algo>_<x>.csv


def folder_for(out, name: str, tag: str = "") -> Path:
    return Path(out) / (f"{name}-{tag}" if tag else name)


def _own_files(folder: Path, algorithms) -> set[str]:
    """The files of ``folder`` that a run of this project wrote: its manifest's list and the
    names a run writes (for folders written before the manifest existed)."""
    names = set(RUN_FILES) | {f"{a}_{k}.csv" for a in algorithms for k in RUN_SERIES}
    try:
        listed = json.loads((folder / MANIFEST).read_text())
        names |= {n for n in listed if isinstance(n, str) and n == Path(n).name}
    except (OSError, ValueError):
        pass
    return names


def check_writable(folder: Path) -> Path:
    """Create ``folder`` (and its parents) and check that a file can be written in it;
    :class:`OutputError` names the folder and the reason."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".sim-write-test-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except (FileExistsError, NotADirectoryError):
        raise OutputError(f"cannot write the output folder {folder}: it or a parent is a "
                          f"file, not a folder") from None
    except OSError as e:
        raise OutputError(f"cannot write the output folder {folder}: "
                          f"{e.strerror or e}") from None
    return folder


def remove_files(folder: Path, names) -> list[str]:
    """Remove the regular files ``names`` of ``folder`` that exist; the removed names."""
    removed = sorted(n for n in set(names)
                     if (Path(folder) / n).is_file() and not (Path(folder) / n).is_symlink())
    try:
        for name in removed:
            (Path(folder) / name).unlink()
    except OSError as e:
        raise OutputError(f"cannot remove the earlier output {Path(folder) / name}: "
                          f"{e.strerror or e}") from None
    return removed


def prepare_folder(folder: Path, algorithms=None) -> list[str]:
    """:func:`check_writable`, then remove the files an earlier run wrote there
    (:func:`_own_files`; ``algorithms``: every algorithm whose CSVs may be there, default
    every registered one) and its manifest.  Returns the removed names."""
    folder = check_writable(folder)
    if algorithms is None:
        from . import core
        algorithms = tuple(core.api().ALGORITHMS)
    removed = remove_files(folder, _own_files(folder, algorithms) | {MANIFEST})
    return [n for n in removed if n != MANIFEST]


class RunWriter:
    """The outputs of one ``run`` in ``folder``, written as the algorithms finish.

    ``start()`` prepares the folder (:func:`prepare_folder`); ``add(run)`` writes the run's
    CSVs and ``summary.json`` with every run so far (``"complete": false``); ``finish()`` the
    final summary, the replications and the plots; ``interrupt(note)`` a summary that says
    which algorithm was stopped.  The manifest ``.sim-outputs`` lists every file written."""

    def __init__(self, scn: Scenario, folder: Path, plots: bool = True):
        self.scn, self.folder, self.plots = scn, Path(folder), plots
        self.runs: list = []
        self._before: set[str] = set()

    def start(self) -> list[str]:
        removed = prepare_folder(self.folder)
        self._before = {p.name for p in self.folder.iterdir()}
        return removed

    def _summary(self, **extra) -> dict:
        data = summary(self.scn, self.runs)
        data["scenario"]["algorithms"] = list(self.scn.algorithms)
        data.update(extra)
        (self.folder / "summary.json").write_text(json.dumps(data, indent=1,
                                                             default=_json_default))
        self._manifest()
        return data

    def _manifest(self) -> None:
        names = sorted({p.name for p in self.folder.iterdir()} - self._before - {MANIFEST})
        (self.folder / MANIFEST).write_text(json.dumps(names))

    def add(self, run) -> None:
        write_series(run, self.folder)
        self.runs.append(run)
        self._summary(complete=False)

    def finish(self, reps: dict | None = None) -> dict:
        data = self._summary(complete=True)
        if reps is not None:
            write_replications(self.folder, reps)
        if self.plots and self.runs:
            write_plots(self.scn, self.runs, data, self.folder, reps)
        self._manifest()
        return data

    def interrupt(self, note: str) -> dict:
        return self._summary(complete=False, interrupted=note)


def _json_default(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    raise TypeError(type(value).__name__)


def write_all(scn: Scenario, runs: list, out: Path, plots: bool = True, tag: str = "",
              reps: dict | None = None) -> tuple[Path, dict]:
    """Everything, in ``out/<scenario>`` (``out/<scenario>-<tag>`` with a tag); with
    replications (:func:`replications`), also ``replications.json/csv`` and the comparison
    plot's bars become the mean over the seeds with their range."""
    writer = RunWriter(scn, folder_for(out, scn.name, tag), plots)
    writer.start()
    for run in runs:
        writer.add(run)
    return writer.folder, writer.finish(reps)


def write_series(run, folder: Path) -> None:
    res, algo = run.result, run.algorithm
    ports = list(res.queue_series)
    n = max((len(q) for q in res.queue_series.values()), default=0)
    with open(folder / f"{algo}_queues.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["time_us"] + [f"{p}_queue_bytes" for p in ports])
        for k in range(n):
            w.writerow([k * res.sample_ps / PS_PER_US] + [res.queue_series[p][k] for p in ports])
    tags = {r.flow_id: r.tag for r in res.flows}
    ids = list(res.flow_series)
    rates = {i: metrics.throughput_series(res.flow_series[i], res.sample_ps) for i in ids}
    n = max((len(r) for r in rates.values()), default=0)
    with open(folder / f"{algo}_flows.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["time_us"] + [f"f{i}_{tags.get(i, '')}_gbps" for i in ids])
        for k in range(n):
            w.writerow([(k + 1) * res.sample_ps / PS_PER_US] +
                       [f"{rates[i][k] / 1e9:.4f}" if k < len(rates[i]) else "" for i in ids])
    paused = [p for p in getattr(res, "pause_series", {}) if any(res.pause_series[p])]
    if paused:
        with open(folder / f"{algo}_pause.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["time_us"] + [f"{p}_paused" for p in paused])
            for k in range(len(res.pause_series[paused[0]])):
                w.writerow([k * res.sample_ps / PS_PER_US] +
                           [res.pause_series[p][k] for p in paused])
    keys = list(dict.fromkeys(k for r in res.flows for k in getattr(r, "settings", {})))
    if keys:            # the engine's per-flow settings (LDCP: base RTT from the path, IW, RTO)
        with open(folder / f"{algo}_flow_settings.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["flow_id", "tag", "src", "dst"] + keys)
            for r in res.flows:
                w.writerow([r.flow_id, r.tag, r.src, r.dst] + [r.settings.get(k, "")
                                                               for k in keys])
    trace = getattr(res, "trace", None)
    if trace:
        write_trace(folder / f"{algo}_trace.csv", res)
    rows = metrics.fct_rows(res)
    with open(folder / f"{algo}_fct.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["flow_id", "tag", "src", "dst", "size_bytes", "start_us", "finish_us",
                    "fct_us", "ideal_fct_us", "slowdown"])
        for r in rows:
            def us(ps):
                return "" if ps is None else ps / PS_PER_US
            w.writerow([r["flow_id"], r["tag"], r["src"], r["dst"], r["size_bytes"],
                        us(r["start_ps"]), us(r["finish_ps"]), us(r["fct_ps"]),
                        us(r["ideal_fct_ps"]),
                        "" if r["slowdown"] is None else f"{r['slowdown']:.4f}"])


def _num(v, digits: int | None = None) -> str:
    """A CSV cell: empty for None, else the shortest exact text (rounded to ``digits``
    decimals first if given: times and RTTs to the picosecond)."""
    if v is None:
        return ""
    return repr(round(v, digits) if digits is not None else v)


def write_trace(path: Path, res) -> None:
    """``<algo>_trace.csv``: one row per state change of a tracked flow's engine
    (:mod:`sim.net.trace`), in time order: ``time_us, flow, tag, event`` and the state columns
    the algorithm has (``cwnd_pkts``, ``rate_gbps``, ``target_rate_gbps``, ``alpha``,
    ``rtt_us``)."""
    from sim.net import trace as tr
    names = tuple(getattr(res, "trace_fields", ()) or tr.FIELDS)
    cols = [tr.FIELDS.index(n) for n in names]
    tags = {r.flow_id: r.tag for r in res.flows}
    rtt = tr.FIELDS.index("rtt_us")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["time_us", "flow", "tag", "event", *names])
        for row in res.trace:
            values = row[3:]
            w.writerow([_num(row[0] / PS_PER_US, 6), row[1], tags.get(row[1], ""), row[2]]
                       + [_num(values[i], 6 if i == rtt else None) for i in cols])


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


PLOT_TRACE_FLOWS = 8   # flows per trace panel: the first tracked flows by id
MARK_CUTS = 100        # cut events marked per flow, if no more than this
TRACE_PANELS = (("cwnd_pkts", "cwnd (packets)"), ("rate_gbps", "rate (Gb/s)"),
                ("alpha", "alpha"), ("rtt_us", "RTT sample (us)"))
NOT_ECT_NOTE = ("Not-ECT drops at K: LDCP's fast-start packets dropped by design "
                "(the marker's K_drop); others: buffer full")


def _colors(plt, keys) -> dict:
    """One colour per key (flow id or port), the same in every panel of every figure."""
    keys = sorted(set(keys), key=lambda k: (isinstance(k, str), k))
    n = len(keys)
    if n <= 10:
        return {k: f"C{i}" for i, k in enumerate(keys)}
    if n <= 20:
        return {k: plt.get_cmap("tab20")(i) for i, k in enumerate(keys)}
    return {k: plt.get_cmap("turbo")(i / (n - 1)) for i, k in enumerate(keys)}


def _message(ax, text: str) -> None:
    """Say why a panel is empty instead of drawing blank axes."""
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=8, color="0.35", wrap=True,
            transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def _ticks(ax, log_x: bool = False) -> None:
    """Readable ticks: a few plain numbers per axis (no offset, no scientific notation)."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator
    ax.tick_params(labelsize=7)
    if log_x:
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    else:
        ax.xaxis.set_major_locator(MaxNLocator(7))
        ax.ticklabel_format(axis="x", style="plain", useOffset=False)
    ax.yaxis.set_major_locator(MaxNLocator(5))
    ax.ticklabel_format(axis="y", style="plain", useOffset=False)


def _save(plt, fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot_queues(plt, scn, runs, folder) -> None:
    n = len(runs)
    fig, axes = plt.subplots(n, 1, figsize=(8, 2.2 * n + 0.6), sharex=True, squeeze=False)
    shown = {}
    for run in runs:
        res = run.result
        shown[run.algorithm] = sorted(res.queue_series,
                                      key=lambda p: -max(res.queue_series[p], default=0))
    color = _colors(plt, [p for ports in shown.values() for p in ports[:PLOT_PORTS]])
    for ax, run in zip(axes[:, 0], runs, strict=True):
        res = run.result
        ax.set_title(run.algorithm, fontsize=9, loc="left")
        deepest = shown[run.algorithm][:PLOT_PORTS]
        if not deepest or not any(res.queue_series[p] for p in deepest):
            _message(ax, "no sampled queue (the topology monitors none)")
            continue
        for port in deepest:
            q = res.queue_series[port]
            ax.plot([k * res.sample_ps / PS_PER_US for k in range(len(q))],
                    [b / 1000 for b in q], lw=0.8, label=port, color=color[port])
        ax.set_ylabel("queue (KB)")
        ax.legend(fontsize=6, loc="upper right")
        _ticks(ax)
    axes[-1, 0].set_xlabel("time (us)")
    fig.suptitle(f"{scn.name}: egress queues (by the link they feed)")
    _save(plt, fig, folder / "queues.png")


def _plot_rates(plt, scn, runs, folder) -> None:
    n = len(runs)
    fig, axes = plt.subplots(n, 1, figsize=(8, 2.2 * n + 0.6), sharex=True, squeeze=False)
    top = {run.algorithm: sorted(run.result.flow_series,
                                 key=lambda i: -(run.result.flow_series[i] or [0])[-1])
           [:PLOT_FLOWS] for run in runs}
    color = _colors(plt, [i for ids in top.values() for i in ids])
    for ax, run in zip(axes[:, 0], runs, strict=True):
        res = run.result
        ax.set_title(run.algorithm, fontsize=9, loc="left")
        tags = {r.flow_id: r.tag for r in res.flows}
        ids = top[run.algorithm]
        if not ids:
            _message(ax, "no tracked flow (only long-lived flows and workloads with "
                     "track = true are sampled); sized flows: fct_slowdown_cdf.png")
            continue
        span = max(1, -(-RATE_SMOOTH_PS // res.sample_ps))     # samples per plotted point
        for i in ids:
            cum = res.flow_series[i][::span]
            rate = metrics.throughput_series(cum, res.sample_ps * span)
            ax.plot([(k + 1) * span * res.sample_ps / PS_PER_US for k in range(len(rate))],
                    [r / 1e9 for r in rate], lw=0.7, label=f"{i} {tags.get(i, '')}",
                    color=color[i])
        ax.set_ylabel("Gb/s")
        if len(ids) <= 8:
            ax.legend(fontsize=6, loc="upper right")
        _ticks(ax)
    axes[-1, 0].set_xlabel("time (us)")
    span_us = max(1, -(-RATE_SMOOTH_PS // scn.sample_ps)) * scn.sample_ps / PS_PER_US
    fig.suptitle(f"{scn.name}: per-flow throughput (mean over {span_us:g} us)")
    _save(plt, fig, folder / "rates.png")


def _plot_fct(plt, scn, runs, folder) -> None:
    fig, ax = plt.subplots(figsize=(7, 4))
    any_flow, notes = False, []
    for run in runs:
        rows = metrics.fct_rows(run.result)
        slow = sorted(r["slowdown"] for r in rows if r["slowdown"] is not None)
        unfinished = sum(r["fct_ps"] is None for r in rows)
        if slow:
            any_flow = True
            p50, p99 = metrics.percentile(slow, 50), metrics.percentile(slow, 99)
            ax.step(slow, [(i + 1) / len(slow) for i in range(len(slow))], where="post",
                    label=f"{run.algorithm}: {len(slow)} finished, {unfinished} unfinished "
                          f"(p50 {p50:.3g}, p99 {p99:.3g})")
        elif rows:
            notes.append(f"{run.algorithm}: none of {len(rows)} sized flows finished")
    if any_flow:
        ax.set_xscale("log")
        ax.legend(fontsize=7, loc="lower right")
        _ticks(ax, log_x=True)
        if notes:
            ax.text(0.02, 0.98, "\n".join(notes), va="top", fontsize=7, transform=ax.transAxes)
    else:
        _message(ax, "\n".join(notes) or "no sized flow (long-lived flows have no FCT)")
    ax.set_xlabel("FCT slowdown (FCT / ideal FCT); unfinished flows are not in the CDF")
    ax.set_ylabel("CDF")
    ax.set_title(f"{scn.name}: FCT slowdown")
    _save(plt, fig, folder / "fct_slowdown_cdf.png")


def _fmt(v: float) -> str:
    """A bar's label: 3 significant digits, thousands in full (no exponent)."""
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


EMPTY = {"slowdown_p99": "no finished sized flow", "drops": "no drops",
         "paused_us": "no PFC pause", "jain": "no long-lived flow over the whole window"}


def _stat(data, reps, algo, path: str):
    """A run's metric (``metrics.<path>``), or over replications its mean, min and max."""
    if reps is None:
        v = data["runs"][algo]["metrics"]
        for k in path.split("."):
            v = v[k]
        return v, None, None
    st = reps["runs"][algo].get(f"metrics.{path}", {"mean": None})
    return st["mean"], st.get("min"), st.get("max")


def _plot_comparison(plt, scn, runs, data, folder, reps) -> None:
    panels = [("utilization", "max port utilization"), ("queue_p99_kb", "queue p99 (KB)"),
              ("slowdown_p99", "FCT slowdown p99 (unfinished flows apart)"),
              ("jain", "Jain index (long flows)"), ("drops", "drops by reason"),
              ("paused_us", "PFC pause time (us)")]
    fig, axes = plt.subplots(2, 3, figsize=(10, 5.8))
    names = [r.algorithm for r in runs]
    x = list(range(len(names)))
    for ax, (key, label) in zip(axes.flat, panels, strict=True):
        ax.set_title(label, fontsize=9)
        every = [_stat(data, reps, a, f"headline.{key}")[0] for a in names]
        if key in EMPTY and not any(every):
            text = EMPTY[key]
            if key == "slowdown_p99":
                unfin = [_stat(data, reps, a, "headline.unfinished")[0] or 0 for a in names]
                if any(unfin):
                    text += "\n" + ", ".join(f"{a}: {u:.3g} unfinished"
                                             for a, u in zip(names, unfin, strict=True))
            _message(ax, text)
            continue
        if key == "drops":
            k_drops = [_stat(data, reps, a, "counters.drops_not_ect_at_k")[0] or 0
                       for a in names]
            buf = [_stat(data, reps, a, "counters.drops_buffer")[0] or 0 for a in names]
            ax.bar(x, k_drops, color="C3", label="Not-ECT at K (by design for LDCP)")
            ax.bar(x, buf, bottom=k_drops, color="C7", label="buffer full")
            for i in x:
                ax.text(i, k_drops[i] + buf[i], f"{_fmt(k_drops[i])} + {_fmt(buf[i])}",
                        ha="center", va="bottom", fontsize=6)
            # (headroom above the bars for the legend)
            ax.set_ylim(0, max(k + b for k, b in zip(k_drops, buf, strict=True)) * 1.6 or 1)
            ax.legend(fontsize=6, loc="upper left")
        else:
            st = [_stat(data, reps, a, f"headline.{key}") for a in names]
            values = [s[0] for s in st]
            heights = [0 if v is None else v for v in values]
            lo = hi = None
            if reps is not None:    # the mean over the seeds, the bar's whisker their range
                lo = [0 if v is None else max(0.0, v - s[1]) for v, s in zip(values, st,
                                                                            strict=True)]
                hi = [0 if v is None else max(0.0, s[2] - v) for v, s in zip(values, st,
                                                                            strict=True)]
            ax.bar(x, heights, color=[f"C{i}" for i in x],
                   yerr=None if lo is None else [lo, hi], capsize=3)
            for i, v in enumerate(values):
                text = "n/a" if v is None else _fmt(v)
                if key == "slowdown_p99":
                    u = _stat(data, reps, names[i], "headline.unfinished")[0]
                    text += f"\n{u or 0:.3g} unfin."
                ax.text(i, heights[i], text, ha="center", va="bottom", fontsize=6)
            top = max((h + (0 if hi is None else hi[i]) for i, h in enumerate(heights)),
                      default=0)
            ax.set_ylim(0, top * 1.3 or 1)
        ax.set_xticks(x)
        ax.set_xticklabels(names, rotation=30 if len(names) > 3 else 0, fontsize=7)
        ax.tick_params(axis="y", labelsize=7)
    seeds = "" if reps is None else (f" (mean of seeds {reps['seeds'][0]}..{reps['seeds'][-1]},"
                                     " whiskers: min-max)")
    fig.suptitle(f"{scn.name}: comparison{seeds}")
    fig.text(0.5, 0.005, NOT_ECT_NOTE, ha="center", fontsize=7, color="0.35")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(folder / "comparison.png", dpi=110)
    plt.close(fig)


def _plot_traces(plt, scn, runs, folder) -> None:
    """``traces.png``: per algorithm (a row), the tracked flows' window or rate (target rate
    dashed, cuts marked), alpha and RTT samples from the trace."""
    from sim.net import trace as tr
    shown = {}
    for run in runs:
        res = run.result
        rows = getattr(res, "trace", None) or []
        ids = sorted({r[1] for r in rows})[:PLOT_TRACE_FLOWS]
        fields = [(f, lab) for f, lab in TRACE_PANELS
                  if f in (getattr(res, "trace_fields", ()) or ())]
        shown[run.algorithm] = (rows, ids, fields)
    color = _colors(plt, [i for _, ids, _ in shown.values() for i in ids])
    ncols = max([len(f) for _, _, f in shown.values()] + [1])
    n = len(runs)
    fig, axes = plt.subplots(n, ncols, figsize=(3.6 * ncols + 0.8, 2.2 * n + 0.6),
                             squeeze=False)
    idx = {f: tr.FIELDS.index(f) + 3 for f in tr.FIELDS}
    for row_axes, run in zip(axes, runs, strict=True):
        rows, ids, fields = shown[run.algorithm]
        end = run.result.duration_ps / PS_PER_US
        if not ids:
            _message(row_axes[0], "no tracked flow (long-lived flows and workloads with "
                     "track = true are traced)")
            row_axes[0].set_title(run.algorithm, fontsize=9, loc="left")
            for ax in row_axes[1:]:
                ax.axis("off")
            continue
        per_flow = {i: [r for r in rows if r[1] == i] for i in ids}
        for c, ax in enumerate(row_axes):
            if c >= len(fields):
                ax.axis("off")
                continue
            field, label = fields[c]
            k = idx[field]
            for i in ids:
                pts = [(r[0] / PS_PER_US, r[k]) for r in per_flow[i] if r[k] is not None]
                if not pts:
                    continue
                t, v = [p[0] for p in pts], [p[1] for p in pts]
                if field == "rtt_us":
                    ax.plot(t, v, ".", ms=1.5, color=color[i], label=str(i))
                    continue
                ax.step(t + [end], v + [v[-1]], where="post", lw=0.8, color=color[i],
                        label=str(i))
                if field == "rate_gbps" and "target_rate_gbps" in run.result.trace_fields:
                    tk = idx["target_rate_gbps"]
                    tv = [r[tk] for r in per_flow[i] if r[tk] is not None]
                    ax.step(t + [end], tv + [tv[-1]], where="post", lw=0.6, ls="--",
                            color=color[i], alpha=0.6)
                if field in ("cwnd_pkts", "rate_gbps"):
                    cuts = [(r[0] / PS_PER_US, r[k]) for r in per_flow[i]
                            if r[2] == "cut" and r[k] is not None]
                    if 0 < len(cuts) <= MARK_CUTS:     # (LDCP's per-ACK decreases: too many)
                        ax.plot([p[0] for p in cuts], [p[1] for p in cuts], "v", ms=3,
                                color=color[i])
            ax.set_ylabel(label, fontsize=8)
            ax.set_xlabel("time (us)", fontsize=7)
            ax.set_xlim(0, end)
            if c == 0:
                ax.set_title(f"{run.algorithm}: {len(ids)} flow(s)", fontsize=9, loc="left")
                if len(ids) <= 8:
                    ax.legend(fontsize=6, loc="upper right", title="flow",
                              title_fontsize=6)
            _ticks(ax)
    fig.suptitle(f"{scn.name}: tracked flows' state (cuts marked, target rate dashed)")
    _save(plt, fig, folder / "traces.png")


def write_plots(scn: Scenario, runs: list, data: dict, folder: Path,
                reps: dict | None = None) -> None:
    """``queues.png``, ``rates.png``, ``fct_slowdown_cdf.png``, ``comparison.png`` and
    ``traces.png``: one colour per flow (and per port) in every panel; a panel with nothing
    to show says why."""
    plt = _pyplot()
    _plot_queues(plt, scn, runs, folder)
    _plot_rates(plt, scn, runs, folder)
    _plot_fct(plt, scn, runs, folder)
    _plot_comparison(plt, scn, runs, data, folder, reps)
    _plot_traces(plt, scn, runs, folder)



def write_sweep_plots(rows: list[dict], params: list[str], metrics: list[str],
                      folder: Path) -> list[str]:
    """``sweep_<metric>.png`` for each of ``metrics``: the metric against the first swept
    parameter ``params[0]``, one line per algorithm (with several swept parameters, one line
    per algorithm and values of the others, named in the legend).  ``rows``: sweep.csv's rows.
    A parameter with non-numeric values is placed evenly, in grid order.  Returns the names."""
    plt = _pyplot()
    x_key, others = params[0], params[1:]
    xs = list(dict.fromkeys(r[x_key] for r in rows))
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in xs)
    pos = {v: (v if numeric else n) for n, v in enumerate(xs)}
    lines: dict[str, list[dict]] = {}
    for r in rows:
        label = " ".join([r["algorithm"], *(f"{k}={r[k]}" for k in others)])
        lines.setdefault(label, []).append(r)
    colors = _colors(plt, lines)
    names = []
    for metric in metrics:
        fig, ax = plt.subplots(figsize=(6, 4))
        for label, line in lines.items():
            # a metric without a value at a point (no flow finished: no slowdown) is a gap
            pts = sorted(((pos[r[x_key]], r[metric]) for r in line), key=lambda p: p[0])
            ax.plot([x for x, _ in pts], [float("nan") if v is None else v for _, v in pts],
                    marker="o", color=colors[label], label=label)
        if all(r[metric] is None for r in rows):
            _message(ax, f"{metric}: no value at any point")
        else:
            if numeric:
                _ticks(ax)
            else:
                ax.set_xticks(range(len(xs)), [str(v) for v in xs], fontsize=7)
            ax.legend(fontsize=7)
        ax.set_xlabel(x_key, fontsize=8)
        ax.set_ylabel(metric, fontsize=8)
        ax.set_title(f"{metric} against {x_key}", fontsize=9)
        name = f"sweep_{metric}.png"
        _save(plt, fig, folder / name)
        names.append(name)
    return names


COLUMNS = [("algorithm", "{}", 9), ("events", "{:,}", 11), ("wall s", "{:.1f}", 7),
           ("cpu s", "{:.1f}", 6), ("ev/cpu s", "{:,.0f}", 9), ("util", "{:.3f}", 6),
           ("q p99 KB", "{:.1f}", 9), ("q max KB", "{:.1f}", 9), ("sd p50", "{:.2f}", 7),
           ("sd p99", "{:.2f}", 7), ("unfin", "{}", 6), ("Jain", "{:.3f}", 6),
           ("drops", "{}", 6), ("marks", "{}", 7), ("CNP+CNM", "{}", 8),
           ("pause us", "{:.1f}", 9)]


def table(data: dict) -> str:
    """The comparison table printed by ``python -m sim run``."""
    lines = ["  ".join(f"{name:>{w}}" for name, _, w in COLUMNS)]
    for algo, run in data["runs"].items():
        h = run["metrics"]["headline"]
        values = [algo, run["events"], run["wall_s"], run["cpu_s"], run["events_per_s"],
                  h["utilization"], h["queue_p99_kb"], h["queue_max_kb"], h["slowdown_p50"],
                  h["slowdown_p99"],
                  h["unfinished"], h["jain"], h["drops"], h["marks"], h["cnps_cnms"],
                  h["paused_us"]]
        lines.append("  ".join(f"{'-' if v is None else fmt.format(v):>{w}}"
                               for (_, fmt, w), v in zip(COLUMNS, values, strict=True)))
    return "\n".join(lines)


# -- replications (several seeds) -----------------------------------------------------------
def flatten(tree, prefix: str = "") -> dict:
    """The numeric leaves of a metrics tree as ``{"fct.slowdown.p99": value}`` (None kept)."""
    out = {}
    if isinstance(tree, dict):
        for k, v in tree.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    elif tree is None or (isinstance(tree, int | float) and not isinstance(tree, bool)):
        out[prefix] = tree
    return out


def spread(values: list) -> dict:
    """Mean, sample standard deviation, min, max and count of the values that are not None."""
    xs = [float(v) for v in values if v is not None and math.isfinite(v)]
    n = len(xs)
    if not n:
        return {"mean": None, "sd": None, "min": None, "max": None, "n": 0}
    mean = sum(xs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else 0.0
    return {"mean": mean, "sd": sd, "min": min(xs), "max": max(xs), "n": n}


def replications(per_seed: dict) -> dict:
    """``{seed: summary dict}`` (:func:`summary` of each seed's runs) -> per algorithm and
    metric (every numeric leaf of the run summaries: events, the headline, FCT, queues,
    counters...) the values by seed and their :func:`spread`."""
    seeds = sorted(per_seed)
    algos = list(per_seed[seeds[0]]["runs"])
    out = {"seeds": seeds, "runs": {}}
    for algo in algos:
        flat = {s: flatten(per_seed[s]["runs"][algo]) for s in seeds}
        keys = list(dict.fromkeys(k for s in seeds for k in flat[s]))
        out["runs"][algo] = {k: {"values": [flat[s].get(k) for s in seeds],
                                 **spread([flat[s].get(k) for s in seeds])} for k in keys}
    return out


SPREAD_COLUMNS = [("util", "utilization", "{:.3f}"), ("q p99 KB", "queue_p99_kb", "{:.1f}"),
                  ("sd p50", "slowdown_p50", "{:.2f}"), ("sd p99", "slowdown_p99", "{:.2f}"),
                  ("unfin", "unfinished", "{:.1f}"), ("Jain", "jain", "{:.3f}"),
                  ("drops", "drops", "{:.0f}"), ("marks", "marks", "{:.0f}"),
                  ("CNP+CNM", "cnps_cnms", "{:.0f}"), ("pause us", "paused_us", "{:.1f}")]


def spread_table(reps: dict) -> str:
    """The comparison table over replications: each headline metric as ``mean ±sd`` and, on a
    second line, ``[min, max]``."""
    n = len(reps["seeds"])
    widths = [max(len(name), 17) for name, _, _ in SPREAD_COLUMNS]
    lines = [f"{n} seeds {reps['seeds'][0]}..{reps['seeds'][-1]}: mean ±sd, [min, max]",
             f"{'algorithm':>9}  " + "  ".join(f"{name:>{w}}" for (name, _, _), w
                                               in zip(SPREAD_COLUMNS, widths, strict=True))]
    for algo, metrics_ in reps["runs"].items():
        top, bottom = [], []
        for (_, key, fmt), w in zip(SPREAD_COLUMNS, widths, strict=True):
            st = metrics_.get(f"metrics.headline.{key}", {"mean": None})
            if st["mean"] is None:
                top.append(f"{'-':>{w}}")
                bottom.append(" " * w)
                continue
            top.append(f"{fmt.format(st['mean']) + ' ±' + fmt.format(st['sd']):>{w}}")
            rng = f"[{fmt.format(st['min'])}, {fmt.format(st['max'])}]"
            bottom.append(f"{rng:>{w}}")
        lines.append(f"{algo:>9}  " + "  ".join(top))
        lines.append(f"{'':>9}  " + "  ".join(bottom))
    return "\n".join(lines)


def write_replications(folder: Path, reps: dict) -> None:
    """``replications.json`` (everything) and ``replications.csv`` (algorithm, metric, the
    value of each seed, mean, sd, min, max)."""
    (folder / "replications.json").write_text(json.dumps(reps, indent=1,
                                                         default=_json_default))
    with open(folder / "replications.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["algorithm", "metric"] + [f"seed_{s}" for s in reps["seeds"]]
                   + ["mean", "sd", "min", "max"])
        for algo, metrics_ in reps["runs"].items():
            for key, st in metrics_.items():
                w.writerow([algo, key] + ["" if v is None else v for v in st["values"]]
                           + ["" if st[k] is None else st[k] for k in ("mean", "sd", "min",
                                                                      "max")])
