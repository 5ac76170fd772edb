"""Metrics of one run: pure functions of a ``sim.net.network.RunResult``.

Conventions (also in ``docs/simulator.md``):

- Sample ``k`` of a series is taken at ``k * sample_ps`` (sample 0 at time 0).  The throughput
  of a flow over interval ``k`` (from sample ``k - 1`` to ``k``) is the difference of its
  cumulative delivered bytes times 8 over ``sample_ps``: a series one shorter than the samples.
- Percentiles are **nearest-rank**: the p-th percentile of ``n`` sorted values is the value of
  rank ``ceil(p / 100 * n)`` (1-based), so it is always one of the values.
- FCT = ``finish_ps - start_ps`` of a finished sized flow; slowdown = FCT / ``ideal_fct_ps``
  (base RTT plus the size at the path rate, from the core).  Unfinished flows are counted apart,
  not in the percentiles.
- Size buckets (1 KB = 1000 B): ``<10KB`` [0, 10 KB), ``10KB-100KB`` [10 KB, 100 KB),
  ``100KB-1MB`` [100 KB, 1 MB), ``>=1MB`` [1 MB, inf).
- Jain's fairness index ``(sum x)^2 / (n sum x^2)`` over the goodputs of the long-lived flows
  that are active over the whole window, by default the second half of the run (after the
  start-up transient); 1 is perfectly fair, 1/n is one flow taking everything.
- Utilization of a port = transmitted bytes x 8 / (rate x duration).
- PFC: total paused time and pause frames from the counters; per sampled port, the fraction of
  samples at which it was paused.
"""

from __future__ import annotations

import itertools
import math

from sim.net.engine import PS_PER_S, PS_PER_US

BUCKETS: tuple[tuple[str, int, int | None], ...] = (
    ("<10KB", 0, 10_000),
    ("10KB-100KB", 10_000, 100_000),
    ("100KB-1MB", 100_000, 1_000_000),
    (">=1MB", 1_000_000, None),
)
PERCENTILES = (50, 95, 99)
COUNTERS = ("marks", "drops_not_ect_at_k", "drops_buffer", "cnps", "cnms", "pause_frames",
            "paused_ps", "timeouts", "retransmitted_packets", "watchdog_trips")


def percentile(values, p: float):
    """Nearest-rank percentile of ``values`` (None if empty)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def jain(values) -> float | None:
    """Jain's fairness index; None for no values or all zero."""
    values = list(values)
    total = sum(values)
    squares = sum(v * v for v in values)
    return None if not values or squares == 0 else total * total / (len(values) * squares)


def bucket_of(size_bytes: int) -> str:
    for name, lo, hi in BUCKETS:
        if size_bytes >= lo and (hi is None or size_bytes < hi):
            return name
    raise ValueError(size_bytes)


def throughput_series(cumulative_bytes: list[int], sample_ps: int) -> list[float]:
    """Bit/s over each sample interval, from cumulative delivered bytes."""
    return [(b - a) * 8 * PS_PER_S / sample_ps
            for a, b in itertools.pairwise(cumulative_bytes)]


def utilization(res) -> dict[str, float]:
    return {port: tx * 8 * PS_PER_S / (res.port_rate_bps[port] * res.duration_ps)
            for port, tx in res.port_tx_bytes.items()}


def fct_rows(res) -> list[dict]:
    """One row per sized flow (long-lived flows have no FCT)."""
    rows = []
    for f in res.flows:
        if f.size_bytes is None:
            continue
        fct = None if f.finish_ps is None else f.finish_ps - f.start_ps
        slowdown = None if fct is None or not f.ideal_fct_ps else fct / f.ideal_fct_ps
        rows.append({"flow_id": f.flow_id, "tag": f.tag, "src": f.src, "dst": f.dst,
                     "size_bytes": f.size_bytes, "start_ps": f.start_ps,
                     "finish_ps": f.finish_ps, "fct_ps": fct, "ideal_fct_ps": f.ideal_fct_ps,
                     "slowdown": slowdown, "bucket": bucket_of(f.size_bytes),
                     "below_one_us": measured(f).get("below_one_us")})
    return rows


def measured(f) -> dict:
    """A flow record's per-flow measurements (LDCP's sender: time below one packet, fast
    start; see ``LdcpSenderEndpoint.measured``), or {} where the sender measures nothing."""
    return getattr(f, "measured", None) or {}


def _spread(values) -> dict:
    out = {f"p{p}": percentile(values, p) for p in PERCENTILES}
    out["mean"] = sum(values) / len(values) if values else None
    return out


def _fct_group(rows: list[dict]) -> dict:
    done = [r for r in rows if r["fct_ps"] is not None]
    return {"flows": len(rows), "finished": len(done), "unfinished": len(rows) - len(done),
            "slowdown": _spread([r["slowdown"] for r in done if r["slowdown"] is not None]),
            "fct_us": _spread([r["fct_ps"] / PS_PER_US for r in done])}


def fct_stats(res) -> dict:
    """FCT and slowdown percentiles overall, by size bucket and by workload tag."""
    rows = fct_rows(res)
    stats = _fct_group(rows)
    stats["by_size"] = {name: _fct_group([r for r in rows if r["bucket"] == name])
                        for name, _, _ in BUCKETS}
    stats["by_tag"] = {tag: _fct_group([r for r in rows if r["tag"] == tag])
                       for tag in sorted({r["tag"] for r in rows})}
    return stats


def fairness(res, window_ps: tuple[int, int] | None = None,
             stops: dict[int, int | None] | None = None) -> dict:
    """Jain's index and goodputs of the long-lived flows active over the whole window.
    ``stops``: flow id -> planned stop time (the core's FlowRecord has none; without it a
    record's ``stop_ps`` attribute, then ``finish_ps``, is used)."""
    start, end = window_ps or (res.duration_ps // 2, res.duration_ps)
    n_samples = max((len(s) for s in res.flow_series.values()), default=0)
    i0 = min(start // res.sample_ps, max(n_samples - 1, 0))
    i1 = min(end // res.sample_ps, max(n_samples - 1, 0))
    goodputs = []
    for f in res.flows:
        series = res.flow_series.get(f.flow_id)
        stop = (stops or {}).get(f.flow_id, getattr(f, "stop_ps", None))
        if stop is None:
            stop = f.finish_ps
        if f.size_bytes is not None or series is None or f.start_ps > start or \
                (stop is not None and stop < end) or i1 <= i0:
            continue
        goodputs.append((series[i1] - series[i0]) * 8 * PS_PER_S / ((i1 - i0) * res.sample_ps))
    return {"jain": jain(goodputs), "flows": len(goodputs),
            "window_us": [start / PS_PER_US, end / PS_PER_US],
            "goodput_gbps": {"mean": sum(goodputs) / len(goodputs) / 1e9 if goodputs else None,
                             "min": min(goodputs) / 1e9 if goodputs else None,
                             "max": max(goodputs) / 1e9 if goodputs else None}}


def queue_stats(res) -> dict[str, dict]:
    """Per sampled port: max, mean and p99 of the egress data queue (bytes)."""
    return {port: {"max": max(q) if q else 0, "mean": sum(q) / len(q) if q else 0.0,
                   "p99": percentile(q, 99) or 0}
            for port, q in res.queue_series.items()}


def pause_stats(res) -> dict[str, float]:
    """Per sampled port that was ever paused: the fraction of samples at which its data queue
    was paused by PFC."""
    series = getattr(res, "pause_series", None) or {}
    return {port: sum(s) / len(s) for port, s in series.items() if s and any(s)}


def counters(res) -> dict:
    out = {name: res.counters.get(name, 0) for name in COUNTERS}
    out.update({k: v for k, v in res.counters.items() if k not in out})
    out["drops"] = out["drops_not_ect_at_k"] + out["drops_buffer"]
    out["paused_us"] = out["paused_ps"] / PS_PER_US
    return out


def _pearson(xs, ys) -> float | None:
    n = len(xs)
    if n < 3:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return None if sxx == 0 or syy == 0 else sxy / math.sqrt(sxx * syy)


def window_mechanism(res, tag: str | None = None, per_flow: dict | None = None) -> dict | None:
    """What the sized flows' windows went through, from the per-flow measurements the sender
    reports (:func:`measured`, or ``per_flow``: flow id -> measurements, e.g. from the
    endpoints, ``{f: net.sender(f).measured()}``; LDCP: ``below_one_us``, ``at_floor_us``,
    ``naks``, ``fast_start_exit``; None for an algorithm that reports none), for the flows
    tagged ``tag`` (None: every sized flow):

    - ``below_one``: how many flows had a window below one packet, and their time below one
      packet (mean, p50, max, in us) and at the floor gamma;
    - ``corr_fct_below_one``: Pearson correlation, over the finished flows, of the FCT with
      the time below one packet;
    - ``fast_start``: flows whose fast start ended by a loss, NAKs per flow;
    - ``long_flows_gbps``: goodput of each long-lived flow while the flows of ``tag`` were
      unfinished (from the first start to the last finish; mean, min, max, sum), from the
      tracked flows' series."""
    def m(f):
        return per_flow[f.flow_id] if per_flow is not None else measured(f)
    flows = [f for f in res.flows if f.size_bytes is not None and (tag is None or f.tag == tag)
             and "below_one_us" in m(f)]
    if not flows:
        return None
    below = {f.flow_id: m(f)["below_one_us"] for f in flows}
    sub1 = [f for f in flows if below[f.flow_id] > 0]
    done = [f for f in flows if f.finish_ps is not None]
    fct = [(f.finish_ps - f.start_ps) / PS_PER_US for f in done]
    out = {"flows": len(flows), "finished": len(done),
           "below_one": {"flows": len(sub1), **_spread_us([below[f.flow_id] for f in sub1]),
                         "at_floor_mean_us": (sum(m(f).get("at_floor_us", 0) for f in sub1)
                                              / len(sub1) if sub1 else None)},
           "corr_fct_below_one": _pearson(fct, [below[f.flow_id] for f in done]),
           "below_one_mean_all_us": sum(below.values()) / len(below),
           "fast_start": {"loss_exits": sum(m(f).get("fast_start_exit") == 1 for f in flows),
                          "naks_per_flow": sum(m(f).get("naks", 0) for f in flows)
                          / len(flows)}}
    start = min(f.start_ps for f in flows)
    end = max(f.finish_ps for f in done) if len(done) == len(flows) else res.duration_ps
    i0, i1 = -(-start // res.sample_ps), end // res.sample_ps
    rates = []
    for f in res.flows:
        series = res.flow_series.get(f.flow_id)
        if f.size_bytes is None and series is not None and i1 > i0 and i1 < len(series):
            rates.append((series[i1] - series[i0]) * 8 * PS_PER_S
                         / ((i1 - i0) * res.sample_ps) / 1e9)
    out["window_us"] = [i0 * res.sample_ps / PS_PER_US, i1 * res.sample_ps / PS_PER_US]
    out["long_flows_gbps"] = ({"mean": sum(rates) / len(rates), "min": min(rates),
                               "max": max(rates), "sum": sum(rates)} if rates else None)
    return out


def _spread_us(values) -> dict:
    return {"mean_us": sum(values) / len(values) if values else None,
            "p50_us": percentile(values, 50), "max_us": max(values, default=None)}


def summarize(res, stops: dict[int, int | None] | None = None) -> dict:
    """Every metric of a run, JSON-ready, plus the headline numbers of the comparison table."""
    util = utilization(res)
    queues = queue_stats(res)
    fct = fct_stats(res)
    fair = fairness(res, stops=stops)
    count = counters(res)
    sampled = [p for p in util if p in queues] or list(util)
    headline = {
        "utilization": max((util[p] for p in sampled), default=0.0),
        "queue_p99_kb": max((q["p99"] for q in queues.values()), default=0) / 1000,
        "queue_max_kb": max((q["max"] for q in queues.values()), default=0) / 1000,
        "slowdown_p50": fct["slowdown"]["p50"],
        "slowdown_p99": fct["slowdown"]["p99"],
        "unfinished": fct["unfinished"],
        "jain": fair["jain"],
        "drops": count["drops"],
        "marks": count["marks"],
        "cnps_cnms": count["cnps"] + count["cnms"],
        "paused_us": count["paused_us"],
    }
    out = {"headline": headline, "utilization": util, "queues": queues, "fct": fct,
           "fairness": fair, "counters": count, "paused_fraction": pause_stats(res)}
    mech = window_mechanism(res)
    if mech is not None:        # (LDCP: the sized flows' time below one packet, fast start)
        out["window_mechanism"] = mech
    return out
