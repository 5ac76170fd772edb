"""What the LDCP engine tests share (``test_ldcp_engine.py``, ``test_ldcp_tx_engine.py``,
``test_ldcp_rx_engine.py``): a small multi-flow engine's configuration, the clock's
cycles in microseconds, a datapath model driven event by event (:class:`ModelDriver`), the
datapath alone (RTL) against its model one vector per clock (:func:`check_vectors`),
and the engine (RTL) against the engine model every cycle (:func:`engine_harness`)."""

from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from hw.nic.flow_datapath import EventKind
from hw.nic.flow_engine_config import FlowEngineConfig
from tests.datapath_harness import Harness as DpHarness
from tests.datapath_harness import spans, unpack
from tests.test_flow_engine import SEED, Harness

__all__ = ["CLK_MHZ", "us", "flow_engine", "ModelDriver", "check_vectors",
           "engine_harness", "run_queues", "finish", "simulate"]

#: the engines' clock (the FlowEngineConfig default), MHz
CLK_MHZ = 156.25


def us(cycles: float) -> float:
    """``cycles`` of the clock in microseconds (the configurations take times in us)."""
    return cycles / CLK_MHZ


def flow_engine(n_flows: int, time_width: int, horizon: int, slots: int,
                out_fifo_depth: int) -> FlowEngineConfig:
    """A small multi-flow engine: 4 wheel entries per flow up to 64 flows, 2 above (the wheel's
    capacity for a 1024-flow table)."""
    return FlowEngineConfig(n_flows=n_flows, time_width=time_width, wheel_horizon=horizon,
                            wheel_slots=slots, out_fifo_depth=out_fifo_depth,
                            wheel_entries_per_flow=4 if n_flows <= 64 else 2)


class ModelDriver:
    """A datapath's golden model (``MODEL`` of ``DATAPATH(cfg)``) with its registers (the reset
    values, ``regs`` overriding) and one flow's state ``s`` (the model's initial state);
    :meth:`_do` applies one event to ``s`` (``last``: the model's output)."""

    DATAPATH: type
    MODEL: type

    def __init__(self, cfg, **regs):
        self.cfg = cfg
        self.dp = self.DATAPATH(cfg)
        self.m = self.MODEL(self.dp)
        self.regs = self.m.regs_reset()
        self.regs.update(regs)
        self.s = self.m.init_state(self.regs)
        self.last = None

    def _do(self, kind, payload, t):
        self.last = self.m.update(self.regs, self.s, kind, payload, t)
        self.s = self.last.next_state
        return self.last


def check_vectors(dp, model, regs: dict, vectors) -> list:
    """The datapath alone (RTL, Amaranth simulation, no engine), one ``(state, kind, payload,
    t)`` vector per clock with the registers ``regs`` (a TX's payload on ``tx_bytes``, a CN's on
    ``cn``): its outputs ``L - 1`` clocks later (next state, wake-up or None, expired, lateness)
    must equal ``model``'s for every vector.  Returns the model's outputs, in order."""
    h = DpHarness(dp)
    lay = dp.state_layout
    sp = spans(lay)
    L = dp.latency
    got = []

    async def bench(ctx):
        ctx.set(h.regs.as_value(), dp.regs_layout.const(regs).as_bits())
        for i in range(len(vectors) + L - 1):
            if i < len(vectors):
                state, kind, payload, t = vectors[i]
                ctx.set(h.state.as_value(), lay.const(state).as_bits())
                ctx.set(h.kind, kind)
                ctx.set(h.cn.as_value(), payload if kind == EventKind.CN else 0)
                ctx.set(h.tx_bytes, payload if kind == EventKind.TX else 0)
                ctx.set(h.t, t)
                ctx.set(h.valid, 1)
            if i >= L - 1:
                expired = bool(ctx.get(h.expired))
                got.append((unpack(sp, ctx.get(h.next.as_value())),
                            ctx.get(h.wake) if ctx.get(h.wake_valid) else None, expired,
                            ctx.get(h.late) if expired else 0))
            await ctx.tick()

    top = Module()                  # (a sync domain for L = 1, whose update is combinational)
    top.submodules.h = h
    tick = Signal()
    top.d.sync += tick.eq(~tick)
    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    wants = []
    for i, ((state, kind, payload, t), g) in enumerate(zip(vectors, got, strict=True)):
        want = model.update(regs, state, kind, payload, t)
        assert g == (want.next_state, want.wake, want.expired, want.late), (i, state, kind,
                                                                           payload, t)
        wants.append(want)
    return wants


def engine_harness(cfg, datapath: type, model: type) -> Harness:
    """The engine of ``cfg.engine`` around ``datapath(cfg)`` (RTL) against the engine model
    around ``model`` every cycle (:class:`tests.test_flow_engine.Harness`, seed ``CC_SEED``)."""
    return Harness(cfg.engine, datapath(cfg), seed=SEED, model_dp=model)


async def run_queues(h: Harness, ctx, step: int) -> None:
    """Run ``step`` clocks at a time until the inputs queued so far are all offered."""
    while any(h.queues.values()):
        await h.run(ctx, step)


async def finish(h: Harness, ctx, cycles: int) -> None:
    """The end of a random run: ``cycles`` more clocks (the timers fall due), then the expiry
    counter read through the register port."""
    await h.run(ctx, cycles)
    await h.read_counter(ctx, "expiries")


def simulate(h: Harness, body) -> dict:
    """Run ``body`` (every output compared every cycle); no wheel entry may have been lost.
    Returns the engine model's counters."""
    h.simulate(body)
    assert h.model.wheel.out.overflow_count == 0
    return h.model.counters
