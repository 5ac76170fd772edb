"""The testbench both timer services' tests drive (:class:`hw.nic.timer_wheel.TimerWheel`,
:class:`hw.nic.timer_calendar.TimerCalendar`: the same ports, ``timer_service_members``): the
DUT's inputs set each cycle from the test's ``step``, and its pop and statistics compared with
the model's outputs every cycle."""

from __future__ import annotations

import os
import random

from tests.streams import run_testbenches

__all__ = ["random_seed", "drive"]


def random_seed() -> int:
    """``CC_SEED``, else a fresh one; printed so that a failing run can be repeated."""
    seed = int(os.environ.get("CC_SEED", random.randrange(1 << 30)))
    print(f"CC_SEED={seed}")
    return seed


def drive(dut, cycles: int, time_width: int, step, names) -> None:
    """Run ``cycles`` cycles: ``step(cyc, now)`` returns ``(ins, ready, exp)`` (the insert, None
    or (flow, gen, deadline); the pop's ready; the model's outputs for the cycle), the DUT's
    ports are set from it and its ``pop`` (valid; flow, gen, slot when valid) and the
    statistics ``names`` must equal ``exp``'s."""
    mask = (1 << time_width) - 1

    async def bench(ctx):
        for cyc in range(cycles):
            now = cyc & mask
            ins, rdy, exp = step(cyc, now)
            ctx.set(dut.now, now)
            ctx.set(dut.ins.valid, ins is not None)
            if ins is not None:
                ctx.set(dut.ins.payload, {"flow": ins[0], "gen": ins[1],
                                          "deadline": ins[2] & mask})
            ctx.set(dut.pop.ready, rdy)
            valid = ctx.get(dut.pop.valid)
            assert valid == exp.pop_valid, (cyc, "pop.valid", valid, exp)
            if valid:
                p = ctx.get(dut.pop.payload)
                got = (p.flow, p.gen, p.slot)
                assert got == (exp.pop_flow, exp.pop_gen, exp.pop_slot), (cyc, got, exp)
            for n in names:
                got = ctx.get(getattr(dut, n))
                assert got == getattr(exp, n), (cyc, n, got, exp)
            await ctx.tick()

    run_testbenches(dut, bench)
