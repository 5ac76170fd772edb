"""Run-time registers of the blocks moved onto the register layer (hw/lib/csr.py): a value
written through ``csr_w`` changes the behaviour as an independent, hand-derived expectation says,
and the RTL equals the golden model on every cycle while registers are written between events
(the model applies a write after the cycle's step, as the RTL applies it at the edge that takes
it).  ``CC_SEED`` overrides the seeds, ``CC_LONG=1`` makes each random run 10**5 cycles;
the read-back of every register (after reset and after
writes) is in tests/test_block_registers.py."""

from __future__ import annotations

import math
import os
import random
from fractions import Fraction

import pytest

from tests.streams import csr_write, run_testbenches, stream_get, stream_put

SEED = int(os.environ.get("CC_SEED", 11))
#: CC_LONG=1: the random runs with writes take 10**5 cycles / events each
LONG = os.environ.get("CC_LONG", "0") == "1"


def _length(short: int) -> int:
    return 100_000 if LONG else short


def _seed(tag: str) -> random.Random:
    s = SEED + sum(map(ord, tag))
    print(f"seed {s} (CC_SEED={SEED} reproduces)")
    return random.Random(s)


def _reset_values(regmap) -> dict[str, int]:
    return {r.name: r.reset for r in regmap.registers}


# ---- DCQCN notification point -------------------------------------------------------------------

def _np_run(cfg, cycles, rng, *, ce_flow=None, writes=None, p_write=0.0, n_max=40):
    """Every cycle: RTL vs model (offer), an event (``ce_flow(cycle)`` or random) and maybe a
    write of N; returns the model's sent list."""
    from hw.nic.dcqcn_np import DcqcnNp
    from sim.models.dcqcn_np import NpModel
    dut, model = DcqcnNp(cfg), NpModel(cfg)
    addr = cfg.register_map().addr("MIN_TIME_BETWEEN_CNPS")
    writes = dict(writes or {})

    async def bench(ctx):
        for cycle in range(cycles):
            ev = ce_flow(cycle) if ce_flow else (rng.randrange(cfg.flows + 1)
                                                 if rng.random() < 0.4 else None)
            ready = True if ce_flow else rng.random() < 0.6
            w = writes.get(cycle)
            if w is None and rng.random() < p_write:
                # half the writes at the edges: 0 and 1 (a send's reload is 0, the window
                # ends at once), 2, and the largest
                w = (rng.choice((0, 1, 2, n_max - 1)) if rng.random() < 0.5
                     else rng.randrange(n_max))
            ctx.set(dut.event.valid, ev is not None)
            ctx.set(dut.event.payload.flow, ev or 0)
            ctx.set(dut.event.payload.ce, 1)
            ctx.set(dut.cnp.ready, ready)
            ctx.set(dut.csr_w.valid, w is not None)
            ctx.set(dut.csr_w.payload, {"addr": addr, "data": w or 0})
            assert ctx.get(dut.csr_w.ready) == 1
            offer = model.offer()
            assert ctx.get(dut.cnp.valid) == (offer is not None), cycle
            if offer is not None:
                assert ctx.get(dut.cnp.payload.flow) == offer, cycle
            await ctx.tick()
            model.step(ev, ready)
            if w is not None:
                model.write(addr, w)
        ctx.set(dut.csr_raddr, addr)
        await ctx.tick()
        assert ctx.get(dut.csr_rdata) == model.read(addr)

    run_testbenches(dut, bench)
    return model.sent


@pytest.mark.parametrize("rule", ["paper", "periodic"])
def test_np_written_n_sets_the_cnp_spacing(rule):
    """A flow marked on every cycle gets one CNP every N cycles (both rules); N written at run
    time: 10 from the start, then 25 (the running window ends first; periodic: the running
    period, the reset one of 625 cycles for the first write)."""
    from hw.nic.dcqcn_np_config import DcqcnNpConfig
    cfg = DcqcnNpConfig(flows=2, rule=rule, min_time_between_cnps=4, timer_width=12)
    assert cfg.register_map()["MIN_TIME_BETWEEN_CNPS"].reset == 625     # 4 us at 156.25 MHz
    second = 300 if rule == "paper" else 900
    sent = _np_run(cfg, second + 400, _seed("np" + rule), ce_flow=lambda c: 0,
                   writes={0: 10, second: 25})
    times = [t for t, f in sent]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    early = [g for t, g in zip(times[1:], gaps, strict=False) if t < second]
    late = [g for t, g in zip(times[1:], gaps, strict=False) if t > second + 25 + 10]
    if rule == "periodic":          # CNPs leave at the end of each period: 624, 634, ...
        assert times[0] == 625
    assert early and set(early) == {10}, gaps
    assert late and set(late) == {25}, gaps


@pytest.mark.parametrize("rule", ["paper", "periodic"])
def test_np_rtl_matches_model_with_writes(rule):
    from hw.nic.dcqcn_np_config import DcqcnNpConfig
    cfg = DcqcnNpConfig(flows=5, rule=rule, min_time_between_cnps=0.1, timer_width=6)
    sent = _np_run(cfg, _length(3000), _seed("npw" + rule), p_write=0.01, n_max=64)
    assert len(sent) > 100


# ---- rate limiter -------------------------------------------------------------------------------

def _rl_run(cfg, cycles, rng, *, plan=None, p_write=0.0):
    """RTL vs model every cycle; ``plan(cycle, eligible) -> (send, rate, write)``, or random
    traffic with random register writes.  Returns the cycles each flow sent at."""
    from hw.nic.rate_limiter import RateLimiter
    from sim.models.rate_limiter import RateLimiterModel
    dut, model = RateLimiter(cfg), RateLimiterModel(cfg)
    regmap = cfg.register_map()
    sends: dict[int, list[int]] = {f: [] for f in range(cfg.flows)}

    def random_plan(cycle, el):
        ok = [f for f in range(cfg.flows) if (el >> f) & 1]
        send = (rng.choice(ok), rng.randint(64, 9000)) if ok and rng.random() < 0.7 else None
        rate = (rng.randrange(cfg.flows), rng.getrandbits(cfg.rate_width)) \
            if rng.random() < 0.05 else None
        write = None
        if rng.random() < p_write:
            reg = rng.choice(regmap.registers)
            if reg.name == "MIN_RATE":      # a minimum that still earns credit
                value = rng.randrange(cfg.min_rate, cfg.max_rate // 4)
            elif reg.name == "MAX_RATE":
                value = rng.randrange(cfg.max_rate // 8, cfg.max_rate + 1)
            else:
                value = rng.getrandbits(32)
            write = (reg.addr, value)
        return send, rate, write

    plan = plan or random_plan

    async def bench(ctx):
        for cycle in range(cycles):
            el = ctx.get(dut.eligible)
            assert el == model.eligible(), cycle
            send, rate, write = plan(cycle, el)
            ctx.set(dut.send.valid, send is not None)
            ctx.set(dut.send.payload, {"flow": send[0] if send else 0,
                                       "bytes": send[1] if send else 0})
            ctx.set(dut.rate.valid, rate is not None)
            ctx.set(dut.rate.payload, {"flow": rate[0] if rate else 0,
                                       "rate": rate[1] if rate else 0})
            ctx.set(dut.csr_w.valid, write is not None)
            ctx.set(dut.csr_w.payload, {"addr": write[0] if write else 0,
                                        "data": write[1] if write else 0})
            await ctx.tick()
            model.step(send, rate)
            if write is not None:
                model.write(*write)
            if send is not None:
                sends[send[0]].append(cycle)

    run_testbenches(dut, bench)
    return sends


def test_rate_limiter_written_max_rate_clamps():
    """MAX_RATE written to 10 Gb/s: a 100 Gb/s rate write is clamped to it, so 1000-byte
    packets leave every 1000 x 8 / 10e9 x 156.25e6 = 125 cycles (the pacing rule rounds up to
    at most one more); before the write, at 100 Gb/s, every 12.5 cycles (13 or 14)."""
    from hw.nic.rate_limiter_config import RateLimiterConfig
    cfg = RateLimiterConfig(flows=2)
    regmap = cfg.register_map()
    assert (regmap["MAX_RATE"].reset, regmap["MIN_RATE"].reset, regmap["BURST"].reset) == \
        (100_000 << 10, 1 << 10, 0)

    def plan(cycle, el):
        write = (regmap.addr("MAX_RATE"), 10_000 << 10) if cycle == 400 else None
        rate = (0, 100_000 << 10) if cycle == 401 else None
        send = (0, 1000) if el & 1 else None
        return send, rate, write

    times = _rl_run(cfg, 1600, _seed("rl"), plan=plan)[0]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    before = [g for t, g in zip(times[1:], gaps, strict=False) if t < 400]
    after = [g for t, g in zip(times[1:], gaps, strict=False) if t > 700]
    assert before and set(before) <= {13, 14}, before
    assert after and set(after) <= {125, 126}, after


def test_rate_limiter_rtl_matches_model_with_writes():
    from hw.nic.rate_limiter_config import RateLimiterConfig
    sends = _rl_run(RateLimiterConfig(flows=3, burst_bytes=3000), _length(3000), _seed("rlw"),
                    p_write=0.01)
    assert sum(map(len, sends.values())) > 30


# ---- QCN reaction point -------------------------------------------------------------------------

def _qcn_rp_run(cfg, events, writes):
    """RTL state vs model state after every cycle; ``writes``: cycle -> (addr, data)."""
    from hw.nic.qcn_rp import QcnRp
    from sim.models.qcn import QcnRpCodec, QcnRpModel
    dut, codec, model = QcnRp(cfg), QcnRpCodec(cfg), QcnRpModel(cfg)

    async def bench(ctx):
        for cycle, ev in enumerate(events):
            ctx.set(dut.event.valid, ev is not None)
            if ev is not None:
                ctx.set(dut.event.payload.as_value(), codec.event(ev))
            w = writes.get(cycle)
            ctx.set(dut.csr_w.valid, w is not None)
            ctx.set(dut.csr_w.payload, {"addr": w[0] if w else 0, "data": w[1] if w else 0})
            await ctx.tick()
            if ev is None:
                model.idle(1)
            else:
                model.step(ev)
            if w is not None:
                model.write(*w)
            got = codec.state(ctx.get(dut.state.as_value()))
            assert got == model.state, cycle
    run_testbenches(dut, bench)
    return model


def test_qcn_rp_written_gd_changes_the_cut():
    """GD_SHIFT written from 7 to 8: a CNM with fb 63 at CR = 10 Gb/s cuts 63/256 instead of
    63/128: CR = 10240000 - 10240000 x 63 / 256 = 7720000 (UQ.10 Mb/s)."""
    from hw.nic.qcn_rp_config import QcnRpConfig
    from sim.models.qcn import QcnCnm
    cfg = QcnRpConfig()
    regmap = cfg.register_map()
    assert regmap["GD_SHIFT"].reset == 7 and regmap["LINE_RATE"].reset == 10_240_000
    model = _qcn_rp_run(cfg, [None, QcnCnm(63)], {0: (regmap.addr("GD_SHIFT"), 8)})
    assert model.state.cr == 10_240_000 - 10_240_000 * 63 // 256 == 7_720_000
    default = _qcn_rp_run(cfg, [None, QcnCnm(63)], {})
    assert default.state.cr == 10_240_000 - 10_240_000 * 63 // 128


def test_qcn_rp_rtl_matches_model_with_writes():
    """Random events while the registers switch between two valid register sets."""
    from hw.nic.qcn_rp_config import QcnRpConfig
    from tests.test_qcn_rp import random_events
    cfg = QcnRpConfig(time_reset_us=0.08, byte_reset=5_000, jitter=0.3, ai_rate_mbps=7.5,
                      hai_rate_mbps=120, gd=6, min_dec_fac=0.05)
    other = cfg.replace(time_reset_us=0.06, byte_reset=3_000, jitter=0.1, ai_rate_mbps=20,
                        hai_rate_mbps=60, gd=9, min_dec_fac=0.5, threshold=2, tr_guard=False,
                        min_rate_mbps=50)
    rng = _seed("qcnrp")
    n = _length(3000)
    events = random_events(cfg, n, rng.randrange(1000))
    sets = [cfg.register_map().registers, other.register_map().registers]
    writes = {}
    for cycle in range(0, n, 7):
        reg = rng.choice(sets[(cycle // 500) % 2])
        writes[cycle] = (reg.addr, reg.reset)
    model = _qcn_rp_run(cfg, events, writes)
    assert model.cuts > 20 and model.byte_cycles + model.timer_cycles > 20


# ---- DCQCN reaction point -----------------------------------------------------------------------

def _dcqcn_rp_run(cfg, events, writes):
    from hw.nic.dcqcn_rp import DcqcnRp
    from sim.models.dcqcn import DcqcnRpModel, pack_event, unpack_state
    dut, model = DcqcnRp(cfg), DcqcnRpModel(cfg)

    async def bench(ctx):
        for cycle, ev in enumerate(events):
            ctx.set(dut.event.valid, ev is not None)
            if ev is not None:
                ctx.set(dut.event.payload.as_value(), pack_event(cfg, ev))
            w = writes.get(cycle)
            ctx.set(dut.csr_w.valid, w is not None)
            ctx.set(dut.csr_w.payload, {"addr": w[0] if w else 0, "data": w[1] if w else 0})
            await ctx.tick()
            model.step(ev)
            if w is not None:
                model.write(*w)
            got = unpack_state(cfg, ctx.get(dut.state.as_value()))
            assert got == model.state, cycle
    run_testbenches(dut, bench)
    return model


def _writes_at(regmap, values, start: int = 0) -> dict:
    """``{cycle: (addr, value)}``: ``values`` (register name -> value, or its pairs, in order)
    written one per cycle from cycle ``start``."""
    return {start + i: (regmap.addr(name), v) for i, (name, v) in enumerate(dict(values).items())}


def test_dcqcn_rp_written_first_rate():
    """FIRST_RATE (rate_to_set_on_first_cnp) written to 1000 Mb/s: the first CNP sets
    Rc = 1000 x 2**10; with the reset value 0 it is a normal cut (ConnectX: Rc (1 - alpha/2)
    with alpha = 1023/1024 at reset)."""
    from hw.nic.dcqcn_config import DcqcnRpConfig
    from sim.models.dcqcn import DcqcnCnp
    cfg = DcqcnRpConfig.profile("connectx")
    regmap = cfg.register_map()
    assert regmap["FIRST_RATE"].reset == 0
    model = _dcqcn_rp_run(cfg, [None, DcqcnCnp(), None],
                          {0: (regmap.addr("FIRST_RATE"), 1000 << 10)})
    assert model.state.rc == 1000 << 10
    normal = _dcqcn_rp_run(cfg, [None, DcqcnCnp(), None], {})
    line = 100_000 << 10
    assert abs(normal.state.rc - line * (1 - 1023 / 2048)) < line * 1e-4


def test_dcqcn_rp_periodic_cut_with_the_cnp_alpha():
    """A setting no profile has: alpha updated on CNPs (ALPHA_MODE 0) and taken by the cut
    after that update (ALPHA_BEFORE_CUT 1), with the periodic-check cut (CUT_MODE 1, P 5
    cycles, G 100/1024): the CNP arms the check, the cut comes 5 cycles later without a CNP
    and uses (1 - g) alpha + g = 16760832 - 1636800 + 1638400 = 16762432 (UQ1.24), so Rc ~
    line (1 - alpha / 2).  (The single-flow build drove that alpha only in CNP and alpha-timer
    cycles: the cut read 0 and cut nothing.)"""
    from hw.nic.dcqcn_config import DcqcnRpConfig
    from sim.models.dcqcn import DcqcnCnp
    cfg = DcqcnRpConfig.profile("connectx")
    rm = cfg.register_map()
    writes = _writes_at(rm,
        (("ALPHA_MODE", 0), ("ALPHA_BEFORE_CUT", 1), ("CUT_MODE", 1), ("P_CYCLES", 5),
         ("G", 100)))
    model = _dcqcn_rp_run(cfg, [None] * 6 + [DcqcnCnp()] + [None] * 40, writes)
    line, alpha = 100_000 << 10, 16_762_432
    assert model.cuts == 1 and model.state.alpha == alpha
    assert abs(model.state.rc - line * (1 - alpha / 2**25)) < line * 1e-4


def test_dcqcn_rp_hyper_increase_at_the_top_stage():
    """F written 0 with the ns3-rdma step (HAI_STEP 1: (min(stages) - F + 1) R_HAI): at the
    top stage 255 the factor would be 256, and it is clamped to 255 (it must not wrap to 0 in
    8 bits).  T 2 cycles, no byte counter, R_HAI 1 (UQ.10), the maximum rate written to the
    register's top (so that Rt, 100 Gb/s from reset, stays below it), one CNP to start: the stage
    climbs to 255 in 510 cycles; from then on every expiry adds 255 to Rt (hand: the model's
    rule; checked on the RTL every cycle)."""
    from hw.nic.dcqcn_config import DcqcnRpConfig
    from sim.models.dcqcn import DcqcnCnp
    cfg = DcqcnRpConfig.profile("connectx")
    rm = cfg.register_map()
    writes = _writes_at(rm,
        (("THRESHOLD", 0), ("HAI_STEP", 1), ("INCREASE_RULE", 0), ("T_CYCLES", 2),
         ("BYTE_RESET", 0), ("HAI_RATE", 1), ("CUT_MODE", 0), ("MAX_RATE", (1 << 27) - 1)))
    model = _dcqcn_rp_run(cfg, [None] * 8 + [DcqcnCnp()] + [None] * 600, writes)
    assert model.state.t_stage == 255 and model.state.mode == 2    # HAI
    rt = model.state.rt
    model.step(None)
    model.step(None)                     # one expiry of T = 2
    assert model.state.rt == rt + 255


def test_dcqcn_rp_ns3_select_with_both_stages_at_f():
    """The ns3-rdma increase rule (INCREASE_RULE 1) with F = 2: a CNP, then two byte cycles
    (B 1000, TX 1000 each): ByteStage 2 = F, from fast recovery into additive increase (the
    timer stage is 0 < F).  Two timer expiries (T 50): after the first, TimeStage 1 < F: still
    AI; after the second both stages are at F, neither below it: hyper increase (by hand;
    at a stage equal to F the select must read "not below")."""
    from hw.nic.dcqcn_config import DcqcnRpConfig
    from sim.models.dcqcn import DcqcnCnp, DcqcnTx
    cfg = DcqcnRpConfig.profile("connectx")
    rm = cfg.register_map()
    writes = _writes_at(rm,
        (("INCREASE_RULE", 1), ("THRESHOLD", 2), ("T_CYCLES", 50), ("BYTE_RESET", 1000),
         ("CUT_MODE", 0)))
    head = [None] * 8 + [DcqcnCnp(), None, DcqcnTx(1000), None, DcqcnTx(1000)]
    model = _dcqcn_rp_run(cfg, head + [None] * 40, writes)
    assert (model.state.b_stage, model.state.t_stage, model.state.mode) == (2, 0, 1)    # AI
    model = _dcqcn_rp_run(cfg, head + [None] * 60, writes)
    assert (model.state.b_stage, model.state.t_stage, model.state.mode) == (2, 1, 1)    # AI
    model = _dcqcn_rp_run(cfg, head + [None] * 110, writes)
    assert (model.state.b_stage, model.state.t_stage, model.state.mode) == (2, 2, 2)    # HAI


def test_dcqcn_rp_hyper_product_at_its_full_width():
    """The hyper-increase product R_HAI x factor at its widest: the stages climb to 255 with F
    255 (fast recovery, then AI with R_AI 0: Rt unchanged), then F is written 0, so the next
    expiry is a hyper step with the factor 255 at once (LINEAR0: 255 - 0).  R_HAI =
    67372037 = ceil(2**34 / 255): the product 17179869435 needs 35 bits (2**34 + 251), so Rt
    jumps to the maximum (2**27 - 1); kept to 34 bits it would add 251 (by hand)."""
    from hw.nic.dcqcn_config import DcqcnRpConfig
    from sim.models.dcqcn import DcqcnCnp
    cfg = DcqcnRpConfig.profile("connectx")
    rm = cfg.register_map()
    writes = _writes_at(rm,
        (("THRESHOLD", 255), ("T_CYCLES", 2), ("BYTE_RESET", 0), ("AI_RATE", 0),
         ("INCREASE_RULE", 0), ("HAI_STEP", 0), ("CUT_MODE", 0), ("MAX_RATE", (1 << 27) - 1),
         ("HAI_RATE", 67_372_037)))
    writes[600] = (rm.addr("THRESHOLD"), 0)
    model = _dcqcn_rp_run(cfg, [None] * 12 + [DcqcnCnp()] + [None] * 587, writes)  # to 599
    assert model.state.t_stage == 255 and model.state.mode == 1                     # AI
    assert model.state.rt == 100_000 << 10                     # unchanged since the reset
    assert 67_372_037 * 255 == (1 << 34) + 251
    model = _dcqcn_rp_run(cfg, [None] * 12 + [DcqcnCnp()] + [None] * 593, writes)  # to 605
    assert model.state.rt == (1 << 27) - 1 and model.state.mode == 2                # HAI


@pytest.mark.parametrize("k, cuts", [(3, 1), (4, 1), (5, 2), (6, 2)])
def test_dcqcn_rp_holdoff_edge(k, cuts):
    """The holdoff cut (CUT_MODE 2, P 5 cycles): a CNP cuts unless a cut was less than P
    cycles ago.  The first CNP cuts and loads the holdoff counter with 5; it counts 4, 3, 2, 1
    on the next edges, so a second CNP k cycles later finds 6 - k and cuts only when that is
    at most 1 (expiring): k >= 5 (by hand)."""
    from hw.nic.dcqcn_config import DcqcnRpConfig
    from sim.models.dcqcn import DcqcnCnp
    cfg = DcqcnRpConfig.profile("connectx")
    rm = cfg.register_map()
    writes = _writes_at(rm, (("CUT_MODE", 2), ("P_CYCLES", 5)))
    events = [None] * 4 + [DcqcnCnp()] + [None] * (k - 1) + [DcqcnCnp()] + [None] * 4
    assert _dcqcn_rp_run(cfg, events, writes).cuts == cuts


@pytest.mark.parametrize("start, switch", [("connectx", "paper"), ("hpcc-mlx", "ns3-rdma")])
def test_dcqcn_rp_profile_switch_at_run_time(start, switch):
    """One build, another profile written through the registers mid-run: RTL = model on every
    cycle (the registers of the second profile are its configuration's reset values)."""
    from hw.nic.dcqcn_config import DcqcnRpConfig
    from sim.models.dcqcn import DcqcnCnp, DcqcnTx
    short = dict(rpg_time_reset=1.6, dce_tcp_rtt=0.8, rate_reduce_monitor_period=0.32,
                 rpg_byte_reset=30_000, line_rate_mbps=100_000, rpg_max_rate=0)
    cfg = DcqcnRpConfig.profile(start, **short)
    other = DcqcnRpConfig.profile(switch, **short)
    rng = _seed("dcqcn" + start)
    events = []
    for _ in range(_length(2400)):
        x = rng.random()
        events.append(DcqcnCnp() if x < 0.05 else DcqcnTx(rng.randint(64, 9000)) if x < 0.3
                      else None)
    regs = other.register_map().registers
    writes = {1000 + i: (r.addr, r.reset) for i, r in enumerate(regs)}
    if LONG:                        # and back and forth every 10**4 cycles
        sets = [cfg.register_map().registers, regs]
        for k, start in enumerate(range(10_000, len(events) - 100, 10_000)):
            writes.update({start + i: (r.addr, r.reset) for i, r in enumerate(sets[k % 2])})
    model = _dcqcn_rp_run(cfg, events, writes)
    assert LONG or model.r == other.registers()
    assert model.cuts > 10


def _edge_settings(regmap, rng, short):
    """One value per register, drawn to reach the edges: the widths' tops and zeros, the
    enumerations' every code (also those no profile uses), bounds either way round
    (``min_rate > max_rate``, a half period above the period, fractions above 1.0); the
    registers ``short(name)`` names (timer periods, byte counts) short, so that each
    expires in a short run."""
    out = {}
    for reg in regmap.registers:
        name, top = reg.name, (1 << reg.fields[0].width) - 1
        if short(name):
            v = rng.choice((0, 1, 2, rng.randint(3, 60), rng.randint(60, 400),
                            rng.randint(400, 20_000), top))
        elif reg.fields[0].width <= 2 or name == "THRESHOLD":
            v = rng.choice((0, 1, 2, 3, 4, 5, top)) & top
        else:
            v = rng.choice((0, 1, top, reg.reset, rng.randint(0, top), rng.randint(0, top)))
        out[name] = v
    return out


@pytest.mark.parametrize("profile", ["connectx", "ns3-rdma"])
def test_dcqcn_rp_random_register_settings(profile):
    """Every register written with values drawn at the edges of its width and of the rules
    (each enumeration's every code, the bounds either way round, zero timers and counters),
    then random CNPs and TX events (bytes 0 ... 9000): RTL = model on every cycle, for many
    settings.  The profile tests above write only values a profile derives."""
    from hw.nic.dcqcn_config import DcqcnRpConfig
    from sim.models.dcqcn import DcqcnCnp, DcqcnTx
    cfg = DcqcnRpConfig.profile(profile)
    regmap = cfg.register_map()
    rng = _seed("dcqcn-random" + profile)
    events, writes = [], {}
    short = lambda n: n.endswith("_CYCLES") or n.startswith("BYTE_")      # noqa: E731
    for _ in range(_length(20)):
        settings = _edge_settings(regmap, rng, short)
        writes.update(_writes_at(regmap, settings, len(events)))
        events += [None] * len(settings)
        # (stretches without CNPs too, so that the stages climb past F into hyper increase)
        p_cnp = rng.choice((0.0, 0.003, 0.02, 0.1, 0.3))
        for _ in range(300):
            x = rng.random()
            events.append(DcqcnCnp() if x < p_cnp else
                          DcqcnTx(rng.choice((0, 1, 64, rng.randint(65, 9000))))
                          if x < p_cnp + 0.4 else None)
    model = _dcqcn_rp_run(cfg, events, writes)
    assert model.cuts > 50


def test_qcn_rp_random_register_settings():
    """The QCN reaction point with every register written at the edges (as the DCQCN test
    above: the 9-bit MIN_DEC_FAC above 1.0, a period of 0, reloads lo + span past the
    counter's width, which wrap, documented), then random CNMs and TX events: RTL = model on
    every cycle, for many settings."""
    from hw.nic.qcn_rp_config import QcnRpConfig
    from tests.test_qcn_rp import random_events
    cfg = QcnRpConfig(time_reset_us=0.08, byte_reset=5_000)
    regmap = cfg.register_map()
    rng = _seed("qcn-random")
    events, writes = [], {}
    short = lambda n: n.startswith(("TIME_", "BYTE_"))                     # noqa: E731
    for _ in range(_length(20)):
        settings = _edge_settings(regmap, rng, short)
        writes.update(_writes_at(regmap, settings, len(events)))
        events += [None] * len(settings)
        events += random_events(cfg, 300, rng.randrange(1 << 30))
    model = _qcn_rp_run(cfg, events, writes)
    assert model.cuts > 50


# ---- CNM generator ------------------------------------------------------------------------------

def test_cnm_written_mac_and_priority():
    """CP_MAC and CNM_PCP written: the frame's source MAC, VLAN PCP and CPID (upper 6 bytes)
    are the written values (parsed from the IEEE 802.1Qau layout), RTL = model."""
    from hw.switch.cnm_config import CnmGenConfig
    from hw.switch.cnm_gen import CnmGenerator
    from sim.models.cnm import CnmModel, pack_cnm_request
    from sim.models.packets import FrameAssembler
    from tests.test_cnm import REQ, parse_cnm
    cfg = CnmGenConfig()
    regmap = cfg.register_map()
    assert Fraction(regmap["CP_MAC_HI"].reset << 32 | regmap["CP_MAC_LO"].reset) == cfg.cp_mac
    mac, pcp = 0x0A1B2C3D4E5F, 3
    writes = [(regmap.addr("CP_MAC_LO"), mac & 0xFFFF_FFFF), (regmap.addr("CP_MAC_HI"), mac >> 32),
              (regmap.addr("CNM_PCP"), pcp)]
    dut, model = CnmGenerator(cfg), CnmModel(cfg)
    frames = FrameAssembler(cfg.data_bytes)

    async def sender(ctx):
        await stream_put(ctx, dut.request, [pack_cnm_request(cfg, REQ)])
        for addr, data in writes:
            await csr_write(ctx, dut, addr, data)
        await stream_put(ctx, dut.request, [pack_cnm_request(cfg, REQ)])

    async def receiver(ctx):
        await stream_get(ctx, dut.frame, rng=random.Random(3), p_ready=0.7,
                         on_item=frames.push, until=lambda: len(frames.frames) >= 2)

    run_testbenches(dut, sender, receiver)
    first = model.frame(REQ)
    for w in writes:
        model.write(*w)
    assert frames.frames == [first, model.frame(REQ)]
    old, new = parse_cnm(frames.frames[0]), parse_cnm(frames.frames[1])
    assert (old["src"], old["pcp"], old["cpid"] >> 16) == (cfg.cp_mac, cfg.cnm_pcp, cfg.cp_mac)
    assert (new["src"], new["pcp"], new["cpid"] >> 16) == (mac, pcp, mac)


# ---- QCN congestion point -----------------------------------------------------------------------

def test_qcn_cp_written_set_point_weight_and_table():
    """The registers of another configuration written (Q_eq 5000, w 1, every interval 1000
    bytes, no jitter; the quantizer's constants with them): after the first sample (at 153600
    bytes, the reset table's), every 1000-byte frame is sampled; with ``s = (q - 5000) + (q -
    q_old)`` (IEEE 802.1Qau, w = 1) a CNM iff s > 0, qntzFb = ceil(63 min(s, 15000) / 15000)
    (Fb_max = Q_eq (2 w + 1)); RTL = model."""
    from hw.switch.qcn_cp import QcnCp
    from hw.switch.qcn_cp_config import QcnCpConfig
    from sim.models.qcn import CpCodec, CpFrame, CpModel
    cfg = QcnCpConfig()
    other = QcnCpConfig(q_eq=5000, w=1, jitter=0.0, sample_table=(1000,) * 8)
    regs = other.register_map().registers
    rng = _seed("qcncp")
    frames = [CpFrame(0, 16000)] * 10 + [CpFrame(rng.randrange(12000), 1000) for _ in range(200)]
    dut, codec, model = QcnCp(cfg), CpCodec(cfg), CpModel(cfg)
    got = []

    async def sender(ctx):
        for r in regs:
            await csr_write(ctx, dut, r.addr, r.reset)
        await stream_put(ctx, dut.frame, [codec.pack_frame(f) for f in frames])

    async def receiver(ctx):
        bits = await stream_get(ctx, dut.decision, len(frames), rng=random.Random(3),
                                p_ready=0.7)
        got.extend(codec.unpack_decision(b) for b in bits)

    run_testbenches(dut, sender, receiver)
    for r in regs:
        model.write(r.addr, r.reset)
    assert got == [model.step(f) for f in frames]
    q_old = 0                                   # frame 9 (qlen 0) was the first sample
    cnms = 0
    for f, d in zip(frames[10:], got[10:], strict=True):
        assert d.sampled, f
        s = (f.qlen - 5000) + (f.qlen - q_old)
        q_old = f.qlen
        assert d.cnm == (s > 0), f
        cnms += d.cnm
        if d.cnm:
            assert d.qntz_fb == math.ceil(Fraction(63 * min(s, 15000), 15000)), f
    assert 20 < cnms < 180


def test_qcn_cp_write_waits_for_a_sample_in_flight():
    """A write offered while a sample is in the pipeline is taken only once it has left
    (csr_w.ready low meanwhile), and frames are held while the write waits."""
    from hw.switch.qcn_cp import QcnCp
    from hw.switch.qcn_cp_config import QcnCpConfig
    from sim.models.qcn import CpCodec, CpFrame
    cfg = QcnCpConfig(sample_table=(1,) * 8, jitter=0.0)
    dut, codec = QcnCp(cfg), CpCodec(cfg)
    addr = cfg.register_map().addr("Q_EQ")

    async def bench(ctx):
        ctx.set(dut.decision.ready, 1)
        ctx.set(dut.frame.payload.as_value(), codec.pack_frame(CpFrame(100, 1)))
        ctx.set(dut.frame.valid, 1)
        await ctx.tick()                        # the frame is taken: a sample starts
        ctx.set(dut.frame.valid, 0)
        ctx.set(dut.csr_w.payload, {"addr": addr, "data": 77})
        ctx.set(dut.csr_w.valid, 1)
        waited = 0
        while not ctx.get(dut.csr_w.ready):
            assert ctx.get(dut.frame.ready) == 0
            waited += 1
            await ctx.tick()
        # docs/qcn.md: the frame taken in cycle 0 is in stage k in cycle k (1 ... 18); the
        # write is taken in cycle 19, the first with no stage holding it: ready low 18 cycles
        assert waited == QcnCp.sample_latency(cfg) == 18
        ctx.set(dut.frame.valid, 1)
        assert ctx.get(dut.frame.ready) == 0    # held while the write is offered
        await ctx.tick()
        ctx.set(dut.csr_w.valid, 0)
        ctx.set(dut.csr_raddr, addr)
        await ctx.tick()
        assert ctx.get(dut.csr_rdata) == 77

    run_testbenches(dut, bench)


# ---- reset values of the new maps (independent of the RTL) --------------------------------------

def test_reset_values_are_the_configurations():
    from hw.nic.dcqcn_config import DcqcnRpConfig
    from hw.switch.qcn_cp_config import QcnCpConfig
    rp = DcqcnRpConfig.profile("connectx")
    vals = _reset_values(rp.register_map())
    assert vals["T_CYCLES"] == round(300e-6 * 156.25e6) and vals["THRESHOLD"] == 1
    assert vals["G"] == 1024 - 1019 and vals["GD_SHIFT"] == 11 + 14
    cp = _reset_values(QcnCpConfig().register_map())
    assert (cp["Q_EQ"], cp["W"], cp["FB_MAX"]) == (26_000, 2, 130_000)
    table = [153600, 76800, 51200, 38400, 30720, 25600, 22016, 18944]   # IEEE 802.1Qau
    for i, s in enumerate(table):       # lo = round(0.85 S), span = round(0.3 S)
        assert abs(cp[f"SAMPLE_LO{i}"] - 0.85 * s) <= 0.5
        assert abs(cp[f"SAMPLE_SPAN{i}"] - 0.3 * s) <= 0.5


# ---- L3QCN congestion point: the CNP-QP table through registers --------------------------------

def test_l3qcn_cp_table_through_registers():
    """Mode roce: ADD / LOOKUP / REMOVE of the CNP-QP table through TBL_* (statuses by the
    table's rules: OK 0, NOT_FOUND 1, DUPLICATE 3), the entry seen by the table_cmd port's
    LOOKUP; then the QCN CP's Q_EQ and W written through the same port (forwarded), a frame
    sampled with Fb < 0 becomes a CNP to the registered QP (the model's frame, and its BTH
    DestQP parsed at its offset), and the counters read back."""
    from hw.layouts import HtOp, HtStatus
    from hw.switch.l3qcn import L3qcnCp
    from hw.switch.l3qcn_config import L3qcnCpConfig
    from hw.switch.qcn_cp_config import QcnCpConfig
    from sim.models.l3qcn import L3qcnCpModel, L3qcnFrame, cnp_qp_key
    from sim.models.packets import FrameAssembler
    cfg = L3qcnCpConfig(mode="roce", cp=QcnCpConfig(sample_table=(1,) * 8, jitter=0.0),
                        buckets=16, ways=2)
    regmap = cfg.register_map()
    dut, model = L3qcnCp(cfg), L3qcnCpModel(cfg)
    ip, qp, src_qp = 0x0A000002, 0x123456, 0x00ABCD
    a = {n: regmap.addr(n) for n in ("TBL_KEY_IP", "TBL_KEY_QP", "TBL_VALUE", "TBL_CMD",
                                     "TBL_STATUS", "TBL_RESULT", "NOTIFICATIONS", "NO_QP",
                                     "Q_EQ", "W", "GEN_CNP_DSCP", "GEN_TTL")}
    seen = []
    frames = FrameAssembler(cfg.cnp.data_bytes)

    async def read(ctx, addr):
        ctx.set(dut.csr_raddr, addr)
        await ctx.tick()
        return ctx.get(dut.csr_rdata)

    async def command(ctx, op, port_lookup=False):
        await csr_write(ctx, dut, a["TBL_CMD"], op.value)
        model.write(a["TBL_CMD"], op.value)
        if port_lookup:         # the port's command while this one waits: the port goes first
            await port(ctx)
        for _ in range(50):
            if not (status := await read(ctx, a["TBL_STATUS"])) & 1:
                break
        else:
            raise AssertionError("TBL_STATUS.busy stuck")
        result = await read(ctx, a["TBL_RESULT"])
        assert (status, result) == (model.read(a["TBL_STATUS"]), model.read(a["TBL_RESULT"]))
        seen.append((op, HtStatus(status >> 1), result))

    async def port(ctx):
        ctx.set(dut.table_cmd.payload, {"op": HtOp.LOOKUP, "key": cnp_qp_key(ip, qp),
                                        "value": 0, "tag": 0})
        ctx.set(dut.table_cmd.valid, 1)
        await ctx.tick().until(dut.table_cmd.ready)
        ctx.set(dut.table_cmd.valid, 0)
        ctx.set(dut.table_result.ready, 1)
        *_, payload = await ctx.tick().sample(dut.table_result.payload).until(
            dut.table_result.valid)
        assert (payload.status, payload.value) == (HtStatus.OK, src_qp)

    async def bench(ctx):
        ctx.set(dut.packet.ready, 1)
        # (GEN_*: the CNP generator's registers, forwarded: DSCP 13, TTL 7)
        for name, value in (("TBL_KEY_IP", ip), ("TBL_KEY_QP", qp), ("TBL_VALUE", src_qp),
                            ("Q_EQ", 1000), ("W", 0), ("GEN_CNP_DSCP", 13), ("GEN_TTL", 7)):
            await csr_write(ctx, dut, a[name], value)
            model.write(a[name], value)
        await command(ctx, HtOp.ADD)
        await command(ctx, HtOp.ADD)
        # the port sees the entry added through the registers, its LOOKUP offered while the
        # register's LOOKUP is queued
        await command(ctx, HtOp.LOOKUP, port_lookup=True)
        # a sampled frame (qlen 5000 > Q_EQ 1000, w 0) of the flow: a CNP to src_qp
        f = L3qcnFrame(qlen=5000, length=100, src_ip=0x0A000001, dst_ip=ip, sport=0xC000,
                       dqpn=qp, roce=True)
        ctx.set(dut.frame.payload, {"qlen": f.qlen, "length": f.length, "src_ip": f.src_ip,
                                    "dst_ip": f.dst_ip, "sport": f.sport, "dqpn": f.dqpn,
                                    "roce": 1})
        ctx.set(dut.frame.valid, 1)
        await ctx.tick().until(dut.frame.ready)
        ctx.set(dut.frame.valid, 0)
        seen.append(("cnp", model.frame(f)))
        for _ in range(60):
            beat = await ctx.tick().sample(dut.packet.valid, dut.packet.payload)
            if beat[-2]:
                frames.push(beat[-1].as_value().value)
        for op in (HtOp.REMOVE, HtOp.LOOKUP):
            await command(ctx, op)
        for name in ("NOTIFICATIONS", "NO_QP", "Q_EQ", "W", "GEN_CNP_DSCP", "GEN_TTL"):
            assert await read(ctx, a[name]) == model.read(a[name]), name
        assert (await read(ctx, a["GEN_CNP_DSCP"]), await read(ctx, a["GEN_TTL"])) == (13, 7)

    run_testbenches(dut, bench)
    statuses = [(op, st, res) for op, st, res in (x for x in seen if len(x) == 3)]
    assert statuses == [(HtOp.ADD, HtStatus.OK, 0), (HtOp.ADD, HtStatus.DUPLICATE, src_qp),
                        (HtOp.LOOKUP, HtStatus.OK, src_qp), (HtOp.REMOVE, HtStatus.OK, src_qp),
                        (HtOp.LOOKUP, HtStatus.NOT_FOUND, 0)]
    cnp = [x[1] for x in seen if x[0] == "cnp"][0]
    assert cnp is not None and frames.frames == [cnp]
    assert int.from_bytes(cnp[20 + 8 + 5:20 + 8 + 8], "big") == src_qp   # BTH DestQP
    assert (cnp[1] >> 2, cnp[8]) == (13, 7)                 # IPv4 DSCP and TTL, as written
    assert model.notifications == 1


def test_l3qcn_tor_table_through_registers():
    """The flow-ID table through TBL_*: an ADD of a flow makes a private CNM of that flow a
    CNM to the registered MAC, flow ID and VLAN (DA, RPID and VID parsed from the IEEE 802.1Qau
    layout, and the model's frame); LOOKUP returns the value (RES_*), a second ADD is a
    DUPLICATE, a REMOVE then LOOKUP misses, and the counters read back as the model's."""
    from hw.layouts import HtOp, HtStatus
    from hw.switch.l3qcn import L3qcnTor
    from hw.switch.l3qcn_config import L3qcnTorConfig, PrivateCnmConfig
    from sim.models.cnp import frame_beats
    from sim.models.l3qcn import TorModel, build_private_cnm
    from sim.models.packets import FrameAssembler
    from tests.test_cnm import parse_cnm
    from tests.test_l3qcn import random_flow, random_private_request
    rng = _seed("tor")
    cfg = L3qcnTorConfig(private=PrivateCnmConfig(sample_bytes=0, data_bytes=8), buckets=4,
                         ways=1)
    regmap = cfg.register_map()
    dut, model = L3qcnTor(cfg), TorModel(cfg)
    flow = random_flow(rng)
    mac, rpid, vid = 0x0200_1122_3344, 0xBEEF, 0x123
    cnm_mac, pcp = 0x0242_5566_7788, 3      # the CNM generator's GEN_* registers, forwarded
    setup = [("GEN_CP_MAC_LO", cnm_mac & 0xFFFF_FFFF), ("GEN_CP_MAC_HI", cnm_mac >> 32),
             ("GEN_CNM_PCP", pcp),
             ("TBL_SRC_IP", flow.src_ip), ("TBL_DST_IP", flow.dst_ip),
             ("TBL_PORTS", flow.sport << 16 | flow.dport), ("TBL_PROTOCOL", flow.protocol),
             ("TBL_MAC_LO", mac & 0xFFFF_FFFF), ("TBL_MAC_HI", mac >> 32),
             ("TBL_FLOW", vid << 16 | rpid)]
    pkt = build_private_cnm(cfg.private, random_private_request(rng, flow))
    frames, results = FrameAssembler(cfg.private.data_bytes), []
    expected = []

    async def read(ctx, name, compare=True):
        ctx.set(dut.csr_raddr, regmap.addr(name))
        await ctx.tick()
        got = ctx.get(dut.csr_rdata)
        assert not compare or got == model.read(regmap.addr(name)), name
        return got

    async def command(ctx, op):
        await csr_write(ctx, dut, regmap.addr("TBL_CMD"), op.value)
        model.write(regmap.addr("TBL_CMD"), op.value)
        for _ in range(50):
            if not await read(ctx, "TBL_STATUS", compare=False) & 1:
                break
        else:
            raise AssertionError("TBL_STATUS.busy stuck")
        status = await read(ctx, "TBL_STATUS")
        results.append((op, HtStatus(status >> 1), await read(ctx, "RES_FLOW") & 0xFFFF))

    async def bench(ctx):
        ctx.set(dut.cnm.ready, 1)
        for name, value in setup:
            await csr_write(ctx, dut, regmap.addr(name), value)
            model.write(regmap.addr(name), value)
        await command(ctx, HtOp.ADD)
        await command(ctx, HtOp.ADD)
        await command(ctx, HtOp.LOOKUP)
        expected.append(model.receive(pkt))
        await stream_put(ctx, dut.packet, frame_beats(cfg.private, pkt))
        for _ in range(40):
            *_, valid, payload = await ctx.tick().sample(dut.cnm.valid, dut.cnm.payload)
            if valid:
                frames.push(payload.as_value().value)
        await command(ctx, HtOp.REMOVE)
        await command(ctx, HtOp.LOOKUP)
        for name in ("CNMS", "MISSES", "OCCUPANCY", "RES_MAC_LO", "RES_MAC_HI",
                     "GEN_CP_MAC_LO", "GEN_CP_MAC_HI", "GEN_CNM_PCP"):
            await read(ctx, name)
        assert await read(ctx, "GEN_CNM_PCP") == pcp

    run_testbenches(dut, bench)
    assert results == [(HtOp.ADD, HtStatus.OK, 0), (HtOp.ADD, HtStatus.DUPLICATE, rpid),
                       (HtOp.LOOKUP, HtStatus.OK, rpid), (HtOp.REMOVE, HtStatus.OK, rpid),
                       (HtOp.LOOKUP, HtStatus.NOT_FOUND, 0)]
    assert expected[0] is not None and frames.frames == expected
    cnm = parse_cnm(frames.frames[0])
    assert (cnm["dst"], cnm["rpid"], cnm["vid"]) == (mac, rpid, vid)
    assert (cnm["src"], cnm["pcp"]) == (cnm_mac, pcp)
