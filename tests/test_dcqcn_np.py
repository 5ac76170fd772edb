"""DCQCN notification point: configuration errors, the two pacing rules against an ideal-timer
reference written from the rules (timestamps, not countdowns), and the RTL in the Amaranth
simulator against the golden model with back-pressure."""

from __future__ import annotations

import random

import pytest
from amaranth.sim import Simulator

from hw.nic.dcqcn_np import DcqcnNp
from hw.nic.dcqcn_np_config import DcqcnNpConfig
from hw.params import ConfigError
from sim.models.dcqcn_np import NpModel
from sim.reference.dcqcn_np import reference_cnp_times


@pytest.mark.parametrize("rule", ["paper", "periodic"])
@pytest.mark.parametrize("n_us", [0.16, 0.8, 6.4])   # N = 25, 125, 1000 cycles
def test_model_matches_ideal_timer_reference(rule, n_us):
    cfg = DcqcnNpConfig(flows=4, rule=rule, min_time_between_cnps=n_us)
    rng = random.Random(int(n_us * 10) + len(rule))
    horizon = 20 * cfg.n_cycles + 500
    marks = [(c, rng.randrange(4)) for c in range(horizon) if rng.random() < 0.3]
    model = NpModel(cfg)
    by_cycle = dict(marks)   # at most one packet per cycle (the last one drawn wins)
    marks = sorted(by_cycle.items())
    for c in range(horizon):
        model.step(by_cycle.get(c), True)
    assert model.sent == reference_cnp_times(cfg, marks, horizon)
    assert len(model.sent) > 10


def test_paper_rule_hand_example():
    """N = 25 cycles (0.16 µs at 156.25 MHz): a mark at 0 gives a CNP at 1 (one cycle of
    latency); marks at 5 and 20 give ONE more CNP, at 1 + 25 = 26 (N after the first); a mark
    at 60 gives a CNP at 61."""
    cfg = DcqcnNpConfig(flows=1, min_time_between_cnps=0.16)
    assert cfg.n_cycles == 25
    model = NpModel(cfg)
    marks = {0: 0, 5: 0, 20: 0, 60: 0}
    for c in range(100):
        model.step(marks.get(c))
    assert model.sent == [(1, 0), (26, 0), (61, 0)]


def test_periodic_rule_hand_example():
    """N = 25: the check runs in the last cycle of each interval (24, 49, ...), so CNPs leave at
    multiples of N.  Marks at 3 and 10 -> one CNP at 25; a mark at 49 arrives in the same cycle
    as the check and counts for the next interval -> nothing at 50, a CNP at 75."""
    cfg = DcqcnNpConfig(flows=1, rule="periodic", min_time_between_cnps=0.16)
    assert cfg.n_cycles == 25
    model = NpModel(cfg)
    marks = {3: 0, 10: 0, 49: 0}
    for c in range(100):
        model.step(marks.get(c))
    assert model.sent == [(25, 0), (75, 0)]


@pytest.mark.parametrize("changes, field", [
    (dict(rule="periodic", min_time_between_cnps=0), "min_time_between_cnps"),
    (dict(min_time_between_cnps=1000), "min_time_between_cnps"),   # 156250 cycles > 2**16 - 1
    (dict(min_time_between_cnps=-1), "min_time_between_cnps"),
    (dict(flows=0), "flows"), (dict(rule="ns3"), "rule"),
])
def test_invalid_config(changes, field):
    with pytest.raises(ConfigError) as info:
        DcqcnNpConfig(**changes)
    assert info.value.field == field


# (n_us 0.0064 and 0.0128: N = 1 and 2 cycles, the window's reload 0 and 1 at reset; every
# run also rewrites N at run time, to 0 ... 3 and random values, as the register port does)
@pytest.mark.parametrize("rule, n_us", [("paper", 0.16), ("paper", 0), ("paper", 0.0064),
                                        ("paper", 0.0128), ("periodic", 0.096)])
def test_rtl_matches_model(rule, n_us):
    cfg = DcqcnNpConfig(flows=5, rule=rule, min_time_between_cnps=n_us, timer_width=8)
    assert n_us not in (0.0064, 0.0128) or cfg.n_cycles == round(n_us / 0.0064)
    dut, model, rng = DcqcnNp(cfg), NpModel(cfg), random.Random(9)
    n_addr = cfg.register_map()["MIN_TIME_BETWEEN_CNPS"].addr
    sim = Simulator(dut)
    sim.add_clock(4e-9)

    async def bench(ctx):
        writes = 0
        for cycle in range(3000):
            ev = rng.randrange(7) if rng.random() < 0.4 else None   # 5, 6: out of range
            ce = rng.random() < 0.8
            ready = rng.random() < 0.5
            w = rng.choice([0, 1, 2, 3, rng.randrange(256)]) if rng.random() < 0.01 else None
            ctx.set(dut.event.valid, ev is not None)
            ctx.set(dut.event.payload.flow, ev or 0)
            ctx.set(dut.event.payload.ce, ce)
            ctx.set(dut.cnp.ready, ready)
            ctx.set(dut.csr_w.valid, w is not None)
            ctx.set(dut.csr_w.payload.addr, n_addr)
            ctx.set(dut.csr_w.payload.data, w or 0)
            assert w is None or ctx.get(dut.csr_w.ready), cycle
            offer = model.offer()
            assert ctx.get(dut.cnp.valid) == (offer is not None), cycle
            if offer is not None:
                assert ctx.get(dut.cnp.payload.flow) == offer, cycle
            await ctx.tick()
            model.step(ev if (ev is not None and ce) else None, ready)
            if w is not None:
                model.write(n_addr, w)
                writes += 1
        assert len(model.sent) > 50 and writes > 10

    sim.add_testbench(bench)
    sim.run()
