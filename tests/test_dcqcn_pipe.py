"""The pipelined DCQCN datapath (``DcqcnDatapath(..., pipelined=True)``, latency L) against the
combinational one (latency 1) built in the same Amaranth simulation, with a new random
(state, event, t) every cycle: every DatapathOut field of the pipelined datapath L - 1 cycles
later equals the combinational one's of the same cycle (the registers constant while updates
are in flight, as the engine guarantees).  The combinational outputs are also checked against
the bit-exact model (``dcqcn_deadline_update``) as ``tests/test_dcqcn_engine.py`` does.

Vectors: the four profiles' registers (half of them with random knobs and every switch code),
the random and boundary states of ``test_dcqcn_engine``, plus boundary states (rates 0 and full
scale, alpha 0 / 1.0 / above 1.0, stages at 255, deadlines equal to t, wrapping) and, against the
combinational datapath only, states and registers of random bits (the engine's WRITE can store
any value).  ``CC_SEED`` sets the seed, ``CC_PIPE_VECTORS`` the vectors per profile (default
300).
"""

from __future__ import annotations

import os
import random

import pytest
from amaranth.hdl import Elaboratable, Module, Signal
from amaranth.sim import Simulator

from hw.nic.dcqcn_config import ALPHA_ONE, PROFILES, STAGE_MAX
from hw.nic.dcqcn_engine import DcqcnDatapath
from hw.nic.flow_datapath import EventKind
from sim.models.dcqcn import dcqcn_deadline_update
from tests.datapath_harness import random_event, spans, unpack
from tests.test_dcqcn_engine import BUILD, W, random_regs, random_vector

SEED = int(os.environ.get("CC_SEED", "20251125"))
N_VECTORS = int(os.environ.get("CC_PIPE_VECTORS", "300"))
MASK = (1 << W) - 1


class _Pair(Elaboratable):
    """The combinational and the pipelined datapath on the same inputs (``pre`` computed from
    the inputs in the same cycle: valid in the first modify cycle, as the engine gives it)."""

    def __init__(self, comb, piped):
        self.dps = (comb, piped)
        self.state = Signal(comb.state_layout)
        self.kind = Signal(EventKind)
        self.tx_bytes = Signal(comb.tx_bytes_width)
        self.cn = Signal(comb.cn_layout)
        self.t = Signal(comb.time_width)
        self.regs = Signal(comb.regs_layout)
        self.valid = Signal()
        self.outs = []

    def elaborate(self, platform):
        m = Module()
        for dp in self.dps:
            pre = dp.pre(m, kind=self.kind, tx_bytes=self.tx_bytes, cn=self.cn, t=self.t,
                         regs=self.regs)
            out = dp.build(m, state=self.state, kind=self.kind, tx_bytes=self.tx_bytes,
                           cn=self.cn, t=self.t, regs=self.regs, pre=pre, valid=self.valid)
            sigs = (Signal(dp.state_layout), Signal(), Signal(dp.time_width), Signal(),
                    Signal(dp.time_width))
            m.d.comb += [sigs[0].eq(out.next_state), sigs[1].eq(out.wake_valid),
                         sigs[2].eq(out.wake), sigs[3].eq(out.expired), sigs[4].eq(out.late)]
            self.outs.append(sigs)
        return m


def wild_regs(rng, dp) -> dict:
    """Every register a random value of its width (what a register write may store)."""
    return {name: rng.randrange(1 << width) for name, width, _ in dp.regs}


def wild_state(rng, dp) -> dict:
    """Every state field random bits (the engine's WRITE), with boundary values mixed in."""
    state = {}
    for name, f in dp.state_layout:
        top = (1 << f.width) - 1
        state[name] = rng.choice([0, top, rng.randrange(top + 1), rng.randrange(top + 1)])
    return state


def boundary_vector(rng, regs):
    """A state at the boundaries: rates 0 / min / max / full scale, alpha 0 / 1.0 / above 1.0,
    stages at 255, deadlines equal to t, t +/- 1 and across the wrap."""
    RW, BW = BUILD.rate_width, BUILD.byte_width
    t = rng.choice([0, MASK, 1 << (W - 1), (1 << (W - 1)) - 1, rng.randrange(1 << W)])
    full = (1 << RW) - 1
    state = {
        "rc": rng.choice([0, 1, regs["max_rate"], full]),
        "rt": rng.choice([0, regs["min_rate"], regs["max_rate"], full]),
        "alpha": rng.choice([0, 1, ALPHA_ONE, ALPHA_ONE + 1, (1 << 25) - 1]),
        "t_stage": rng.choice([0, STAGE_MAX, STAGE_MAX - 1]),
        "b_stage": rng.choice([0, STAGE_MAX, STAGE_MAX - 1]),
        "mode": rng.randrange(4), "bc": rng.choice([0, 1, (1 << BW) - 1]),
        "active": rng.randrange(2), "alpha_flag": rng.randrange(2),
        "dec_flag": rng.randrange(2),
    }
    for k in ("a", "t", "d"):
        state[k + "_on"] = int(rng.random() < 0.8)
        state[k + "_dl"] = (t + rng.choice([0, 0, -1, 1, 1 << (W - 1), (1 << (W - 1)) - 1])) \
            & MASK
    kind, payload = random_event(rng, state["bc"], BW, lambda: 0)
    return regs, state, kind, payload, t


def batches(rng, profile, n):
    """``(regs, vectors, check_model)`` batches: one register set per batch."""
    comb = DcqcnDatapath(BUILD, W)
    left = n
    while left > 0:
        size = min(left, rng.randint(8, 40))
        left -= size
        x = rng.random()
        if x < 0.15:
            regs = wild_regs(rng, comb)
            vecs = []
            for _ in range(size):
                state = wild_state(rng, comb)
                t = rng.randrange(1 << W)
                kind, payload = random_event(rng, state["bc"], BUILD.byte_width, lambda: 0)
                vecs.append((regs, state, kind, payload, t))
            yield regs, vecs, False
            continue
        regs = random_regs(rng, profile)
        vecs = [boundary_vector(rng, regs) if rng.random() < 0.3 else random_vector(rng, regs)
                for _ in range(size)]
        yield regs, vecs, True


def run_pair(vectors_batches):
    """Drive both datapaths with one vector per cycle; returns ``(comb, piped, latency)``
    outputs per checked vector (``(next_state, wake, expired, late)``, as ``run_rtl``)."""
    comb, piped = DcqcnDatapath(BUILD, W), DcqcnDatapath(BUILD, W, pipelined=True)
    L = piped.latency
    h = _Pair(comb, piped)
    lay, rl = comb.state_layout, comb.regs_layout
    sp = spans(lay)
    got = {0: [], 1: []}       # per datapath: outputs per cycle
    checked = []               # (cycle, regs, vector, check_model)

    def read(outs):
        nxt, wv, wake, expired, late = outs
        e = bool(ctx_get(expired))
        return (unpack(sp, ctx_get(nxt.as_value())), ctx_get(wake) if ctx_get(wv) else None,
                e, ctx_get(late) if e else 0)

    ctx_get = None

    async def bench(ctx):
        nonlocal ctx_get
        ctx_get = ctx.get
        cycle = 0

        def drive(regs, state, kind, payload, t):
            ctx.set(h.regs.as_value(), rl.const(regs).as_bits())
            ctx.set(h.state.as_value(), lay.const(state).as_bits())
            ctx.set(h.kind, kind)
            ctx.set(h.tx_bytes, payload if kind == EventKind.TX else 0)
            ctx.set(h.cn.as_value(), 0)
            ctx.set(h.t, t)

        for _regs, vecs, model in vectors_batches:
            # the registers are constant while updates are in flight: L - 1 filler cycles
            # (the batch's last vector again, not checked) before the next batch's registers
            for i, vec in enumerate(vecs + [vecs[-1]] * (L - 1)):
                drive(*vec)
                got[0].append(read(h.outs[0]))
                got[1].append(read(h.outs[1]))
                if i < len(vecs):
                    checked.append((cycle, vec, model))
                await ctx.tick()
                cycle += 1
        for _ in range(L - 1):
            got[1].append(read(h.outs[1]))
            await ctx.tick()

    sim = Simulator(h)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return [(vec, model, got[0][cyc], got[1][cyc + L - 1]) for cyc, vec, model in checked], L


@pytest.mark.parametrize("profile", PROFILES)
def test_pipelined_equals_combinational(profile):
    rng = random.Random(f"{SEED}-pipe-{profile}")
    print(f"CC_SEED={SEED} CC_PIPE_VECTORS={N_VECTORS}")
    results, L = run_pair(list(batches(rng, profile, N_VECTORS)))
    assert L == DcqcnDatapath(BUILD, W, pipelined=True).latency > 1
    n_model = 0
    for i, ((regs, state, kind, payload, t), model, comb, piped) in enumerate(results):
        where = f"seed {SEED} profile {profile} vector {i}"
        assert piped == comb, (where, regs, state, kind, payload, t)
        if model:
            want = dcqcn_deadline_update(regs, state, kind, payload, t, W)
            assert comb == want, (where, regs, state, kind, payload, t)
            n_model += 1
    assert len(results) == N_VECTORS and n_model > N_VECTORS // 2


def test_latency_and_default():
    assert DcqcnDatapath(BUILD, W).latency == 1
    assert DcqcnDatapath(BUILD, W, pipelined=True).latency == 12
