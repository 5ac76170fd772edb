"""LDCP window engine RTL in Amaranth's simulator against the bit-exact model.

The datapath takes one random (window, event) per clock with no idle cycles and every result
is compared with :func:`sim.models.ldcp_window.update`; the single-flow wrapper is compared
with :class:`sim.models.ldcp_window.LdcpWindowModel` on every output, every cycle.  The long
random runs are on Verilator (cocotb_tests/test_ldcp_window.py).
"""

from __future__ import annotations

import random
from collections import deque

import pytest
from amaranth.sim import Simulator

from hw.layouts import LdcpDecRule, LdcpIncRule
from hw.nic.ldcp_window import LdcpWindow, LdcpWindowUpdate
from hw.nic.ldcp_window_config import ONE, UPDATE_LATENCY, LdcpWindowConfig, LdcpWindowReg
from sim.models.ldcp_window import Ack, LdcpWindowModel, update

CONFIGS = [
    LdcpWindowConfig(alpha=1.0, beta=1.0, gamma=1 / 4, m=4, cw_max=64.0, cw_init=4.0,
                     rtt_us=0.16),                        # RTT 25 cycles at 156.25 MHz
    LdcpWindowConfig(alpha=0.3, beta=0.1, gamma=1 / 16, m=16, cw_max=300.7, cw_init=0.5,
                     rtt_us=0.32),                        # RTT 50 cycles
]


def random_state(rng, regs, cfg):
    r = rng.random()
    if r < 0.3:
        cw = rng.randint(regs.gamma, ONE - 1)
    elif r < 0.4:
        cw = rng.choice((regs.gamma, ONE, regs.cw_max, ONE - 1, ONE + 1))
    else:
        cw = rng.randint(ONE, regs.cw_max)
    nm = nu = 0
    k = rng.random()
    if k < 0.4:
        nm = rng.randint(1, cfg.m)
    elif k < 0.8:
        nu = rng.randint(1, cfg.m)
    else:
        nm = rng.randint(0, cfg.n_max_event // 2)
        nu = rng.randint(0, cfg.n_max_event // 2)
    return cw, nm, nu


@pytest.mark.parametrize("cfg", CONFIGS, ids=["g4", "g16"])
def test_datapath_back_to_back(cfg):
    dut = LdcpWindowUpdate(cfg)
    regs = cfg.registers()
    rng = random.Random(1)
    count = 1500
    inputs = [random_state(rng, regs, cfg) for _ in range(count)]
    results = []

    async def bench(ctx):
        ctx.set(dut.params, {"alpha": regs.alpha, "beta": regs.beta, "gamma": regs.gamma,
                             "cw_max": regs.cw_max})
        pending = deque()
        for cycle in range(count + UPDATE_LATENCY):
            if cycle < count:
                cw, nm, nu = inputs[cycle]
                ctx.set(dut.i_valid, 1)
                ctx.set(dut.i, {"cw": cw, "n_marked": nm, "n_unmarked": nu})
                pending.append(inputs[cycle])
            else:
                ctx.set(dut.i_valid, 0)
            await ctx.tick()
            if ctx.get(dut.o_valid):
                o = ctx.get(dut.o)
                results.append((o.cw, o.n_marked, o.n_unmarked, LdcpDecRule(o.dec),
                                LdcpIncRule(o.inc)))
                # o shows an update LATENCY - 1 edges after its issue edge
                assert len(results) == cycle - (UPDATE_LATENCY - 1) + 1

    sim = Simulator(dut)
    sim.add_clock(4e-9)
    sim.add_testbench(bench)
    sim.run()
    assert len(results) == count
    for (cw, nm, nu), got in zip(inputs, results, strict=True):
        u = update(regs, cw, nm, nu)
        assert got == (u.cw, u.n_marked, u.n_unmarked, u.dec, u.inc), (cw, nm, nu)


@pytest.mark.parametrize("cfg", CONFIGS, ids=["g4", "g16"])
def test_wrapper_every_cycle(cfg):
    dut = LdcpWindow(cfg)
    model = LdcpWindowModel(cfg)
    rng = random.Random(2)
    cycles = 4000
    stats = {"updates": 0, "ticks": 0, "writes": 0}

    async def bench(ctx):
        p_ack, p_mark = 0.0, 0.5          # starts silent: the timer of cw_init runs
        for cycle in range(cycles):
            if cycle > 300 and rng.random() < 0.02:
                p_ack = rng.choice((0.0, 0.02, 0.1, 0.5, 1.0))
                p_mark = rng.choice((0.0, 0.3, 0.7, 0.95, 1.0))
            ack = None
            if rng.random() < p_ack:
                ack = Ack(rng.random() < p_mark, rng.randint(0, (1 << cfg.n_width) - 1))
            sent = rng.random() < 0.3
            inflight = rng.randint(0, 40_000)
            write = None
            if ack is None and model.idle and rng.random() < 0.05:
                write = random_write(rng, model.regs)
                stats["writes"] += 1
            ctx.set(dut.csr_w.valid, write is not None)
            if write is not None:
                ctx.set(dut.csr_w.payload, {"addr": write[0], "data": write[1]})
            ctx.set(dut.ack.valid, ack is not None)
            if ack is not None:
                ctx.set(dut.ack.payload, {"ece": int(ack.ece), "n": ack.n})
            ctx.set(dut.sent, sent)
            ctx.set(dut.inflight, inflight)
            # sample this cycle (combinational outputs settle on the inputs just set)
            o = model.outputs()
            assert ctx.get(dut.ack.ready) == 1
            if write is not None:
                assert ctx.get(dut.csr_w.ready) == 1
            assert ctx.get(dut.cw) == o.cw, cycle
            assert ctx.get(dut.tick) == o.tick, cycle
            assert ctx.get(dut.credit) == o.credit, cycle
            assert ctx.get(dut.may_send) == o.may_send(inflight), cycle
            assert ctx.get(dut.upd_valid) == (o.update is not None), cycle
            if o.update is not None:
                u = ctx.get(dut.upd)
                assert (u.cw, u.n_marked, u.n_unmarked, LdcpDecRule(u.dec),
                        LdcpIncRule(u.inc)) == (o.update.cw, o.update.n_marked,
                                                o.update.n_unmarked, o.update.dec,
                                                o.update.inc), cycle
                stats["updates"] += 1
            stats["ticks"] += o.tick
            assert ctx.get(dut.busy) == (not model.idle), cycle
            model.edge(ack, sent, write)
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(4e-9)
    sim.add_testbench(bench)
    sim.run()
    assert stats["updates"] > 100 and stats["ticks"] >= 3 and stats["writes"] > 10, stats


def random_write(rng, regs):
    """A plausible register write: keeps gamma a power of two below 1 and cw_max >= 1."""
    reg = rng.choice(list(LdcpWindowReg))
    value = {
        LdcpWindowReg.ALPHA: rng.randint(1, ONE),
        LdcpWindowReg.BETA: rng.randint(1, ONE),
        LdcpWindowReg.GAMMA: ONE >> rng.randint(1, 8),
        LdcpWindowReg.CW_MAX: rng.randint(ONE, 200 * ONE),
        LdcpWindowReg.RTT: rng.randint(1, 80),
        LdcpWindowReg.MTU: rng.randint(64, 9216),
        LdcpWindowReg.CW: rng.randint(0, 300 * ONE),
    }[reg]
    return int(reg), value
