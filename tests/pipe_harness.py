"""Amaranth-simulation runners for a pipelined engine datapath (``latency = L``) on its own:
one new input vector per clock, each vector's outputs read ``L - 1`` cycles later (the
:mod:`hw.nic.flow_datapath` contract), the registers held for a whole run; and a chained run
(one flow: each event on the state the previous one produced, ``L`` cycles apart).  Used by
``test_timely_engine.py`` and ``test_swift_engine.py``."""

from __future__ import annotations

from amaranth.sim import Simulator

from hw.nic.flow_datapath import EventKind
from tests.datapath_harness import Harness, spans, unpack

__all__ = ["run_pipe", "run_groups", "run_chain", "check_pipe_against_model",
           "check_groups_against_model"]


def _set(ctx, h, dp, lay, state, kind, payload, t):
    ctx.set(h.state.as_value(), lay.const(state).as_bits())
    ctx.set(h.kind, kind)
    ctx.set(h.tx_bytes, payload if kind == EventKind.TX else 0)
    ctx.set(h.cn.as_value(), (payload or 0) if kind == EventKind.CN else 0)
    ctx.set(h.t, t)


def _get(ctx, h, sp):
    expired = bool(ctx.get(h.expired))
    return (unpack(sp, ctx.get(h.next.as_value())),
            ctx.get(h.wake) if ctx.get(h.wake_valid) else None, expired,
            ctx.get(h.late) if expired else 0)


def run_pipe(dp, regs: dict, vectors) -> list[tuple]:
    """Each ``(state, kind, payload, t)`` vector issued on its own cycle (``valid`` high);
    returns ``(next_state, wake, expired, late)`` of each (``wake`` None if not valid)."""
    return run_groups(dp, [(regs, vectors)])[0]


def run_groups(dp, groups) -> list[list[tuple]]:
    """:func:`run_pipe` of each ``(regs, vectors)`` group in turn, in one simulation (building
    one costs seconds, a vector a few milliseconds): each group's registers are held until its
    last vector's outputs are read, so no update sees another group's registers.  Returns the
    outputs of each group."""
    h = Harness(dp)
    lay = dp.state_layout
    sp = spans(lay)
    L = dp.latency
    outs: list[list[tuple]] = []

    async def bench(ctx):
        ctx.set(h.valid, 1)
        for regs, vectors in groups:
            ctx.set(h.regs.as_value(), dp.regs_layout.const(regs).as_bits())
            out: list[tuple] = []
            for i in range(len(vectors) + L - 1):
                if i < len(vectors):
                    _set(ctx, h, dp, lay, *vectors[i])
                if i >= L - 1:
                    out.append(_get(ctx, h, sp))
                if L > 1:
                    await ctx.tick()
            outs.append(out)

    sim = Simulator(h)
    if dp.latency > 1:
        sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return outs


def check_pipe_against_model(dp, model, regs: dict, vectors) -> None:
    """:func:`run_pipe` of ``vectors``; each vector's next state must equal the bit-exact
    ``model``'s for the same registers, state and event (a TIMER event has no payload)."""
    check_groups_against_model(dp, model, [(regs, vectors)])


def check_groups_against_model(dp, model, groups) -> list[list[tuple]]:
    """:func:`check_pipe_against_model` of each ``(regs, vectors)`` group, in one simulation
    (:func:`run_groups`); returns the outputs, for checks of the caller's own."""
    outs = run_groups(dp, groups)
    for (regs, vectors), out in zip(groups, outs, strict=True):
        for (state, kind, p, t), got in zip(vectors, out, strict=True):
            exp = model.update(regs, state, kind, p if kind != EventKind.TIMER else None, t)
            assert got[0] == exp.next_state, (regs, state, kind, hex(p))
    return outs


def run_chain(dp, regs: dict, state: dict, events) -> list[dict]:
    """One flow: each ``(kind, payload, t)`` of ``events`` applied to the state the previous
    one produced (``L`` cycles apart); returns the state after each."""
    h = Harness(dp)
    lay = dp.state_layout
    sp = spans(lay)
    L = dp.latency
    states: list[dict] = []

    async def bench(ctx):
        nonlocal state
        ctx.set(h.regs.as_value(), dp.regs_layout.const(regs).as_bits())
        ctx.set(h.valid, 1)
        for kind, payload, t in events:
            _set(ctx, h, dp, lay, state, kind, payload, t)
            for _ in range(L - 1):
                await ctx.tick()
            state = _get(ctx, h, sp)[0]
            states.append(state)
            if L > 1:
                await ctx.tick()

    sim = Simulator(h)
    if dp.latency > 1:
        sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return states
