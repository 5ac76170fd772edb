"""DCQCN reaction point RTL in the Amaranth simulator: every state bit equals the golden model
on every cycle, for each profile (short random runs; the long runs are on Verilator)."""

from __future__ import annotations

import random

import pytest
from amaranth.sim import Simulator

from hw.nic.dcqcn_config import PROFILES, DcqcnRpConfig
from hw.nic.dcqcn_rp import DcqcnRp
from sim.models.dcqcn import DcqcnCnp, DcqcnRpModel, DcqcnTx, pack_event, unpack_state


def small(profile: str) -> DcqcnRpConfig:
    """Short timers so that a short run expires every timer many times (T 250, K 125, P 50
    cycles at 156.25 MHz)."""
    base = DcqcnRpConfig.profile(profile)
    return base.replace(rpg_time_reset=1.6, dce_tcp_rtt=0.8, rate_reduce_monitor_period=0.32,
                        rpg_byte_reset=min(base.rpg_byte_reset, 30_000))


@pytest.mark.parametrize("profile", PROFILES)
def test_rtl_matches_model_every_cycle(profile):
    cfg = small(profile)
    dut, model = DcqcnRp(cfg), DcqcnRpModel(cfg)
    rng = random.Random(sum(map(ord, profile)))
    sim = Simulator(dut)
    sim.add_clock(4e-9)

    async def bench(ctx):
        assert ctx.get(dut.event.ready) == 1
        for cycle in range(1500):
            x = rng.random()
            ev = DcqcnCnp() if x < 0.05 else DcqcnTx(rng.randint(64, 9000)) if x < 0.3 else None
            ctx.set(dut.event.valid, ev is not None)
            if ev is not None:
                ctx.set(dut.event.payload.as_value(), pack_event(cfg, ev))
            await ctx.tick()
            model.step(ev)
            got = unpack_state(cfg, ctx.get(dut.state.as_value()))
            assert got == model.state, f"cycle {cycle}: RTL {got} != model {model.state}"
            assert ctx.get(dut.rate) == model.state.rc
        assert model.cuts > 10

    sim.add_testbench(bench)
    sim.run()
