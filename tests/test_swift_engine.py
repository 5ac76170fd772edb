"""Swift's datapath of the multi-flow engine (hw/nic/swift_engine.py), pipelined (54 modify
cycles), in Amaranth's simulator: the hand-derived known answers of docs/swift.md (the cut, its
once-per-RTT guard, max_mdf's bound, the transition into and out of a window below one packet
with its pacing delay) on one flow, each event on the state the previous one produced; the
timeout / fast-recovery rules; random states, events and registers against the bit-exact model
every cycle; and the engine with this datapath against the engine model over 1024 flows.

``CC_SEED`` sets the seed (printed); ``CC_LONG=1`` runs 20x the random vectors and 10^5 engine
events."""

from __future__ import annotations

import dataclasses
import os
import random

import pytest

from hw.nic.flow_datapath import CtlOp, EventKind
from hw.nic.flow_engine_config import FlowEngineConfig, min_out_fifo_depth
from hw.nic.swift_config import SwiftConfig
from hw.nic.swift_engine import SWIFT_PIPE_LATENCY, SwiftDatapath, SwiftOp
from hw.params import ConfigError
from sim.models.swift import SwiftDatapathModel
from tests.pipe_harness import check_groups_against_model, run_chain

SEED = int(os.environ.get("CC_SEED", "20251125"))
LONG = os.environ.get("CC_LONG", "") not in ("", "0")
#: flows of the engine test: 64 by default (the 1024-flow init sweep alone costs tens of CPU
#: seconds in Amaranth's simulator), 1024 with CC_LONG=1 or CC_ENGINE_FLOWS=1024
FLOWS = int(os.environ.get("CC_ENGINE_FLOWS", "1024" if LONG else "64"))

# docs/swift.md, "Known answers": 1 MHz (a cycle is a µs), target 10 + 2 per hop, no flow
# scaling, ai 1, beta 0.8, max_mdf 0.5, windows from 4 packets (test_swift_model.py's KAT)
KAT = SwiftConfig(clk_hz=1_000_000, base_target_us=10, hop_scale_us=2, fs_range_us=0,
                  endpoint_target_us=1000, ai=1.0, beta=0.8, max_mdf=0.5, min_cwnd=0.001,
                  max_cwnd=256, init_cwnd=4.0)


def ev(dp, op=SwiftOp.ACK, now=0, fabric=0, endpoint=0, hops=1, n=1):
    return (EventKind.CN, dp.cn_layout.const({"op": op, "now": now, "fabric": fabric,
                                              "endpoint": endpoint, "hops": hops,
                                              "num_acked": n}).as_value().value, 0)


def regs_of(dp):
    return {name: reset for name, _, reset in dp.regs}


def init_state(dp, regs):
    st = {name: 0 for name, _ in dp.state_layout}
    st.update(fcwnd=regs["init_cwnd"], ecwnd=regs["init_cwnd"])
    return st


def test_known_answers_cut_guard_and_sub_one_pacing():
    dp = SwiftDatapath(KAT)
    assert dp.latency == SWIFT_PIPE_LATENCY
    regs = regs_of(dp)
    acks = [(100, 8), (101, 24), (110, 30), (131, 30), (200, 120), (260, 120), (261, 8)]
    # the table of docs/swift.md: + 1/4 packet; the first cut (factor 39322); no cut 9 cycles
    # later (RTT 30); the second cut 30 cycles later; no cut 69 < 120 cycles after it; max_mdf
    # bounds the third (0.5) and the window falls below one packet: pace 120 x 65536 / 43452;
    # below the target below one packet: + ai (a whole packet), pacing off
    fcwnd = [278528, 167118, 167118, 86904, 86904, 43452, 108988]
    pace = [0, 0, 0, 0, 0, 180, 0]
    out = run_chain(dp, regs, init_state(dp, regs),
                    [ev(dp, now=t, fabric=d) for t, d in acks])
    assert [s["fcwnd"] for s in out] == fcwnd
    assert [s["pace"] for s in out] == pace
    assert [s["t_last"] for s in out][1:4] == [101, 101, 131]
    assert [s["target"] for s in out] == [12] * 7


def test_timeouts_fast_recovery_and_the_floor():
    """Timeouts count up and the fifth drops both windows to min_cwnd (pace = RTT 2**16 /
    min_cwnd = RTT x 1000 at 0.001 packet: hand value 65536 x 10 / 66 = 9929); a timeout within
    an RTT of the last cut does not cut; an ACK clears the count; a fast recovery cuts by
    max_mdf (4 packets -> 2)."""
    dp = SwiftDatapath(KAT)
    regs = regs_of(dp)
    s0 = init_state(dp, regs)
    s0.update(rtt=10)
    out = run_chain(dp, regs, s0, [ev(dp, SwiftOp.TIMEOUT, now=1000)]
                    + [ev(dp, SwiftOp.TIMEOUT, now=1001 + i) for i in range(4)]
                    + [ev(dp, SwiftOp.FAST_RECOVERY, now=2000),
                       ev(dp, SwiftOp.ACK, now=2001, fabric=5, endpoint=5)])
    assert [s["retx"] for s in out] == [1, 2, 3, 4, 5, 0, 0]
    assert out[0]["fcwnd"] == 2 << 16                       # cut by max_mdf at 1000
    assert [s["fcwnd"] for s in out[1:4]] == [2 << 16] * 3   # within an RTT (10): no cut
    assert out[4]["fcwnd"] == out[4]["ecwnd"] == 66          # the reset: min_cwnd 0.001
    assert out[4]["pace"] == (10 << 16) // 66
    assert out[5]["fcwnd"] == 66                             # 33 clamped to min_cwnd
    # the ACK: below target below one packet, + ai n: 1 packet + 66
    assert out[6]["fcwnd"] == 66 + 65536 and out[6]["pace"] == 0


def random_regs(rng, cfg):
    r = regs_of(SwiftDatapath(cfg))
    if rng.random() < 0.3:
        return r
    D = cfg.delay_width
    pick = lambda lo, hi: rng.choice([lo, hi, rng.randint(lo, hi)])   # noqa: E731
    r.update(base_target=pick(1, 1 << 16), hop_scale=pick(0, 1 << 12),
             endpoint_target=pick(1, (1 << D) - 1), ai=pick(1, (1 << 24) - 1),
             beta=pick(0, 1 << 16), mdf_floor=pick(0, 1 << 16), retx_reset=pick(1, 255),
             max_hops=pick(0, 255))
    r["max_cwnd"] = pick(1 << 16, (1 << 32) - 1)
    r["min_cwnd"] = pick(1, r["max_cwnd"])
    r["init_cwnd"] = pick(r["min_cwnd"], r["max_cwnd"])
    return r


def random_vector(rng, dp, regs):
    D = dp.config.delay_width
    b = lambda w: rng.choice([0, 1, (1 << w) - 1, rng.getrandbits(w)])     # noqa: E731
    win = lambda: rng.choice([regs["min_cwnd"], regs["max_cwnd"], 1 << 16, (1 << 16) - 1,   # noqa: E731
                              (1 << 16) + 1, rng.randint(1, 1 << 16), rng.randint(1, 1 << 24),
                              b(32)])
    state = {"pace": b(32), "fcwnd": win(), "ecwnd": win(),
             "rtt": rng.choice([b(D), rng.randrange(1 << 14)]), "t_last": b(32),
             "decreased": rng.randrange(2), "retx": rng.choice([0, regs["retx_reset"] - 1, b(8)]),
             "target": b(D)}
    now = (state["t_last"] + rng.choice([state["rtt"], state["rtt"] - 1, state["rtt"] + 1,
                                         rng.getrandbits(32)])) & 0xFFFFFFFF
    tgt = regs["base_target"] + regs["hop_scale"]
    fab = rng.choice([tgt - 1, tgt, tgt + 1, rng.randrange(4 * tgt + 2), b(32)])
    ep = rng.choice([regs["endpoint_target"] + rng.randint(-1, 1), rng.randrange(5000), b(32)])
    op = rng.choice([SwiftOp.ACK] * 5 + [SwiftOp.TIMEOUT, SwiftOp.FAST_RECOVERY, SwiftOp.NONE])
    kind, p, _ = ev(dp, op, now, max(fab, 0), max(ep, 0), b(8), b(8))
    kind = rng.choice([kind] * 8 + [EventKind.TX, EventKind.TIMER])
    return state, kind, p, rng.getrandbits(dp.time_width)


@pytest.mark.parametrize("cfg", [SwiftConfig(), KAT], ids=["default", "kat"])
def test_random_vectors_match_the_model_every_cycle(cfg):
    rng = random.Random(f"{SEED}-{cfg.clk_hz}")
    print(f"seed {SEED}")
    dp = SwiftDatapath(cfg)
    md = SwiftDatapathModel(dp)
    n = 60 * (20 if LONG else 1)
    groups = []
    for _ in range(3):             # (register sets: one simulation for all)
        regs = random_regs(rng, cfg)
        groups.append((regs, [random_vector(rng, dp, regs) for _ in range(n)]))
    check_groups_against_model(dp, md, groups)


def test_register_that_does_not_fit_is_one_error():
    with pytest.raises(TypeError):
        SwiftDatapath(object())
    dp = SwiftDatapath(SwiftConfig())
    assert dp.state_layout.size == 185 and dp.cn_layout.size == 114
    with pytest.raises(ConfigError):
        SwiftDatapath(SwiftConfig(), pipelined=2)
    # the datapath's own check of every register's reset against its width, behind the
    # configuration's range checks (which no legal SwiftConfig passes with a reset too wide):
    # a configuration whose registers() gives ai at exactly 2**24 (its 24 bits) is refused,
    # 2**24 - 1 is taken
    class Wide(SwiftConfig):
        ai_reset = 0

        def registers(self):
            return dataclasses.replace(super().registers(), ai=self.ai_reset)

    Wide.ai_reset = (1 << 24) - 1
    assert {n: v for n, _, v in SwiftDatapath(Wide()).regs}["ai"] == (1 << 24) - 1
    Wide.ai_reset = 1 << 24
    with pytest.raises(ConfigError, match="ai"):
        SwiftDatapath(Wide())


# -- the engine with the datapath against the engine model ------------------------------------

def test_engine_random_events_over_many_flows():
    """START FLOWS flows (1024 with CC_LONG=1), then random ACKs / timeouts / fast
    recoveries (a hot flow half of the time), READs and WRITEs of the pace field,
    back-pressure on the outputs: every output every cycle equal to the model's; the pace
    records are the stream a NIC feeds to the pacer."""
    from tests.test_flow_engine import Harness
    n_flows = FLOWS
    events = 100_000 if LONG else 60
    dp = SwiftDatapath(SwiftConfig())
    cfg = FlowEngineConfig(n_flows=n_flows, out_fifo_depth=min_out_fifo_depth(dp.latency),
                           wheel_horizon=128,
                           wheel_slots=max(256, 2 * n_flows), wheel_entries_per_flow=1)
    h = Harness(cfg, dp, seed=SEED, model_dp=SwiftDatapathModel)
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
            _, _, p, _ = random_vector(rng, dp, regs)
            h.queues["cn"].append((f, p))
            if rng.random() < 0.03:
                op = rng.choice([CtlOp.READ, CtlOp.WRITE])
                h.queues["ctl"].append((f, op, 1, rng.getrandbits(32)))
            if i % 2000 == 1999:
                await h.drain(ctx)
        await h.drain(ctx)
        for f in (0, n_flows - 1, hot):
            h.queues["ctl"].append((f, CtlOp.READ, 0, 0))
        await h.drain(ctx)
    h.simulate(body)
    print(f"seed {SEED}: {h.cycle} cycles, {h.model.issued} events, {h.model.counters}")
    assert h.model.counters["ev_cn"] >= events
