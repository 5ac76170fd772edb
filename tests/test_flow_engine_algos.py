"""The multi-flow engine (hw/nic/flow_engine.py) with the real datapaths, DCQCN and QCN, in
Amaranth's simulator against the cycle-accurate model (sim/models/flow_engine.py) with the
matching model datapath: every output, every cycle (the harness of tests/test_flow_engine.py).

Small engines (16 flows, W = 10 so the time wraps every 1024 cycles, a 128-cycle wheel
horizon, timers of tens to hundreds of cycles) so that timers fire often, deadlines get parked
and time wraps many times: random TX/CN with hot flows (the same flow for long stretches),
control operations (READ/WRITE of any field, START/STOP/RESET) in flight with the flow's
updates, register writes (whole DCQCN profiles written at run time), random back-pressure on
``rate`` and ``rd``."""

from __future__ import annotations

import os
import random

import pytest

from hw.nic.dcqcn_config import DcqcnRpConfig
from hw.nic.dcqcn_engine import DcqcnDatapath
from hw.nic.flow_datapath import CtlOp
from hw.nic.flow_engine import COUNTERS, LATE_BUCKETS, WHEEL_STATS, pipe_depth
from hw.nic.flow_engine_config import COUNTER_BASE, FlowEngineConfig, min_out_fifo_depth
from hw.nic.qcn_engine import QCN_PIPE_LATENCY, QcnDatapath
from hw.nic.qcn_rp_config import QcnRpConfig
from sim.models.dcqcn import DcqcnDatapathModel
from sim.models.qcn import QcnDatapathModel
from tests.test_flow_engine import Harness

SEED = int(os.environ.get("CC_SEED", "1"))
#: events per random phase: 400 by default (the suite's budget), 1400 with CC_LONG=1;
#: CC_ALGO_EVENTS overrides
_LONG = os.environ.get("CC_LONG", "") not in ("", "0")
EVENTS = int(os.environ.get("CC_ALGO_EVENTS", "1400" if _LONG else "400"))
W = 10
N = 16


def engine_config(latency: int = 1, **kw) -> FlowEngineConfig:
    """The small engine; for a pipelined datapath (latency L) the output FIFOs cover its
    pipeline (L + 4) and the wheel holds 4 entries per flow, so that the input hold margin
    (L + 7) leaves room for 16 flows' timers."""
    base = dict(n_flows=N, time_width=W, wheel_horizon=128, wheel_slots=256,
                out_fifo_depth=min_out_fifo_depth(1))
    if latency > 1:
        base.update(out_fifo_depth=min_out_fifo_depth(latency), wheel_entries_per_flow=4)
    base.update(kw)
    return FlowEngineConfig(**base)


def dcqcn_small(profile: str) -> DcqcnRpConfig:
    """A profile with short timers (T 250, K 125, P 50 cycles at 156.25 MHz, 8-bit timers) and
    a 30 KB byte counter, so that every timer and the byte counter fire within a short run."""
    base = DcqcnRpConfig.profile(profile)
    return base.replace(rpg_time_reset=1.6, dce_tcp_rtt=0.8, rate_reduce_monitor_period=0.32,
                        rpg_byte_reset=min(base.rpg_byte_reset, 30_000), timer_width=8)


DCQCN_BUILD = dcqcn_small("connectx")        # the build: ConnectX registers at reset
QCN_BUILD = QcnRpConfig(jitter=0.15, time_reset_us=2, byte_reset=20_000, clk_hz=100_000_000)


def profile_writes(dp, profile: str) -> list[tuple[int, int]]:
    """csr_w writes (addr, value) that load ``profile``'s registers into the build."""
    r = dcqcn_small(profile).registers()
    return [(i, getattr(r, name)) for i, (name, _, _) in enumerate(dp.regs)]


def random_phase(h: Harness, rng: random.Random, n: int, *, p_cn: float, write_fields,
                 hot_p: float = 0.5):
    """Queue ``n`` TX events (hot flow ``hot_p`` of the time, changed every 150 events), CNs,
    and control operations on the same flows."""
    dp = h.dp
    cnw = dp.cn_layout.size
    vw = h.lay["ctl"]["value"].width
    fields = h.lay["fields"]
    hot = rng.randrange(N)
    for i in range(n):
        if i % 150 == 0:
            hot = rng.randrange(N)
        f = hot if rng.random() < hot_p else rng.randrange(N)
        h.queues["tx"].append((f, rng.choice([64, 1500, 9000, rng.randint(1, 16_000)])))
        if rng.random() < p_cn:
            h.queues["cn"].append((f, rng.getrandbits(cnw)))
        if rng.random() < 0.04:
            op = rng.choice([CtlOp.READ, CtlOp.READ, CtlOp.WRITE, CtlOp.WRITE, CtlOp.STOP,
                             CtlOp.START, CtlOp.RESET])
            field, value = 0, 0
            if op == CtlOp.WRITE:
                name = rng.choice(write_fields)
                field = fields.index(name)
                width = dp.state_layout[name].width
                value = rng.getrandbits(min(width, vw))
                if name.endswith("_dl"):        # a deadline near now (either side)
                    value = rng.getrandbits(W)
            h.queues["ctl"].append((f, op, field, value))
            if op == CtlOp.STOP:
                h.queues["ctl"].append((f, CtlOp.START, 0, 0))


async def read_back(h: Harness, ctx):
    """READ every flow and every counter (each compared with the model on the way)."""
    for f in range(N):
        h.queues["ctl"].append((f, CtlOp.READ, 0, 0))
    await h.drain(ctx)
    names = COUNTERS + [f"late_h{i}" for i in range(len(LATE_BUCKETS))] + WHEEL_STATS
    for i, _ in enumerate(names):
        h.raddr = COUNTER_BASE + i
        await h.run(ctx, 2)
    h.raddr = 0


def stress(h: Harness, ctx_phases):
    """Simulate ``ctx_phases(ctx)`` after START of every flow."""
    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all()
        await h.drain(ctx)
        await ctx_phases(ctx)
        await read_back(h, ctx)
    h.simulate(body)
    c = h.model.counters
    print(f"seed {SEED}: {h.cycle} cycles, {h.model.issued} events, counters {c}")
    assert getattr(h.model.wheel.out, "overflow_count", 0) == 0
    return c


# -- DCQCN -----------------------------------------------------------------------------------

DCQCN_WRITABLE = ["rc", "rt", "alpha", "t_stage", "b_stage", "mode", "bc", "active",
                  "alpha_flag", "dec_flag", "a_on", "a_dl", "t_on", "t_dl", "d_on", "d_dl"]


LONG = os.environ.get("CC_LONG", "") not in ("", "0")


@pytest.mark.parametrize("pipelined", [False, True])
@pytest.mark.parametrize("profiles", [("connectx", "paper"), ("ns3-rdma", "hpcc-mlx")])
def test_dcqcn_engine_profiles(profiles, pipelined):
    """DCQCN on the engine: the ConnectX reset registers, then each profile of ``profiles``
    written through csr_w at run time (with traffic queued behind the writes), random events
    with hot flows, WRITEs of every state field (deadlines included) in flight, timers firing,
    back-pressure: every output, every cycle, equal to the model's; the one-cycle and the
    pipelined datapath (12 modify cycles).  The pipelined build with the ns3-rdma and
    hpcc-mlx profiles runs with CC_LONG=1 only (47 s of CPU; the suite's time budget): by
    default those two profiles run on the one-cycle build, and the pipelined build on the
    other two (the datapath's arithmetic is the same function for every profile)."""
    if pipelined and profiles[0] == "ns3-rdma" and not LONG:
        pytest.skip("CC_LONG=1: the pipelined build with ns3-rdma and hpcc-mlx")
    dp = DcqcnDatapath(DCQCN_BUILD, W, pipelined=pipelined)
    rng = random.Random(f"{SEED}-{profiles}")
    h = Harness(engine_config(dp.latency), dp, seed=SEED, model_dp=DcqcnDatapathModel)
    h.p_valid = {"tx": 0.75, "cn": 0.5, "ctl": 0.5, "csr_w": 0.5}
    h.p_rate_ready, h.p_rd_ready = 0.7, 0.6

    async def phases(ctx):
        if profiles[0] == "connectx":      # the reset values, no write
            random_phase(h, rng, EVENTS, p_cn=0.08, write_fields=DCQCN_WRITABLE)
            await h.drain(ctx)
            profiles_run = profiles[1:]
        else:
            profiles_run = profiles
        for p in profiles_run:
            h.queues["csr_w"] += profile_writes(dp, p)
            random_phase(h, rng, EVENTS, p_cn=0.08, write_fields=DCQCN_WRITABLE)
            while h.queues["csr_w"]:
                await h.run(ctx, 1)
            await h.run(ctx, 1)
            assert h.model.regs == dict(profile_writes_named(dp, p)), "profile not loaded"
            await h.drain(ctx)
            await h.run(ctx, 300)               # timers only
    c = stress(h, phases)
    assert c["ev_cn"] > 50 and c["expiries"] > 100 and c["ev_ctl"] > 30


def profile_writes_named(dp, profile):
    r = dcqcn_small(profile).registers()
    return [(name, getattr(r, name)) for name, _, _ in dp.regs]


@pytest.mark.parametrize("pipelined", [False, True])
def test_dcqcn_engine_hot_flow_cnp_storm(pipelined):
    """One flow every cycle: TX and CNPs back to back (cuts, alpha updates and the byte counter
    in consecutive cycles through the forwarding paths), outputs always ready, the paper
    profile (a cut on every CNP) then ConnectX; expiries on time (lateness 0) with the
    one-cycle datapath, within L - 1 with the pipelined one (its events 12 cycles apart)."""
    dp = DcqcnDatapath(DCQCN_BUILD, W, pipelined=pipelined)
    h = Harness(engine_config(dp.latency), dp, seed=SEED, model_dp=DcqcnDatapathModel)

    async def phases(ctx):
        for p in ("paper", "connectx"):
            h.queues["csr_w"] += profile_writes(dp, p)
            await h.drain(ctx)
            # 150 events per profile on the 12-cycle datapath (the suite's time; 57 expiries)
            for i in range(150 if pipelined else 250):
                if i % 5 == 2:
                    h.queues["cn"].append((9, 1))
                else:
                    h.queues["tx"].append((9, 1500 + 37 * i))
            await h.drain(ctx)
            await h.run(ctx, 600)
    c = stress(h, phases)
    assert c["late_max"] <= dp.latency - 1 and c["expiries"] > 10


# -- QCN ---------------------------------------------------------------------------------------

QCN_WRITABLE = ["cr", "tr", "bc", "b_stage", "t_stage", "active", "fresh", "t_on", "t_dl"]


@pytest.mark.parametrize("latency,timer", [(1, "wheel"), (QCN_PIPE_LATENCY, "wheel"),
                                           (QCN_PIPE_LATENCY, "calendar")])
def test_qcn_engine_random(latency, timer):
    """QCN on the engine (jittered reloads: ONE engine-wide LFSR drawn in the order the engine
    applies updates): random events with hot flows, CNMs with random Fb, WRITEs of every field
    in flight, register writes, back-pressure: every output, every cycle; the one-cycle and
    the pipelined datapath, and the pipelined one on the calendar (whose model stops at an id
    inserted twice: the engine's generations must stay distinct under this traffic)."""
    dp = QcnDatapath(QCN_BUILD, W, latency=latency)
    rng = random.Random(f"{SEED}-qcn")
    kw = {} if timer == "wheel" else dict(timer="calendar", wheel_horizon=160)
    h = Harness(engine_config(latency, **kw), dp, seed=SEED, model_dp=QcnDatapathModel)
    h.p_valid = {"tx": 0.75, "cn": 0.5, "ctl": 0.5, "csr_w": 0.5}
    h.p_rate_ready, h.p_rd_ready = 0.7, 0.6

    async def phases(ctx):
        random_phase(h, rng, EVENTS, p_cn=0.05, write_fields=QCN_WRITABLE)
        await h.drain(ctx)
        # knobs at run time: shorter timers, a lower threshold, no TR guard
        names = [name for name, _, _ in dp.regs]
        for name, value in (("time_lo", 90), ("time_lo_half", 40), ("threshold", 2),
                            ("tr_guard", 0), ("gd_shift", 8)):
            h.queues["csr_w"].append((names.index(name), value))
        random_phase(h, rng, EVENTS, p_cn=0.05, write_fields=QCN_WRITABLE)
        await h.drain(ctx)
        await h.run(ctx, 300)
    c = stress(h, phases)
    assert c["ev_cn"] > 30 and c["expiries"] > 100


#: the burst's figures by timer service, derived by hand: the wheel spreads the 16 entries of
#: one deadline over 16 slots (0, 1, ..., 15 late: sum 120, 8 in 8..15).  The calendar (horizon
#: 160) parks the entries of flows 0 ... 6, whose WRITEs come first (their re-evaluations
#: insert the deadline, 240, before 80: more than the horizon ahead): they pop again at
#: 221 + 2 f, 19 ... 7 cycles before the deadline, and their re-inserts reach the calendar
#: 5 + 10 cycles later (write-back, insert latency): 236 + 2 f, in the deadline's slot for
#: f <= 2, past it for flows 3 ... 6 (placed at 242, 244, 246, 248).  The deadline's slot then
#: holds 12 entries, popped one per 3 cycles (0, 3, ..., 33 late), and the four placed later
#: pop after them, 34 ... 37 late: sum 198 + 142 = 340, 9, 12 and 15 in 8..15.  The reloads
#: (deadline + K, inserted well before) all go to one slot: the second burst is 0, 3, ..., 45
#: late (sum 360).
BURST = {"wheel": {"expiries": 16, "late_max": 15, "late_sum": 120, "late_h0": 1, "late_h4": 8},
         "calendar": {"expiries": 16, "late_max": 37, "late_sum": 340, "late_h0": 1,
                      "late_h4": 3}}
#: the second burst's lateness sum
BURST2 = {"wheel": 120, "calendar": 360}


@pytest.mark.parametrize("timer", ["wheel", "calendar"])
def test_dcqcn_engine_timer_burst(timer):
    """Every flow's alpha timer written to the same deadline (WRITEs of ``a_dl`` then
    ``a_on``): the 16 expiries are applied 0, 1, ..., 15 cycles late (sum 120) on the wheel,
    0, 3, ..., 33, 34, 35, 36, 37 (sum 340, see ``BURST``) on the calendar; the reloads count from
    the common deadline (no drift: the next burst is due K cycles later, and is as late again
    on the wheel, 0, 3, ..., 45 on the calendar)."""
    dp = DcqcnDatapath(DCQCN_BUILD, W)
    # the calendar: 256 slots, horizon 160 (its rule: 5 words of 32 <= horizon <= slots - 64)
    kw = {} if timer == "wheel" else dict(timer="calendar", wheel_horizon=160)
    h = Harness(engine_config(**kw), dp, seed=SEED, model_dp=DcqcnDatapathModel)
    fields = h.lay["fields"]
    k = dict(profile_writes_named(dp, "connectx"))["k_cycles"]

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all()
        await h.drain(ctx)
        d = (h.cycle + 200) & ((1 << W) - 1)
        for f in range(N):
            h.queues["ctl"] += [(f, CtlOp.WRITE, fields.index("a_dl"), d),
                                (f, CtlOp.WRITE, fields.index("a_on"), 1)]
        await h.drain(ctx)
        await h.run(ctx, 200 + 40)               # the burst, not yet the next one
        got = {name: await h.read_counter(ctx, name)
               for name in ("expiries", "late_max", "late_sum", "late_h0", "late_h4")}
        assert got == BURST[timer], got
        await h.run(ctx, k)                      # the second burst, K after the first
        assert await h.read_counter(ctx, "expiries") == 32
        assert await h.read_counter(ctx, "late_sum") == BURST[timer]["late_sum"] + BURST2[timer]
    h.simulate(body)


def test_dcqcn_engine_write_storm():
    """Back-to-back WRITEs to one flow (each re-evaluates its timers: a forced wheel insert, up
    to MAX_ENTRIES entries per flow, then no more), on every flow in turn with TX between, and
    the wheel nearly full (inputs held by the occupancy margin): every output every cycle."""
    dp = DcqcnDatapath(DCQCN_BUILD, W)
    rng = random.Random(f"{SEED}-storm")
    h = Harness(engine_config(), dp, seed=SEED, model_dp=DcqcnDatapathModel)
    h.p_rate_ready, h.p_rd_ready = 0.8, 0.8
    fields = h.lay["fields"]

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all()
        for f in range(N):
            h.queues["cn"].append((f, 1))          # every timer running
        await h.drain(ctx)
        for _ in range(3):
            for f in rng.sample(range(N), N):
                for _ in range(6):
                    name = rng.choice(["a_dl", "t_dl", "d_dl", "rc", "alpha", "a_on"])
                    value = rng.getrandbits(W) if name.endswith("_dl") else \
                        rng.getrandbits(min(dp.state_layout[name].width, 27))
                    if name == "a_on":
                        value = 1
                    h.queues["ctl"].append((f, CtlOp.WRITE, fields.index(name), value))
                h.queues["ctl"].append((f, CtlOp.READ, 0, 0))
                h.queues["tx"] += [(f, 1500), (rng.randrange(N), 9000)]
            await h.drain(ctx)
            await h.run(ctx, 150)
    h.simulate(body)
    c = h.model.counters
    assert h.model.wheel.out.overflow_count == 0 and c["stale_pops"] > 50, c


# -- with lateness 0, every flow's rate trajectory is the single-flow model's ------------------

def _single_flow_trajectories(h: Harness, flows, single, tx_ev, cn_ev, idle, start_cycle,
                              shift=4):
    """Replay each flow's events, at the cycles the engine issued them, through its own
    single-flow counter model (``single()``); return {flow: [(cycle + shift, rate)]} of every change
    of its rate from ``start_cycle`` on: the ``rate`` outputs the engine must have produced."""
    issued = {}
    for k, make in (("tx", tx_ev), ("cn", cn_ev)):
        items = h.taken_items[k]
        for cycle, item in zip(h.taken[k], items, strict=True):
            issued.setdefault(item[0], []).append((cycle, make(item[1])))
    out = {}
    for f in flows:
        ev = dict(issued.get(f, []))
        model = single()
        rate = model.state.rc if hasattr(model.state, "rc") else model.state.cr
        got = []
        for cycle in range(start_cycle, h.cycle):
            s = model.step(ev[cycle]) if cycle in ev else idle(model)
            r = s.rc if hasattr(s, "rc") else s.cr
            if r != rate:
                got.append((cycle + shift, r))
                rate = r
        out[f] = got
    return out


# (one-cycle datapaths: a pipelined one delays a hot flow's pops by up to L - 1 cycles, so its
# flows are rarely all on time; its exactness is the RTL = model runs above)
@pytest.mark.parametrize("algo,latency", [("dcqcn", 1), ("qcn", 1)])
def test_lateness_zero_equals_single_flow_model(algo, latency):
    """Six flows, each hot in turn (the same flow every cycle for 100 events, then all six
    mixed), outputs always ready, no register writes: each flow's stream of ``rate`` outputs is
    exactly its single-flow counter model's (DcqcnRpModel / QcnRpModel, jitter 0) driven by the
    same events at the cycles the engine issued them, shifted by the engine's latency
    (``pipe_depth`` + 1 = 5) - for every flow none of whose expiries was late (two flows'
    deadlines of different periods can fall in one cycle, and two timers of one flow less than
    ``reeval`` = 8 cycles apart: those are late, and their flows are left out; at least two
    flows are on time, so that the comparison is never vacuous)."""
    from sim.models.dcqcn import DcqcnCnp, DcqcnRpModel, DcqcnTx
    from sim.models.qcn import QcnCnm, QcnRpModel, QcnTx
    if algo == "dcqcn":
        cfg = DCQCN_BUILD
        dp, dpm = DcqcnDatapath(cfg, W), DcqcnDatapathModel
        assert latency == 1
        single, tx_ev, cn_ev = (lambda: DcqcnRpModel(cfg)), DcqcnTx, (lambda _: DcqcnCnp())
        idle = lambda m: m.step(None)      # noqa: E731
    else:
        cfg = QCN_BUILD.replace(jitter=0.0)
        dp, dpm = QcnDatapath(cfg, W, latency=latency), QcnDatapathModel
        single, tx_ev, cn_ev = (lambda: QcnRpModel(cfg)), QcnTx, QcnCnm
        idle = lambda m: m.idle(1)          # noqa: E731
    rng = random.Random(f"{SEED}-single-{algo}")
    h = Harness(engine_config(latency), dp, seed=SEED, model_dp=dpm)
    h.taken_items = {"tx": [], "cn": []}
    shift = pipe_depth(latency) + 1          # accepted at c, on ``rate`` at c + shift
    flows = [9, 2, 14, 5, 11, 0]

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all(flows)
        await h.drain(ctx)
        h.start = h.cycle
        for hot in flows:
            for i in range(150):
                f = hot if i < 100 else rng.choice(flows)
                if rng.random() < 0.06:
                    h.queues["cn"].append((f, rng.randrange(64) if algo == "qcn" else 1))
                    h.taken_items["cn"].append(h.queues["cn"][-1])
                h.queues["tx"].append((f, rng.choice([64, 1500, 9000])))
                h.taken_items["tx"].append(h.queues["tx"][-1])
            await h.drain(ctx)
            await h.run(ctx, rng.randrange(50, 400))
    lates = []                                   # (expired, late) of every update, in order
    update = h.model.dpm.update

    def recording(*args):
        out = update(*args)
        lates.append(out.late if out.expired else 0)
        return out
    h.model.dpm.update = recording
    h.simulate(body)
    c = h.model.counters
    assert c["expiries"] > 20, c
    # the flow of every update: the non-control events in issue order (every flow is enabled)
    updated = [flow for _, src, flow in h.model.issue_log if src != 3]
    late_of = {f: max((late for g, late in zip(updated, lates, strict=True) if g == f),
                      default=0) for f in flows}
    want = _single_flow_trajectories(h, flows, single, tx_ev, cn_ev, idle, h.start, shift)
    on_time = [f for f in flows if late_of[f] == 0]
    assert len(on_time) >= 2, late_of
    for f in on_time:
        got = [(cycle, rate) for cycle, flow, rate in h.rates
               if flow == f and cycle >= h.start + shift]
        assert got == want[f], (algo, f, got[:5], want[f][:5])
        assert len(got) > 10
