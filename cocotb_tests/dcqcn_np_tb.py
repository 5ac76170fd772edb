"""cocotb testbench: the exported DCQCN notification point against its golden model, cycle by
cycle (``CC_CONFIG`` JSON from ``cocotb_tests/test_dcqcn_np.py``).

Every cycle the testbench drives a packet (random flow, CE or not, some flows out of range) and
the CNP sink's ready (random back-pressure), and compares ``cnp.valid`` / ``cnp.payload`` with
what the model offers.  Long idle periods (windows and periodic checks expire) are one Timer,
with the sink always ready and the model stepped cycle by cycle in Python.
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import RisingEdge, Timer

from cocotb_tests.infra.tb import (
    CLOCK_PERIOD_NS,
    TBBase,
    env_config,
    env_count,
    env_seed,
)
from hw.nic.dcqcn_np_config import DcqcnNpConfig
from sim.models.dcqcn_np import NpModel


class NpTB(TBBase):
    def __init__(self, dut, cfg: DcqcnNpConfig, seed: int):
        super().__init__(dut, seed)
        self.cfg, self.model = cfg, NpModel(cfg)
        self.checks = 0
        dut.event__valid.value = 0
        dut.event__payload.value = 0
        dut.cnp__ready.value = 0

    async def start(self):
        await self.reset()
        self.model.step(None, False)          # the first cycle with reset low
        await Timer(CLOCK_PERIOD_NS // 2, unit="ns")

    def check(self):
        offer = self.model.offer()
        valid = int(self.dut.cnp__valid.value)
        assert valid == (offer is not None), f"cycle {self.model.cycle}: valid {valid}, " \
                                             f"model offers {offer}"
        if offer is not None:
            got = int(self.dut.cnp__payload.value)
            assert got == offer, f"cycle {self.model.cycle}: flow {got}, model {offer}"
        self.checks += 1

    async def cycle_with(self, flow: int | None, ce: bool, ready: bool):
        """At mid-period: drive, compare, pass one edge."""
        dut = self.dut
        dut.event__valid.value = int(flow is not None)
        dut.event__payload.value = ((flow or 0) | (int(ce) << self.cfg.flow_width))
        dut.cnp__ready.value = int(ready)
        await Timer(1, unit="ns")             # settle the combinational outputs
        self.check()
        await RisingEdge(dut.clk)
        self.model.step(flow if (flow is not None and ce) else None, ready)
        await Timer(CLOCK_PERIOD_NS // 2, unit="ns")

    async def idle(self, n: int):
        dut = self.dut
        dut.event__valid.value = 0
        dut.cnp__ready.value = 1
        await Timer(n * CLOCK_PERIOD_NS, unit="ns")
        for _ in range(n):
            self.model.step(None, True)
        self.check()


@cocotb.test()
async def random_packets(dut):
    cfg = env_config(DcqcnNpConfig)
    tb = NpTB(dut, cfg, env_seed(1))
    n = env_count("CC_EVENTS", 100000)
    rng = tb.rng
    await tb.start()
    p_ready, p_ce = 0.5, 0.5
    for i in range(n):
        if i % 10_000 == 0:
            p_ready = rng.choice([0.05, 0.3, 1.0])   # a CNP generator busy 18 cycles per CNP
            p_ce = rng.choice([0.05, 0.5, 1.0])
        if rng.random() < 0.002:
            await tb.idle(rng.randint(cfg.n_cycles, 4 * cfg.n_cycles + 10))
        flow = rng.randrange(cfg.flows + 2)          # two flow numbers out of range
        await tb.cycle_with(flow, rng.random() < p_ce, rng.random() < p_ready)
    tb.log.info("%d packets, %d cycles, %d CNPs sent, %d comparisons", n, tb.model.cycle,
                len(tb.model.sent), tb.checks)
    assert len(tb.model.sent) > n // 100
