"""The pipelined QCN datapath (``QcnDatapath(latency=L)``) against the combinational one
(latency 1) in the same Amaranth simulation: one new random (state, event, t, valid) every
cycle, the registers held for blocks of cycles (the engine's contract: constant while updates
are in flight), every DatapathOut field of the pipeline compared L - 1 cycles later with the
combinational one's for the same inputs, the two engine-wide LFSRs every cycle, and both
against the bit-exact model (:class:`sim.models.qcn.QcnDatapathModel`, its LFSR advanced by
the valid updates only) where the registers are in the model's range.

States and registers: in range (the vectors of test_qcn_engine.py) and arbitrary bit patterns
(what the engine's WRITE may store: any field value, any register value, e.g. gd_shift < 6,
threshold 0 or 255), with the boundaries mixed in: rates 0 / 1 / the line rate / all ones,
stages 0 / F - 1 / F / F + 1 / 255, deadlines equal to t, t +/- 1 and across the wrap, fb 0
and 63, byte counts equal to the byte counter.

``CC_SEED`` sets the seed (printed), ``CC_QCN_PIPE_CYCLES`` the cycles at the build's latency
(``QCN_PIPE_LATENCY``; default 1500), a fifth of it at the other latencies.
"""

from __future__ import annotations

import copy
import os
import random

import pytest
from amaranth.hdl import Elaboratable, Module, Signal
from amaranth.sim import Simulator

from hw.nic.flow_datapath import EventKind
from hw.nic.qcn_engine import QCN_PIPE_LATENCY, QcnDatapath
from hw.nic.qcn_rp_config import STAGE_MAX
from hw.params import ConfigError
from sim.models.qcn import QcnDatapathModel
from tests.datapath_harness import spans, unpack
from tests.test_qcn_engine import BUILD, W, random_regs, random_vector

SEED = int(os.environ.get("CC_SEED", "20251125"))
CYCLES = int(os.environ.get("CC_QCN_PIPE_CYCLES", "1500"))
MASK = (1 << W) - 1


class Pair(Elaboratable):
    """The combinational and the pipelined datapath on the same inputs."""

    def __init__(self, latency: int):
        self.comb = QcnDatapath(BUILD, W)
        self.pipe = QcnDatapath(BUILD, W, latency=latency)
        dp = self.comb
        self.state = Signal(dp.state_layout)
        self.kind = Signal(EventKind)
        self.tx_bytes = Signal(dp.tx_bytes_width)
        self.cn = Signal(dp.cn_layout)
        self.t = Signal(W)
        self.regs = Signal(dp.regs_layout)
        self.valid = Signal()
        self.outs = {}

    def elaborate(self, platform):
        m = Module()
        for key, dp in (("comb", self.comb), ("pipe", self.pipe)):
            kw = dict(kind=self.kind, tx_bytes=self.tx_bytes, cn=self.cn, t=self.t,
                      regs=self.regs)
            out = dp.build(m, state=self.state, pre=dp.pre(m, **kw), valid=self.valid, **kw)
            sigs = (Signal(dp.state_layout, name=f"{key}_next"), Signal(name=f"{key}_wv"),
                    Signal(W, name=f"{key}_wake"), Signal(name=f"{key}_exp"),
                    Signal(W, name=f"{key}_late"))
            m.d.comb += [sigs[0].eq(out.next_state), sigs[1].eq(out.wake_valid),
                         sigs[2].eq(out.wake), sigs[3].eq(out.expired), sigs[4].eq(out.late)]
            self.outs[key] = sigs
        return m


def arbitrary_regs(rng, dp):
    """Any register values (each at 0, 1, all ones or random), the reset values' widths."""
    regs = {}
    for name, width, _ in dp.regs:
        top = (1 << width) - 1
        regs[name] = rng.choice([0, 1, top, rng.randint(0, top), rng.randint(0, top)])
    return regs


def arbitrary_vector(rng, dp, regs):
    """Any state bits (with the boundary values likely), any event."""
    t = rng.choice([0, MASK, 1 << (W - 1), (1 << (W - 1)) - 1, rng.randrange(1 << W)])
    state = {}
    for name, f in dp.state_layout:
        top = (1 << f.width) - 1
        state[name] = rng.choice([0, 1, top, top - 1, rng.randint(0, top)])
    F = regs["threshold"]
    for name in ("b_stage", "t_stage"):
        if rng.random() < 0.5:
            state[name] = rng.choice([F, (F - 1) & 0xFF, (F + 1) & 0xFF, STAGE_MAX])
    if rng.random() < 0.5:
        state["cr"] = rng.choice([0, regs["line_rate"], regs["min_rate"], state["cr"]])
        state["tr"] = rng.choice([0, regs["line_rate"], state["cr"] * 10 + 1, state["tr"]]) \
            & ((1 << BUILD.rate_width) - 1)
    if rng.random() < 0.6:
        state["t_dl"] = (t + rng.choice([0, 1, -1, 1 << (W - 1), (1 << (W - 1)) - 1])) & MASK
    kind = rng.choice([EventKind.TX, EventKind.TX, EventKind.CN, EventKind.TIMER])
    payload = None
    if kind == EventKind.TX:
        top = (1 << BUILD.byte_width) - 1
        bc = state["bc"]
        payload = rng.choice([bc, max(bc - 1, 0), min(bc + 1, top), 0, top, rng.randint(0, top)])
    elif kind == EventKind.CN:
        payload = rng.choice([0, 63, rng.randrange(64)])
    return regs, state, kind, payload, t


def in_model_range(regs) -> bool:
    """The registers the model is specified for (random_regs' ranges: no reload overflows
    its field)."""
    reloads_fit = all(
        regs[f"{name}_lo{half}"] + regs[f"{name}_span{half}"] < 1 << width
        for name, width in (("byte", BUILD.byte_width), ("time", BUILD.timer_width))
        for half in ("", "_half"))
    return 6 <= regs["gd_shift"] and 1 <= regs["threshold"] < STAGE_MAX and \
        regs["min_dec_fac"] <= 256 and 1 <= regs["min_rate"] <= regs["line_rate"] and \
        reloads_fit


def run(latency: int, cycles: int, seed: int):
    rng = random.Random(f"{seed}-qcn-pipe-{latency}")
    h = Pair(latency)
    dp = h.comb
    lay, sp = dp.state_layout, spans(dp.state_layout)
    dpm = QcnDatapathModel(dp)
    stats = {"pipe": 0, "model": 0, "draws": 0}

    def outputs(ctx, key):
        nxt, wv, wake, exp, late = (ctx.get(s.as_value() if hasattr(s, "as_value") else s)
                                    for s in h.outs[key])
        return nxt, wv, wake, exp, late

    async def bench(ctx):
        block, regs, left = 0, None, 0
        flight = []          # (block, vector index, combinational outputs) in input order
        lfsrs = [dpm.lfsr] * 8   # the model's LFSR after each cycle
        for c in range(cycles + latency - 1):
            if left == 0:    # new registers: the pipeline's updates in flight become stale
                block += 1
                left = rng.randint(1, 60)
                x = rng.random()
                regs = random_regs(rng) if x < 0.5 else arbitrary_regs(rng, dp) if x < 0.8 \
                    else {**random_regs(rng), "gd_shift": rng.randrange(16),
                          "threshold": rng.choice([0, 1, 254, 255])}
            left -= 1
            if rng.random() < 0.5 and in_model_range(regs):
                vec = random_vector(rng, regs)
            else:
                vec = arbitrary_vector(rng, dp, regs)
            _, state, kind, payload, t = vec
            valid = rng.random() < 0.8
            ctx.set(h.regs.as_value(), dp.regs_layout.const(regs).as_bits())
            ctx.set(h.state.as_value(), lay.const(state).as_bits())
            ctx.set(h.kind, kind)
            ctx.set(h.tx_bytes, payload if kind == EventKind.TX else 0)
            ctx.set(h.cn.as_value(), payload if kind == EventKind.CN else 0)
            ctx.set(h.t, t)
            ctx.set(h.valid, valid)
            comb = outputs(ctx, "comb")
            flight.append((block, c, comb))
            # the model, its LFSR advanced by the valid updates only
            model = dpm if valid else copy.copy(dpm)
            before = model.lfsr
            want = model.update(regs, state, kind, payload, t)
            stats["draws"] += valid and model.lfsr != before
            if in_model_range(regs):
                got = (unpack(sp, comb[0]), comb[2] if comb[1] else None, bool(comb[3]),
                       comb[4] if comb[3] else 0)
                assert got == tuple(want), (f"CC_SEED={seed} L={latency} cycle {c}", vec)
                stats["model"] += 1
            # the pipeline's outputs of the inputs of L - 1 cycles ago
            if len(flight) >= latency:
                b, c0, want_pipe = flight.pop(0)
                if b == block:
                    got_pipe = outputs(ctx, "pipe")
                    assert got_pipe == want_pipe, (
                        f"CC_SEED={seed} L={latency}: inputs of cycle {c0} (read at {c})",
                        unpack(sp, got_pipe[0]), unpack(sp, want_pipe[0]), got_pipe[1:],
                        want_pipe[1:])
                    stats["pipe"] += 1
            await ctx.tick()
            # the LFSRs after this cycle: the combinational one's has drawn for this cycle's
            # update, the pipeline's (drawing lfsr_lag cycles later) for that of lfsr_lag ago
            lfsrs.append(dpm.lfsr)
            assert ctx.get(dp.lfsr) == dpm.lfsr, (f"CC_SEED={seed} cycle {c}")
            assert ctx.get(h.pipe.lfsr) == lfsrs[-1 - h.pipe.lfsr_lag], \
                (f"CC_SEED={seed} L={latency} cycle {c}")

    sim = Simulator(h)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return stats


@pytest.mark.parametrize("latency", [2, 3, 4, 5, 6, 7])
def test_pipeline_equals_combinational_and_model(latency):
    print(f"CC_SEED={SEED}")
    cycles = CYCLES if latency == QCN_PIPE_LATENCY else CYCLES // 5
    stats = run(latency, cycles, SEED)
    print(stats)
    assert stats["pipe"] > cycles // 2 and stats["model"] > cycles // 10
    assert stats["draws"] > cycles // 10


def test_latency_values():
    assert QcnDatapath(BUILD, W).latency == 1
    assert QcnDatapath(BUILD, W, latency=4).latency == 4
    for bad in (0, 8):
        with pytest.raises(ConfigError, match="latency"):
            QcnDatapath(BUILD, W, latency=bad)
