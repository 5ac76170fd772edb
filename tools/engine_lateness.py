"""Timer lateness of the multi-flow DCQCN engine at a realistic load, on the cycle-accurate model.

``python -m tools.engine_lateness [--flows 4096] [--congested 0.02] [--tx-load 0.3] ...``
runs :class:`sim.models.flow_engine.FlowEngineModel` (bit-exact and cycle-accurate with the
RTL: same arbiter, same timer wheel, same lateness) around the DCQCN datapath model with the
ConnectX profile at 156.25 MHz (the ``dcqcn_engine_4k`` top's reset registers: alpha timer K
= 1 us = 156 cycles, rate-increase timer T = 300 us = 46,875 cycles, cut hold-off P = 4 us =
625 cycles, byte counter 32,767 bytes) and prints the distribution of every expiry's lateness
(cycles from a timer's deadline to the cycle its update was applied), exact and in the
engine's counter buckets (which it checks against the model's counters).

Load: after the init sweep and a START of every flow,
- TX events: each cycle, with probability ``--tx-load``, a TX event (one packet, 64 ... 9000
  bytes) is offered for a flow drawn uniformly from all flows (held until taken: back-pressure);
- CNPs: ``--congested`` of the flows (chosen at random) are congested; each gets CNPs at
  ``--cnp-gap-us`` on average (exponential gaps; the default 50 us is DCQCN's notification
  point pacing, one CNP per 50 us per flow at most), from a random phase;
- the timers: a flow's alpha and rate-increase timers run from its first CNP on (the ConnectX
  alpha timer reloads every K cycles for as long as the flow lives), so the timer load is about
  ``congested x flows x (1/156 + 1/46875)`` expiries per cycle.

``--sweep`` prints one line per congested fraction instead (0.5% ... 5%), to show where the
engine's one event per clock runs out.
"""

from __future__ import annotations

import argparse
import heapq
import math
import random
import sys
import time
from collections import Counter

from hw.nic.dcqcn_engine import DcqcnDatapath, DcqcnEngineConfig
from hw.nic.flow_datapath import CtlOp
from hw.nic.flow_engine import LATE_BUCKETS, late_bucket, pipe_depth
from sim.models.dcqcn import DcqcnDatapathModel
from sim.models.flow_engine import FlowEngineModel


class _Recording(DcqcnDatapathModel):
    """The DCQCN model datapath, recording the lateness of every applied expiry."""

    def __init__(self, rtl):
        super().__init__(rtl)
        self.late = Counter()

    def update(self, regs, state, kind, payload, t):
        out = super().update(regs, state, kind, payload, t)
        if out.expired:
            self.late[out.late] += 1
        return out


def run(flows: int, congested: float, tx_load: float, cnp_gap_us: float, us: float,
        seed: int, pipelined: bool = True) -> dict:
    cfg = DcqcnEngineConfig.for_flows(flows)
    dp = DcqcnDatapath(cfg.rp, cfg.engine.time_width, pipelined=pipelined)
    dpm = _Recording(dp)
    model = FlowEngineModel(cfg.engine, dpm)
    model.log_issue = False
    rng = random.Random(seed)
    clk = cfg.engine.clk_hz
    # init sweep, then START every flow (one per cycle)
    while not model.step().ready:
        pass
    for f in range(flows):
        while not model.step(ctl=(f, CtlOp.START, 0, 0)).ctl_ready:
            pass
    hot = rng.sample(range(flows), max(1, round(congested * flows)))
    gap = cnp_gap_us * 1e-6 * clk
    next_cnp = sorted((rng.uniform(0, gap), f) for f in hot)
    cycles = int(us * 1e-6 * clk)
    c0, e0 = model.cycle, model.issued
    txq: list = []
    cnq: list = []
    held_tx = held_cn = 0
    heapq.heapify(next_cnp)
    for c in range(cycles):
        if rng.random() < tx_load:
            txq.append((rng.randrange(flows), rng.randint(64, 9000)))
        while next_cnp and next_cnp[0][0] <= c:
            _, f = heapq.heappop(next_cnp)
            cnq.append((f, 1))
            heapq.heappush(next_cnp, (c + rng.expovariate(1 / gap), f))
        o = model.step(tx=txq[0] if txq else None, cn=cnq[0] if cnq else None)
        if txq and o.tx_ready:
            txq.pop(0)
        elif txq:
            held_tx += 1
        if cnq and o.cn_ready:
            cnq.pop(0)
        elif cnq:
            held_cn += 1
    hist = dpm.late
    total = sum(hist.values())
    # the engine's own counters agree with the exact distribution
    buckets = [0] * len(LATE_BUCKETS)
    for late, n in hist.items():
        buckets[late_bucket(late)] += n
    # the engine's counters (late_h0 ...) are the same, but for the expiries
    # still in the pipeline
    assert all(0 <= b - h for b, h in zip(buckets, model.hist, strict=True))
    assert sum(buckets) - sum(model.hist) <= pipe_depth(dp.latency), (buckets, model.hist)
    return {"flows": flows, "congested": len(hot), "cycles": model.cycle - c0,
            "events": model.issued - e0, "expiries": total, "hist": hist, "buckets": buckets,
            "late_max": max(hist) if hist else 0,
            "late_mean": (sum(k * v for k, v in hist.items()) / total) if total else 0.0,
            "held_tx": held_tx, "held_cn": held_cn, "txq": len(txq), "cnq": len(cnq),
            "ev_timer": model.counters["ev_timer"], "stale": model.counters["stale_pops"],
            "max_occ": model.wheel.out.max_occupancy}


def percentile(hist: Counter, q: float) -> int:
    total = sum(hist.values())
    need = math.ceil(q * total)
    acc = 0
    for k in sorted(hist):
        acc += hist[k]
        if acc >= need:
            return k
    return 0


def report(r: dict, out=sys.stdout):
    hist, total = r["hist"], r["expiries"]
    print(f"{r['flows']} flows, {r['congested']} congested, {r['cycles']} cycles "
          f"({r['cycles'] / 156.25:.0f} us at 156.25 MHz), {r['events']} events issued "
          f"({r['events'] / r['cycles']:.3f} per cycle), {total} expiries, "
          f"{r['ev_timer']} timer pops ({r['stale']} stale), wheel max occupancy {r['max_occ']}",
          file=out)
    print(f"lateness (cycles): mean {r['late_mean']:.3f}, p50 {percentile(hist, .5)}, "
          f"p99 {percentile(hist, .99)}, p99.9 {percentile(hist, .999)}, max {r['late_max']}; "
          f"inputs held back: TX {r['held_tx']} cycles, CNP {r['held_cn']} cycles; "
          f"left queued at the end: TX {r['txq']}, CNP {r['cnq']}", file=out)
    print("  exact:", file=out)
    for late in sorted(hist)[:12]:
        print(f"    {late:6d} {hist[late]:9d}  {100 * hist[late] / total:7.3f} %", file=out)
    if len(hist) > 12:
        print(f"    ... {len(hist) - 12} more values up to {r['late_max']}", file=out)
    print("  engine buckets (late_h0 ... late_h7):", file=out)
    for (lo, hi), n in zip(LATE_BUCKETS, r["buckets"], strict=True):
        label = f"{lo}" if lo == hi else f"{lo}-{hi if hi is not None else ''}"
        print(f"    {label:>8} {n:9d}  {100 * n / max(total, 1):7.3f} %", file=out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flows", type=int, default=4096)
    ap.add_argument("--congested", type=float, default=0.02,
                    help="fraction of the flows that get CNPs (default 0.02)")
    ap.add_argument("--tx-load", type=float, default=0.3,
                    help="TX events offered per cycle (default 0.3)")
    ap.add_argument("--cnp-gap-us", type=float, default=50.0)
    ap.add_argument("--us", type=float, default=1500.0, help="simulated time (default 1500 us)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--one-cycle", action="store_true",
                    help="the one-cycle DCQCN datapath (default: the engine top's, 12 cycles)")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    if a.sweep:
        print("congested  flows  events/cycle  expiries  mean   p99  max  TX held (cycles)")
        for frac in (0.005, 0.01, 0.02, 0.03, 0.05):
            r = run(a.flows, frac, a.tx_load, a.cnp_gap_us, a.us, a.seed, not a.one_cycle)
            print(f"{frac:8.3f} {r['congested']:6d} {r['events'] / r['cycles']:12.3f} "
                  f"{r['expiries']:9d} {r['late_mean']:6.2f} {percentile(r['hist'], .99):5d} "
                  f"{r['late_max']:5d} {r['held_tx']:9d}", flush=True)
    else:
        report(run(a.flows, a.congested, a.tx_load, a.cnp_gap_us, a.us, a.seed,
                   not a.one_cycle))
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
