"""TIMELY's datapath of the multi-flow engine (hw/nic/timely_engine.py), pipelined (29 modify
cycles), in Amaranth's simulator: hand-derived known answers (docs/timely.md's rising-then-
falling RTT sequence, one flow, each completion on the state the last one produced), every
rule's boundary against hand-computed values, random states, completions and registers against
the bit-exact model every cycle (one new vector per clock), and the engine with this datapath
against the engine model over 1024 flows.

``CC_SEED`` sets the seed (printed); ``CC_LONG=1`` runs 20x the random vectors and 10^5 engine
events."""

from __future__ import annotations

import os
import random

import pytest

from hw.lib.pipeline import radix4_divide
from hw.nic.flow_datapath import CtlOp, EventKind
from hw.nic.flow_engine_config import FlowEngineConfig, min_out_fifo_depth
from hw.nic.timely_config import TimelyConfig
from hw.nic.timely_engine import (
    TIMELY_PIPE_LATENCY,
    TimelyDatapath,
    TimelyEngineConfig,
    timely_engine,
)
from hw.params import ConfigError
from sim.models.divider import udiv_sat
from sim.models.timely import TimelyDatapathModel
from tests.pipe_harness import check_groups_against_model, run_chain, run_pipe

SEED = int(os.environ.get("CC_SEED", "20251125"))
LONG = os.environ.get("CC_LONG", "") not in ("", "0")
#: flows of the engine test: 64 by default (the 1024-flow init sweep alone costs tens of CPU
#: seconds in Amaranth's simulator), 1024 with CC_LONG=1 or CC_ENGINE_FLOWS=1024
FLOWS = int(os.environ.get("CC_ENGINE_FLOWS", "1024" if LONG else "64"))

# docs/timely.md, "Known answers": 1 MHz (a cycle is a µs), 8192 Mb/s (a 16 KB segment
# serializes in exactly 16 cycles), alpha = beta = 0.5, delta 10 Mb/s, T_low 50, T_high 500,
# minRTT 20, HAI after 3 with N = 5, R = 5000 Mb/s
KAT = TimelyConfig(clk_hz=1_000_000, line_rate_mbps=8192, ewma_alpha=0.5, beta=0.5,
                   delta_mbps=10, t_low_us=50, t_high_us=500, min_rtt_us=20, hai_thresh=3,
                   hai_mult=5, init_rate_mbps=5000, app_limit_pct=0)
R0 = 5000 << 10
DELTA = 10 << 10


def payload(dp, rtt, t_send=1000, seg=16384, app_bytes=1 << 30, app_cycles=0, ser=16):
    return dp.cn_layout.const({"t_send": t_send, "t_comp": (t_send + rtt + ser) & 0xFFFFFFFF,
                               "seg_bytes": seg, "app_bytes": app_bytes,
                               "app_cycles": app_cycles}).as_value().value


def regs_of(dp):
    return {name: reset for name, _, reset in dp.regs}


def test_known_answers_rising_then_falling_rtt():
    dp = TimelyDatapath(KAT)
    assert dp.latency == TIMELY_PIPE_LATENCY
    regs = regs_of(dp)
    rtts = [30, 40, 100, 140, 600, 180, 150, 120, 120, 120, 40]
    # the table of docs/timely.md (T_low, T_low, gradient cuts, T_high, +delta x 2, HAI x 3,
    # T_low)
    rates = [5_130_240, 5_140_480, 963_840, 90_360, 82_830, 93_070, 103_310, 154_510, 205_710,
             256_910, 267_150]
    init = {"rate": R0, "prev_rtt": 0, "rtt_diff": 0, "neg": 0, "valid": 0}
    out = run_chain(dp, regs, init, [(EventKind.CN, payload(dp, r), 0) for r in rtts])
    assert [s["rate"] for s in out] == rates
    assert [s["prev_rtt"] for s in out] == rtts


def hand_high(rate, rtt, t_high=500, beta=32768):
    """R (1 - beta (1 - T_high / RTT)) in the formats of docs/timely.md, written out."""
    q = (t_high << 16) // rtt
    return rate * (65536 - ((beta * (65536 - q)) >> 16)) >> 16


def test_rule_boundaries_hand_derived():
    """First completions (gradient 0) at each threshold, the clamps, HAI's entry, the
    application-limited rule at its exact byte count, the 32-bit stamp wrap, an RTT below the
    serialization, a TX event (no change)."""
    cfg = KAT.replace(app_limit_pct=80)
    dp = TimelyDatapath(cfg)
    regs = regs_of(dp)
    first = {"rate": R0, "prev_rtt": 0, "rtt_diff": 0, "neg": 0, "valid": 0}
    mx, mn = 8192 << 10, 10 << 10
    # 80 % of 5000 Mb/s over 100 µs is 50,000 bytes
    ok, limited = dict(app_bytes=50_000, app_cycles=100), dict(app_bytes=49_999, app_cycles=100)
    cases = [
        (first, payload(dp, 49, **ok), R0 + DELTA),                  # T_low: + delta
        (first, payload(dp, 49, **limited), R0),                     # application-limited
        (first, payload(dp, 50, **ok), R0 + DELTA),                  # == T_low: gradient 0
        (first, payload(dp, 500, **ok), R0 + DELTA),                 # == T_high: gradient 0
        (first, payload(dp, 500, **limited), R0),
        (first, payload(dp, 501), hand_high(R0, 501)),               # T_high + 1: cut
        (first, payload(dp, 501, **limited), hand_high(R0, 501)),    # cuts are never limited
        (dict(first, rate=mx - 1), payload(dp, 10), mx),             # clamp at max_rate
        (dict(first, rate=mn + 5), payload(dp, 100_000), mn),        # clamp at min_rate
        (first, payload(dp, 1 << 30), hand_high(R0, (1 << 24) - 1)),  # RTT saturates
        (first, payload(dp, 30, t_send=(1 << 32) - 5), R0 + DELTA),  # stamps wrap mod 2**32
        (first, payload(dp, -10), R0 + DELTA),                       # RTT < 0 -> 0: T_low
        # HAI: third completion with a non-positive gradient (flat RTT at 100)
        ({"rate": R0, "prev_rtt": 100, "rtt_diff": 0, "neg": 2, "valid": 1},
         payload(dp, 100), R0 + 5 * DELTA),
        ({"rate": R0, "prev_rtt": 100, "rtt_diff": 0, "neg": 1, "valid": 1},
         payload(dp, 100), R0 + DELTA),
    ]
    vecs = [(s, EventKind.CN, p, 0) for s, p, _ in cases]
    vecs.append((first, EventKind.TX, 1, 0))
    out = run_pipe(dp, regs, vecs)
    for (s, p, want), (got, wake, expired, _) in zip(cases, out, strict=False):
        assert got["rate"] == want, (s, hex(p), got, want)
        assert wake is None and not expired
    assert out[-1][0] == first
    assert out[11][0]["prev_rtt"] == 0 and out[9][0]["prev_rtt"] == (1 << 24) - 1


def random_regs(rng, cfg):
    r = regs_of(TimelyDatapath(cfg))
    if rng.random() < 0.3:
        return r
    RW = cfg.rate_width
    pick = lambda lo, hi: rng.choice([lo, hi, rng.randint(lo, hi)])   # noqa: E731
    r["t_high"] = pick(1, (1 << 20))
    r["t_low"] = pick(1, r["t_high"])
    r.update(inv_min_rtt=pick(1, (1 << 32) - 1), alpha=pick(1, 1 << 16), beta=pick(0, 1 << 16),
             delta=pick(0, 1 << 20), hai_thresh=pick(1, 255), hai_mult=pick(1, 255),
             app_k=rng.choice([0, r["app_k"], pick(0, (1 << 28) - 1)]))
    r["max_rate"] = pick(1, (1 << RW) - 1)
    r["min_rate"] = pick(1, r["max_rate"])
    r["init_rate"] = pick(r["min_rate"], r["max_rate"])
    return r


def random_vector(rng, dp, regs):
    cfg = dp.config
    RT, RW = cfg.rtt_width, cfg.rate_width
    dw = RT + 9
    b = lambda w: rng.choice([0, 1, (1 << w) - 1, rng.getrandbits(w)])     # noqa: E731
    rd = rng.choice([0, (1 << (dw - 1)) - 1, 1 << (dw - 1) | 1, rng.getrandbits(dw),
                     rng.randint(-5000, 5000) & ((1 << dw) - 1)])
    state = {"rate": rng.choice([regs["min_rate"], regs["max_rate"], b(RW)]),
             "prev_rtt": rng.choice([b(RT), regs["t_low"], regs["t_high"]]), "rtt_diff": rd,
             "neg": rng.choice([0, regs["hai_thresh"] - 1, regs["hai_thresh"], b(8)]),
             "valid": rng.randrange(2)}
    ser = (rng.randint(16384, 65536), regs["ser_per_byte"])
    rtt = rng.choice([regs["t_low"] + rng.randint(-2, 2), regs["t_high"] + rng.randint(-2, 2),
                      state["prev_rtt"] + rng.randint(-300, 300), rng.getrandbits(RT),
                      rng.getrandbits(32)])
    p = payload(dp, rtt, t_send=rng.getrandbits(32), seg=ser[0],
                ser=(ser[0] * ser[1]) >> 24, app_bytes=b(32), app_cycles=b(32))
    kind = rng.choice([EventKind.CN] * 6 + [EventKind.TX, EventKind.TIMER])
    return state, kind, p, rng.getrandbits(dp.time_width)


# (the known-answer configuration's own random run with CC_LONG=1: its rules are covered by the
# known answers and the boundaries, and every build costs ~10 s of the default suite)
@pytest.mark.parametrize("cfg", [TimelyConfig(), KAT] if LONG else [TimelyConfig()],
                         ids=["100g", "kat"] if LONG else ["100g"])
def test_random_vectors_match_the_model_every_cycle(cfg):
    rng = random.Random(f"{SEED}-{cfg.line_rate_mbps}")
    print(f"seed {SEED}")
    dp = TimelyDatapath(cfg)
    md = TimelyDatapathModel(dp)
    n = 60 * (20 if LONG else 1)
    groups = []
    for _ in range(3):             # (register sets: one simulation for all)
        regs = random_regs(rng, cfg)
        groups.append((regs, [random_vector(rng, dp, regs) for _ in range(n)]))
    check_groups_against_model(dp, md, groups)


def test_divider_is_the_models_floor_quotient():
    rng = random.Random(SEED)
    for _ in range(20_000):
        q = rng.choice([16, 32, 15])
        den = rng.choice([0, 1, rng.getrandbits(rng.randint(1, 32))])
        num = rng.getrandbits(rng.randint(1, 60))
        assert radix4_divide(num, den, q) == udiv_sat(num, den, q)


def test_register_that_does_not_fit_is_one_error():
    with pytest.raises(ConfigError, match="inv_min_rtt"):
        TimelyDatapath(TimelyConfig(clk_hz=1_000_000, min_rtt_us=1))
    with pytest.raises(TypeError):
        TimelyDatapath(object())


def test_register_widths_are_the_documented_ones():
    """The register file's widths of docs/timely.md ("Registers"): alpha and beta UQ0.16 in
    17 bits (1.0 = 2**16 is their largest value), inv_min_rtt and ser_per_byte 32, app_k 28;
    the RTT thresholds the RTT width, the rates the rate width."""
    cfg = TimelyConfig()
    widths = {name: w for name, w, _ in TimelyDatapath(cfg).regs}
    assert widths == {"t_low": cfg.rtt_width, "t_high": cfg.rtt_width, "inv_min_rtt": 32,
                      "alpha": 17, "beta": 17, "delta": cfg.rate_width, "hai_thresh": 8,
                      "hai_mult": 8, "min_rate": cfg.rate_width, "max_rate": cfg.rate_width,
                      "init_rate": cfg.rate_width, "ser_per_byte": 32, "app_k": 28}


def test_for_flows_sizes_the_outputs_for_the_pipelined_datapath():
    """``TimelyEngineConfig.for_flows`` gives the engine the output FIFO depth its 29-cycle
    datapath needs for one event per clock: 29 + 4 events in flight + 2 = 35 entries (the
    engine refuses fewer with a ConfigError, so the top builds only with enough)."""
    cfg = TimelyEngineConfig.for_flows(64)
    assert cfg.engine.out_fifo_depth == TIMELY_PIPE_LATENCY + 6 == 35
    top = timely_engine(cfg)
    top._MustUse__silence = True        # (built for its checks, not elaborated)


# -- the engine with the datapath against the engine model ------------------------------------

def test_engine_random_completions_over_many_flows():
    """START FLOWS flows (1024 with CC_LONG=1), then random completions (a hot flow half of
    the time, so that one flow's completions queue behind its update in flight), READs and
    WRITEs of the rate, with back-pressure on the outputs: every output every cycle equal to
    the model's."""
    from tests.test_flow_engine import Harness
    n_flows = FLOWS
    events = 100_000 if LONG else 60
    dp = TimelyDatapath(TimelyConfig())
    cfg = FlowEngineConfig(n_flows=n_flows, out_fifo_depth=min_out_fifo_depth(dp.latency),
                           wheel_horizon=128,
                           wheel_slots=max(256, 2 * n_flows), wheel_entries_per_flow=1)
    h = Harness(cfg, dp, seed=SEED, model_dp=TimelyDatapathModel)
    h.p_rate_ready, h.p_rd_ready = 0.8, 0.7
    rng = random.Random(SEED)
    regs = regs_of(dp)
    hot = 0

    async def body(ctx):
        nonlocal hot
        await h.wait_ready(ctx)
        h.start_all()
        await h.drain(ctx)
        for i in range(events):
            if i % 50 == 0:
                hot = rng.randrange(n_flows)
            f = hot if rng.random() < 0.5 else rng.randrange(n_flows)
            state, _, p, _ = random_vector(rng, dp, regs)
            h.queues["cn"].append((f, p))
            if rng.random() < 0.03:
                op = rng.choice([CtlOp.READ, CtlOp.WRITE])
                h.queues["ctl"].append((f, op, 0, rng.getrandbits(dp.config.rate_width)))
            if i % 2000 == 1999:
                await h.drain(ctx)
        await h.drain(ctx)
        for f in (0, n_flows - 1, hot):
            h.queues["ctl"].append((f, CtlOp.READ, 0, 0))
        await h.drain(ctx)
    h.simulate(body)
    print(f"seed {SEED}: {h.cycle} cycles, {h.model.issued} events, {h.model.counters}")
    assert h.model.counters["ev_cn"] >= events
