"""Testbench base for blocks whose whole per-flow state is an output port.

Rate engines with per-cycle timers (the DCQCN and QCN reaction points) expose their state as one
packed ``state`` port and take events one per clock on an ``event`` stream that is always ready.
Such a block is checked by stepping a cycle-accurate model alongside: the testbench works at
mid-period (half a clock after a rising edge), where it reads the state register and drives the
next event; an idle gap of ``n`` cycles is one ``Timer`` and the model skips the same ``n``
cycles (``model.idle(n)``), so long idle periods with many timer expiries cost no Python per
cycle.  The whole state is compared after every event and every idle gap.

A subclass gives the model, the codec (``codec.state(bits)``, ``codec.event(ev)``) and
``rate_of(state)``, the field that must equal the ``rate`` output port.
"""

from __future__ import annotations

from cocotb.triggers import RisingEdge, Timer

from .tb import CLOCK_PERIOD_NS, TBBase


class StateCompareTB(TBBase):
    def __init__(self, dut, seed: int, model, codec):
        super().__init__(dut, seed)
        self.model = model
        self.codec = codec
        self.checks = 0
        self.last: list = []
        dut.event__valid.value = 0
        dut.event__payload.value = 0

    @staticmethod
    def rate_of(state) -> int:
        raise TypeError("a StateCompareTB subclass says which state field is the rate")

    async def start(self):
        await self.reset()               # returns after the first edge with rst low (idle)
        self.model.idle(1)
        await Timer(CLOCK_PERIOD_NS // 2, unit="ns")
        assert int(self.dut.event__ready.value) == 1
        self.check("after reset")

    def state(self):
        return self.codec.state(self.dut.state.value.to_unsigned())

    def check(self, what: str):
        got, exp = self.state(), self.model.state
        if got != exp:
            raise AssertionError(f"{what} at model cycle {self.model.cycle}:\n  RTL   {got}\n"
                                 f"  model {exp}\n  last events: {self.last[-6:]}")
        assert int(self.dut.rate.value) == self.rate_of(exp)
        self.checks += 1

    async def idle(self, n: int):
        if n:
            await Timer(n * CLOCK_PERIOD_NS, unit="ns")
            self.model.idle(n)
            self.check(f"after {n} idle cycles")

    async def event(self, ev):
        self.dut.event__payload.value = self.codec.event(ev)
        self.dut.event__valid.value = 1
        await RisingEdge(self.dut.clk)
        self.model.step(ev)
        self.dut.event__valid.value = 0
        self.last.append((self.model.cycle, ev))
        await Timer(CLOCK_PERIOD_NS // 2, unit="ns")
        self.check(f"after {ev}")
