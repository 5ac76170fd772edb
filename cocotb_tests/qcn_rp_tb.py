"""cocotb testbench: the exported QCN reaction point against its bit-exact model.

Run through ``cocotb_tests/test_qcn_rp.py`` with the configuration as JSON in ``CC_CONFIG``.
Timing (as in the DCQCN RP testbench): the testbench works at mid-period, where it reads the
state register and drives the next event; an idle gap of ``n`` cycles is one ``Timer`` and the
model skips the same ``n`` cycles with :meth:`QcnRpModel.idle`.  The whole state (CR, TR, BC,
stages, timer, flags) and the ``rate`` port are compared after every event and idle gap.

A test runs on the build named by the runner (its configuration as JSON in ``CC_BUILD_CONFIG``,
default: ``CC_CONFIG``'s): the run-time registers that differ in the test's configuration (rates,
Gd, MinDecFac, the byte and timer reloads with their jitter spans) are written through ``csr_w``
right after reset, one per cycle, and the model, started from the build's configuration (the
reset state CR = TR = line rate, the widths, the LFSR), takes the same writes.
"""

from __future__ import annotations

import os

import cocotb
from cocotb.triggers import RisingEdge, Timer

from cocotb_tests.infra.state_tb import StateCompareTB
from cocotb_tests.infra.tb import CLOCK_PERIOD_NS, env_config, env_count, env_seed, test_seed
from hw.layouts.common import csr_write_layout
from hw.nic.qcn_rp_config import RATE_FRAC, QcnRpConfig
from sim.models.qcn import QcnCnm, QcnRpCodec, QcnRpModel, QcnTx

MBPS = 1 << RATE_FRAC


class RpTB(StateCompareTB):
    def __init__(self, dut, cfg: QcnRpConfig, seed: int):
        build_cfg = (env_config(QcnRpConfig, "CC_BUILD_CONFIG")
                     if "CC_BUILD_CONFIG" in os.environ else cfg)
        super().__init__(dut, seed, QcnRpModel(build_cfg), QcnRpCodec(build_cfg))
        self.cfg, self.build_cfg = cfg, build_cfg
        dut.csr_w__valid.value = 0

    async def start(self):
        await super().start()
        await self.write_config()

    async def write_config(self):
        """At mid-period after reset: write every register whose value in ``cfg`` differs from
        the build's reset value, one per cycle (the block is always ready; the model applies a
        write after the cycle that takes it, as the RTL does from the next cycle)."""
        build_map = self.build_cfg.register_map()
        layout = csr_write_layout(build_map.addr_width, build_map.data_width)
        writes = []
        for r in self.cfg.register_map().registers:
            b = build_map[r.name]
            assert r.reset < 1 << b.width, f"{r.name} = {r.reset} does not fit the build"
            if r.writable and r.reset != b.reset:
                writes.append((r.name, build_map.addr(r.name), r.reset))
        for _, addr, value in writes:
            self.dut.csr_w__payload.value = layout.const({"addr": addr, "data": value}).as_bits()
            self.dut.csr_w__valid.value = 1
            assert int(self.dut.csr_w__ready.value) == 1
            await RisingEdge(self.dut.clk)
            self.model.idle(1)
            self.model.write(addr, value)
            await Timer(CLOCK_PERIOD_NS // 2, unit="ns")
        self.dut.csr_w__valid.value = 0
        if writes:
            # the model has the test's registers; the state is still the reset state
            assert self.model.reg == self.cfg.registers()
            self.check("after the register writes")
            self.log.info("%d registers written: %s", len(writes), [w[0] for w in writes])

    @staticmethod
    def rate_of(state) -> int:
        return state.cr


@cocotb.test()
async def random_events(dut):
    """CNMs (all 64 feedback values) with random spacing, TX of random sizes (and the byte
    counter's edges), back-to-back events and idle gaps across several timer periods."""
    cfg = env_config(QcnRpConfig)
    tb = RpTB(dut, cfg, env_seed(1))
    n_events = env_count("CC_EVENTS", 40000)
    rng = tb.rng
    reg = cfg.registers()
    t_full = reg.time_lo[0] + reg.time_span[0]
    await tb.start()
    p_cnm, fbs = 0.05, set()
    for i in range(n_events):
        if i % 5_000 == 0:             # congested and calm phases (calm: hyper-active increase)
            p_cnm = rng.choice([0.002, 0.02, 0.05, 0.2])
        x = rng.random()
        gap = (0 if x < 0.6 else rng.randint(1, 5) if x < 0.9 else
               rng.randint(5, t_full) if x < 0.99 else rng.randint(t_full, 4 * t_full))
        await tb.idle(gap)
        if rng.random() < p_cnm:
            ev = QcnCnm(rng.randrange(64) if rng.random() < 0.9 else rng.choice((0, 63)))
            fbs.add(ev.fb)
        else:
            y = rng.random()
            bc = tb.model.state.bc
            ev = QcnTx(rng.randint(64, 9000) if y < 0.9 else rng.choice(
                [0, 1, max(0, bc - 1), bc, bc + 1, (1 << cfg.byte_width) - 1]))
        await tb.event(ev)
    m = tb.model
    tb.log.info("%d events, %d cycles, %d cuts, %d byte cycles, %d timer cycles, %d guards, "
                "%d state comparisons", n_events, m.cycle, m.cuts, m.byte_cycles,
                m.timer_cycles, m.guards, tb.checks)
    phases = {(b > cfg.threshold) + (t > cfg.threshold) for _, a, _, b, t, _ in m.log
              if a != "cut"}
    assert phases == {0, 1, 2}, f"FR/AI/HAI coverage: {phases}"
    assert len(fbs) == 64 and m.cuts > n_events // 100
    assert m.byte_cycles > n_events // 50 and m.timer_cycles > n_events // 100
    if os.environ.get("CC_EXPECT_GUARD") == "1":
        assert m.guards > 10


@cocotb.test()
async def known_answers(dut):
    """Known answer (IEEE 802.1Qau): qntzFb = 10 cuts to CR (1 - 10/128); the MIB timer expires 15
    ms after
    the cut; 5 fast-recovery byte cycles (values by hand)."""
    cfg = env_config(QcnRpConfig)
    assert cfg == QcnRpConfig(), "known answers are for the MIB defaults"
    tb = RpTB(dut, cfg, test_seed(1))
    await tb.start()
    await tb.event(QcnCnm(10))
    assert tb.state().cr == 9218.75 * MBPS and tb.state().tr == 10_000 * MBPS
    gap = 781.25
    for _ in range(5):
        await tb.event(QcnTx(150_000))
        gap /= 2
        assert tb.state().cr == (10_000 - gap) * MBPS
    await tb.event(QcnCnm(63))                     # 63/128 < 1/2: CR - floor(CR x 63/128)
    cr = int((10_000 - gap) * MBPS)             # 10215000 (exact)
    assert tb.state().cr == cr - (cr * 63) // 128 == 5187305
    await tb.idle(2_343_750 - 1)                # 15 ms at 156.25 MHz: not one cycle early
    assert tb.state().t_stage == 0
    await tb.idle(1)
    assert tb.state().t_stage == 1
