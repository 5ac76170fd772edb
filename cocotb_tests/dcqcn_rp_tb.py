"""cocotb testbench: the exported DCQCN reaction point against its golden model.

Run through ``cocotb_tests/test_dcqcn_rp.py`` (pytest), which passes the configuration as JSON in
``CC_CONFIG``.  Timing: the testbench works at mid-period (2 ns after a rising edge), where it
reads the state register and drives the next event; an idle gap of ``n`` cycles is one
``Timer(4 n ns)`` (no Python per cycle) and the model skips the same ``n`` cycles with
:meth:`DcqcnRpModel.idle`, so long idle periods (many timer expiries) are cheap.  The whole state
(rates, alpha, stages, phase, timers, byte counter, flags) is compared before and after every
event.

The directed tests check each profile's distinctive rule with values derived by hand from the
reference descriptions (``docs/dcqcn.md``), not from the golden model.
"""

from __future__ import annotations

import os

import cocotb

from cocotb_tests.infra.state_tb import StateCompareTB
from cocotb_tests.infra.tb import env_config, env_count, env_seed, test_seed
from hw.nic.dcqcn_config import ALPHA_ONE, RATE_FRAC, DcqcnRpConfig
from sim.models.dcqcn import DcqcnCnp, DcqcnRpCodec, DcqcnRpModel, DcqcnTx

MBPS = 1 << RATE_FRAC


class RpTB(StateCompareTB):
    def __init__(self, dut, cfg: DcqcnRpConfig, seed: int):
        super().__init__(dut, seed, DcqcnRpModel(cfg), DcqcnRpCodec(cfg))
        self.cfg = cfg

    @staticmethod
    def rate_of(state) -> int:
        return state.rc


@cocotb.test()
async def random_events(dut):
    """CNPs with random spacing, byte counts, back-to-back events and long idle periods."""
    cfg = env_config(DcqcnRpConfig)
    tb = RpTB(dut, cfg, env_seed(1))
    n_events = env_count("CC_EVENTS", 100000)
    rng = tb.rng
    await tb.start()
    p_cnp = 0.3
    phase = max(1, n_events // 5)    # five phases whatever the length (20,000 at 10^5)
    for i in range(n_events):
        if i % phase == 0:           # vary the CNP density: congested and calm phases
            p_cnp = rng.choice([0.02, 0.1, 0.3, 0.6])
        x = rng.random()
        # back-to-back, short, about one timer period, several periods, long idle
        gap = (0 if x < 0.5 else rng.randint(1, 10) if x < 0.8 else
               rng.randint(10, 150) if x < 0.95 else rng.randint(150, 600) if x < 0.995
               else rng.randint(600, 5000))
        await tb.idle(gap)
        if rng.random() < p_cnp:
            ev = DcqcnCnp()
        else:
            y = rng.random()
            ev = DcqcnTx(rng.randint(64, 9000) if y < 0.97 else rng.choice(
                [0, 1, cfg.rpg_byte_reset, cfg.rpg_byte_reset + 1, (1 << cfg.byte_width) - 1]))
        await tb.event(ev)
    tb.log.info("%d events, %d cycles, %d cuts, %d state comparisons", n_events,
                tb.model.cycle, tb.model.cuts, tb.checks)
    assert tb.model.cuts > n_events // 50


@cocotb.test()
async def profile_rule(dut):
    """The profile's distinctive rule, with hand-derived values (the model is checked too)."""
    cfg = env_config(DcqcnRpConfig)
    r = cfg.registers()
    tb = RpTB(dut, cfg, test_seed(1))
    await tb.start()
    name = os.environ["CC_PROFILE"]
    if name == "paper":
        await tb.event(DcqcnCnp())            # cut with alpha = 1 first, then alpha stays 1
        assert tb.state().rc == 20_000 * MBPS and tb.state().rt == 40_000 * MBPS
        await tb.event(DcqcnCnp())            # clamp always: Rt = Rc
        assert tb.state().rc == 10_000 * MBPS and tb.state().rt == 20_000 * MBPS
        await tb.idle(r.t_cycles - 1)
        assert tb.state().t_stage == 0   # not one cycle early
        await tb.idle(1)
        assert tb.state().t_stage == 1   # exactly T after the cut: fast recovery
        assert tb.state().rc == 15_000 * MBPS
    elif name == "ns3-rdma":
        await tb.event(DcqcnCnp())            # alpha first: 15/16 * 1/2 + 1/16 = 0.53125
        assert tb.state().alpha == int(0.53125 * ALPHA_ONE)
        assert tb.state().rc == 29_375 * MBPS and tb.state().rt == 40_000 * MBPS  # no clamp
        for _ in range(11):
            await tb.event(DcqcnCnp())
        rc = tb.state().rc
        assert rc * 10 < 40_000 * MBPS
        await tb.idle(r.t_cycles)        # timer stage 1 and Rt > 10 Rc: Rt = Rt / 8
        assert tb.state().rt == 5_000 * MBPS
        assert tb.state().rc == (5_000 * MBPS + rc) >> 1
    elif name == "hpcc-mlx":
        await tb.event(DcqcnCnp())            # first CNP: no immediate cut
        await tb.idle(r.p_cycles)
        assert tb.state().rc == r.max_rate
        await tb.idle(1)                 # check at first CNP + P + 1 cycles
        alpha = (1 - 4 / 1024) ** (r.p_cycles // r.k_cycles)
        assert abs(tb.state().rc / MBPS - 100_000 * (1 - alpha / 2)) < 0.01
        await tb.idle(5 * r.p_cycles)    # no further CNP: no further cut
        assert tb.model.cuts == 1
    elif name == "connectx":
        await tb.event(DcqcnCnp())            # alpha 1023/1024: Rc (1 - alpha/2)
        rc = 100_000 * (1 - 1023 / 2048)
        assert abs(tb.state().rc / MBPS - rc) < 0.01
        await tb.idle(10)
        await tb.event(DcqcnCnp())            # inside rate_reduce_monitor_period: no second cut
        assert abs(tb.state().rc / MBPS - rc) < 0.01
        await tb.idle(r.p_cycles - 12)
        await tb.event(DcqcnCnp())            # P after the first cut: cut again
        assert tb.state().rc < rc * MBPS * 0.6
    else:
        raise AssertionError(f"unknown profile {name}")
