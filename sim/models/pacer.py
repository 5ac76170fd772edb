"""Golden model of the multi-flow pacer (:class:`hw.nic.pacer.PacerDatapath`) and its ideal
reference.

:class:`PacerDatapathModel` is the per-flow update in plain ints (used by
:class:`sim.models.flow_engine.FlowEngineModel`, as the toy, DCQCN and QCN models are): the same
rules as the RTL, written independently from its docstring.  :func:`ideal_times` is the
reference it is checked against: the k-th grant (k = 0, 1, ...) of a flow armed at ``t0`` with
a constant interval I (UQ.F cycles) is due at exactly ``t0 + k x I`` (rational arithmetic), and
is granted at the cycle ``ceil(t0 + k x I)`` when its lateness is 0.
"""

from __future__ import annotations

import math
from fractions import Fraction

from hw.nic.flow_datapath import CtlOp, EventKind
from hw.nic.pacer import PacerDatapath

from .flow_datapath import FlowDatapathModel, ModelOut, time_le_int

__all__ = ["PacerDatapathModel", "PacerRegsModel", "ideal_time", "ideal_times", "GrantLog"]


class PacerDatapathModel(FlowDatapathModel):
    """The pacer datapath, in ints (state fields: grants, backlog, armed, next, ival, bytes,
    wait, last)."""

    def __init__(self, rtl: PacerDatapath):
        super().__init__(rtl)
        cfg = rtl.config
        self.F = cfg.frac_bits
        self.nmask = (1 << cfg.next_width) - 1
        self.bl_max = (1 << cfg.backlog_width) - 1
        self.g_max = (1 << cfg.grant_width) - 1
        self.cn_ival_mask = (1 << cfg.ival_width) - 1
        self.count_width = cfg.count_width
        self.size_mask = (1 << cfg.size_width) - 1 if cfg.byte_mode else 0
        self.fields = [name for name, _ in rtl.state_layout]
        # a packet-only build (byte_mode off) has no bytes / wait / last: they read as 0
        self.byte_mode = cfg.byte_mode

    def init_state(self, regs):
        state = {name: 0 for name in self.fields}
        state["ival"] = regs["ival_init"]
        if self.byte_mode:
            state["bytes"] = regs["bytes_init"]
        return state

    def update(self, regs, state, kind, payload, t):
        W, F = self.time_width, self.F
        wmask = (1 << W) - 1
        s = dict(state)
        byte_flow = s.get("bytes", 0)
        tb = (t << F) | ((1 << F) - 1)          # t as a biased deadline

        def due_at(nxt):
            return time_le_int(nxt >> F, t, W)

        def grant():
            """Grant the flow (its deadline s["next"] is due at t): returns the lateness."""
            late = (t - (s["next"] >> F)) & wmask
            if late > regs["burst"]:
                # the burst cap: the deadline moves to t - burst, its fraction kept
                frac = s["next"] & ((1 << F) - 1)
                s["next"] = ((((t - regs["burst"]) & wmask) << F) | frac)
            s["backlog"] -= 1
            s["grants"] = 1 if s["grants"] == self.g_max else s["grants"] + 1
            if byte_flow:
                s["wait"] = 1                    # charged when the NIC reports the size
            else:
                s["next"] = (s["next"] + s["ival"]) & self.nmask
            return late

        # 1. the due timer
        granted = False
        late = 0
        if s["armed"] and not s.get("wait", 0) and due_at(s["next"]):
            if s["backlog"]:
                granted = True
                late = grant()
            else:
                s["armed"] = 0
        # 2. the event
        if kind == EventKind.TX:
            n, size = payload & ((1 << self.count_width) - 1), \
                (payload >> self.count_width) & self.size_mask
            had = s["backlog"]
            if size and state.get("wait", 0) and byte_flow:   # the report of the last grant's size
                nxt = (s["next"] + size * s["ival"]) & self.nmask
                s["next"] = nxt if (had or not due_at(nxt)) else tb
                s["wait"], s["last"] = 0, size
            # (an unarmed flow with a backlog, which only a register write makes, is armed by
            # an enqueue as an idle one is)
            if (had == 0 or not s["armed"]) and n and not s.get("wait", 0):
                future = s["armed"] and not due_at(s["next"])
                if not future:
                    s["next"] = tb
                s["armed"] = 1
            s["backlog"] = min(s["backlog"] + n, self.bl_max)
        elif kind == EventKind.CN:
            new = payload & self.cn_ival_mask
            if s["armed"] and not s.get("wait", 0):
                old = state["ival"]
                move = s["last"] * (new - old) if byte_flow else new - old
                cand = (s["next"] + move) & self.nmask
                s["next"] = cand if not due_at(cand) else tb
            s["ival"] = new
        # 3. a grant caused by the event
        if (not granted and s["armed"] and not s.get("wait", 0) and s["backlog"]
                and due_at(s["next"])):
            granted = True
            late = grant()
        # 4. work-conserving: an empty tx (a pull) with wc set grants a backlogged flow before
        # its send time and restarts its schedule at t (no credit kept, nothing owed)
        if (kind == EventKind.TX and payload == 0 and regs["wc"] and not granted
                and s["armed"] and not s.get("wait", 0) and s["backlog"]):
            granted = True
            late = 0
            s["backlog"] -= 1
            s["grants"] = 1 if s["grants"] == self.g_max else s["grants"] + 1
            if byte_flow:
                s["next"], s["wait"] = tb, 1
            else:
                s["next"] = (tb + s["ival"]) & self.nmask
        wake = (s["next"] >> F) if s["armed"] and not s.get("wait", 0) else None
        return ModelOut(s, wake, granted, late)


# -- the register window ------------------------------------------------------------------------

class PacerRegsModel:
    """The pacer top's per-flow register window (:meth:`hw.nic.pacer_config.PacerConfig.
    register_map` through :class:`hw.nic.engine_regs.EngineRegs`) over a
    :class:`~sim.models.flow_engine.FlowEngineModel`: the golden
    :class:`hw.lib.csr.RegisterModel` keeps the wide-field rules (a high word's write staged,
    ``W0``'s write committing the whole field, ``W0``'s read snapshotting the high words);
    this class turns window accesses into the engine's control operations.

    :meth:`write` returns the operation a window write issues, ``(flow, op, field, value)``,
    or ``None`` (a high word staged, a read-only word, ``CTRL`` without a command, an
    unmapped word).  A window read of a narrow word or of ``W0`` is a READ: call
    :meth:`latch` with the flow when the engine takes that READ (its answer is the state
    then), then :meth:`read` gives the word; a high word's :meth:`read` answers from the
    snapshot without an operation (:meth:`is_read_op` tells which)."""

    def __init__(self, regmap, engine_model):
        from hw.nic.engine_regs import CTRL_EN_BIT
        self.map, self.engine = regmap, engine_model
        self.regs = regmap.model()
        self.fields = engine_model.fields          # ctl field numbers, state_layout order
        self.en_bit = CTRL_EN_BIT
        self.en = [0] * regmap.flows             # CTRL.en as of the last latch of the flow

    def _field_of(self, reg):
        return reg.wide[0] if reg.wide else reg.name.lower()

    def write(self, addr: int, value: int):
        from hw.nic.engine_regs import CTRL_RESET, CTRL_START, CTRL_STOP
        hit = self.map.decode(addr)
        if hit is None or hit[1] is None:
            return None
        reg, flow = hit
        if reg.name == "CTRL":
            for bit, op in ((CTRL_START, CtlOp.START), (CTRL_STOP, CtlOp.STOP),
                            (CTRL_RESET, CtlOp.RESET)):
                if value & bit:                  # several bits: the lowest
                    return (flow, op, 0, 0)
            return None
        if self.regs.write(addr, value) is None:  # read-only: ignored
            return None
        if reg.wide and reg.wide[1]:             # a high word: staged only
            return None
        name = self._field_of(reg)
        words = [r for r in self.map.flow_registers if self._field_of(r) == name]
        whole = sum(self.regs.flow_values[flow][r.name] << (32 * i)
                    for i, r in enumerate(words))
        return (flow, CtlOp.WRITE, self.fields.index(name), whole)

    def is_read_op(self, addr: int) -> bool:
        """A read of ``addr`` issues a READ (a window word that is not a wide field's high
        word)."""
        hit = self.map.decode(addr)
        return hit is not None and hit[1] is not None and not (hit[0].wide and hit[0].wide[1])

    def latch(self, flow: int) -> None:
        """The engine took a window READ of ``flow``: its answer is the state now."""
        state = self.engine.state(flow)
        self.en[flow] = state["en"]
        for r in self.map.flow_registers:
            if r.name != "CTRL":
                j = r.wide[1] if r.wide else 0
                self.regs.flow_values[flow][r.name] = \
                    (state["algo"][self._field_of(r)] >> (32 * j)) & r.fields[0].mask

    def read(self, addr: int) -> int:
        hit = self.map.decode(addr)
        if hit is not None and hit[1] is not None and hit[0].name == "CTRL":
            return self.en[hit[1]] << self.en_bit
        return self.regs.read(addr)


# -- the ideal reference ------------------------------------------------------------------------

def ideal_time(t0: int, ival: int, frac_bits: int, k: int) -> Fraction:
    """The exact ideal time of grant k of a flow armed at ``t0`` with interval ``ival`` (UQ.F)."""
    return t0 + k * Fraction(ival, 1 << frac_bits)


def ideal_times(t0: int, ival: int, frac_bits: int, count: int) -> list[int]:
    """The cycles of the first ``count`` grants when none is late: ``ceil(t0 + k x I)``."""
    return [math.ceil(ideal_time(t0, ival, frac_bits, k)) for k in range(count)]


class GrantLog:
    """Collects grants from a :class:`~sim.models.flow_engine.FlowEngineModel` running the
    pacer: call :meth:`take` with each cycle's ``rate`` payload that was taken.  With the
    ``rate`` stream always ready, a grant issued at cycle c is on ``rate`` at c + 4 + L, L the
    datapath's latency (c + 5 in the one-cycle build; c + 6 at L = 2, a byte-mode build or
    ``update_cycles`` 2; c + 7 at L = 3: the model takes it from the datapath's ``latency``,
    ``pipe_depth(L) + 1``), so its cycle is the record's cycle - 4 - L."""

    def __init__(self, engine_model):
        from hw.nic.flow_engine import pipe_depth
        self.LATENCY = pipe_depth(engine_model.latency) + 1
        lay = engine_model.lay["rate"]
        self.fmask = (1 << lay["flow"].width) - 1
        self.shift = lay["rate"].offset
        self.times: dict[int, list[int]] = {}

    def take(self, cycle: int, payload: int) -> None:
        flow, value = payload & self.fmask, payload >> self.shift
        if value:                      # 0: START/RESET, not a grant
            self.times.setdefault(flow, []).append(cycle - self.LATENCY)


# -- measurements (python -m sim.models.pacer) ---------------------------------------------------

def _engine(cfg):
    from .flow_engine import FlowEngineModel
    m = FlowEngineModel(cfg.engine, PacerDatapathModel(PacerDatapath(cfg)))
    m.log_issue = False
    return m


def _prefill(m, cfg, intervals, starts):
    """START each flow, write its interval, a backlog of 2**backlog_width - 1 packets and its
    first send time (``starts``), then arm it: ctl events only, no TX (always backlogged)."""
    from hw.nic.flow_datapath import CtlOp
    F = cfg.frac_bits
    ctl = []
    for f, (iv, t0) in enumerate(zip(intervals, starts, strict=True)):
        ctl += [(f, CtlOp.START, 0, 0), (f, CtlOp.WRITE, 4, iv),
                (f, CtlOp.WRITE, 1, (1 << cfg.backlog_width) - 1),
                (f, CtlOp.WRITE, 3, (t0 << F) | ((1 << F) - 1)), (f, CtlOp.WRITE, 2, 1)]
    return ctl


def measure_load(n_flows=1024, line_bps=100e9, packet_bytes=1024, cycles=400_000, seed=1,
                 spread=1.0):
    """The pacing error at a realistic load: ``n_flows`` flows, always backlogged, at rates
    drawn log-normally (sigma ``spread``) and scaled to sum to ``line_bps`` (at least 1 Mb/s
    each) with ``packet_bytes`` packets, each from a random phase of its interval; the engine's
    default sizing (W = 26, 65536-slot wheel, 32768-cycle horizon).  Returns a dict of figures; the
    error of a grant is its cycle minus its exact ideal time t0 + k I (Fraction)."""
    import random
    from collections import Counter

    from hw.nic.flow_engine_config import FlowEngineConfig
    from hw.nic.pacer_config import PacerConfig

    rng = random.Random(seed)
    cfg = PacerConfig(engine=FlowEngineConfig(n_flows=n_flows))
    weights = [rng.lognormvariate(0, spread) for _ in range(n_flows)]
    total = sum(weights)
    # (a floor of 1 Mb/s: an interval must stay below 2**24 cycles)
    rates = [max(1e6, line_bps * w / total) for w in weights]
    intervals = [cfg.interval_for(r, packet_bytes) for r in rates]
    F = cfg.frac_bits
    # the first send times come after the set-up: 5 ctl events per flow, and each WRITE is
    # re-evaluated by a pop of its own, which goes before the ctl stream
    begin = 16 * n_flows + 1000
    starts = [begin + rng.randrange(max(1, iv >> F)) for iv in intervals]
    m = _engine(cfg)
    log = GrantLog(m)
    ctl = _prefill(m, cfg, intervals, starts)
    for c in range(cycles):
        o = m.step(ctl=ctl[0] if ctl else None)
        if ctl and o.ctl_ready:
            ctl.pop(0)
            assert ctl or c < begin - 20, "set-up not finished before the first send time"
        if o.rate is not None:
            log.take(c, o.rate)
    # the counters count a grant at its write-back (issue + 4), the log at its output (+ 5):
    # one more cycle of outputs makes them cover the same grants
    counters = dict(m.counters)
    o = m.step()
    if o.rate is not None:
        log.take(cycles, o.rate)
    rounded = Counter()      # cycle - ceil(ideal): the engine's lateness
    exact = []               # cycle - ideal (rational), as floats
    for f, times in log.times.items():
        for k, c in enumerate(times):
            ideal = ideal_time(starts[f], intervals[f], F, k)
            rounded[c - math.ceil(ideal)] += 1
            exact.append(float(c - ideal))
    exact.sort()
    n = len(exact)
    assert n == counters["expiries"]
    assert sum(k * v for k, v in rounded.items()) == counters["late_sum"]

    def pct(p):
        return exact[min(n - 1, int(p * n))]
    line_pps = line_bps / (8 * packet_bytes)
    return {"flows": n_flows, "cycles": cycles, "grants": n,
            "grants_per_clock": n / (cycles - begin),
            "offered_pps": line_pps, "grant_capacity_pps": cfg.engine.clk_hz,
            "engine_share": line_pps / cfg.engine.clk_hz,
            "late": dict(sorted(rounded.items())),
            "late_max": counters["late_max"],
            "on_time": rounded[0] / n,
            "error_mean": sum(exact) / n, "error_p50": pct(0.5), "error_p99": pct(0.99),
            "error_p999": pct(0.999), "error_max": exact[-1],
            "timer_pops": counters["ev_timer"], "stale_pops": counters["stale_pops"],
            "wheel_max_occupancy": m.wheel.out.max_occupancy,
            "max_interval_cycles": max(intervals) / (1 << F),
            "min_interval_cycles": min(intervals) / (1 << F)}


def measure_saturation(n_flows=16, interval=8, grants=50_000):
    """Grants per clock when the flows ask for more than one per clock (``n_flows`` flows at
    ``interval`` cycles, always backlogged, all due together at first)."""
    from hw.nic.flow_engine_config import FlowEngineConfig
    from hw.nic.pacer_config import PacerConfig

    cfg = PacerConfig(engine=FlowEngineConfig(n_flows=n_flows, time_width=18,
                                              wheel_horizon=4096, wheel_slots=8192),
                      ival_int_bits=16)
    m = _engine(cfg)
    log = GrantLog(m)
    begin = 6 * n_flows + 100
    ctl = _prefill(m, cfg, [interval << cfg.frac_bits] * n_flows, [begin] * n_flows)
    got = 0
    c = 0
    while got < grants:
        o = m.step(ctl=ctl[0] if ctl else None)
        if ctl and o.ctl_ready:
            ctl.pop(0)
        if o.rate is not None:
            log.take(c, o.rate)
            got += 1
        c += 1
    per = [len(log.times[f]) for f in range(n_flows)]
    return {"grants": got, "cycles": c - begin - 4, "grants_per_clock": got / (c - begin - 4),
            "per_flow_min": min(per), "per_flow_max": max(per)}


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m sim.models.pacer",
                                 description="pacer figures (cycle-accurate model)")
    ap.add_argument("--flows", type=int, default=1024)
    ap.add_argument("--cycles", type=int, default=400_000)
    ap.add_argument("--spread", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    s = measure_saturation()
    print(f"saturation: 16 flows at 8 cycles: {s['grants']} grants in {s['cycles']} cycles = "
          f"{s['grants_per_clock']:.4f} grants per clock, per flow {s['per_flow_min']} ... "
          f"{s['per_flow_max']}")
    r = measure_load(n_flows=a.flows, cycles=a.cycles, seed=a.seed, spread=a.spread)
    print(f"load: {r['flows']} flows, 100 Gb/s of 1 KB packets = {r['offered_pps'] / 1e6:.2f} M "
          f"packets/s against {r['grant_capacity_pps'] / 1e6:.2f} M grants/s "
          f"({r['engine_share']:.2%} of the grant slots); intervals "
          f"{r['min_interval_cycles']:.1f} ... {r['max_interval_cycles']:.0f} cycles")
    print(f"  {r['grants']} grants in {r['cycles']} cycles ({r['grants_per_clock']:.4f} per "
          f"clock), {r['timer_pops']} timer pops, wheel max occupancy "
          f"{r['wheel_max_occupancy']}")
    print(f"  lateness (cycles after ceil(ideal)): on time {r['on_time']:.3%}, max "
          f"{r['late_max']}, histogram {r['late']}")
    print(f"  error vs the exact ideal time (cycles): mean {r['error_mean']:.3f}, p50 "
          f"{r['error_p50']:.3f}, p99 {r['error_p99']:.3f}, p99.9 {r['error_p999']:.3f}, max "
          f"{r['error_max']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
