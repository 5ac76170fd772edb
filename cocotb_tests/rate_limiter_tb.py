"""cocotb testbench: the exported rate limiter against its golden model, cycle by cycle
(``CC_CONFIG`` JSON from ``cocotb_tests/test_rate_limiter.py``): ``eligible`` is compared every
cycle while a random scheduler sends packets for eligible flows (sometimes for ineligible ones
and out-of-range flows) and the reaction point writes random rates (including out-of-range
values, clamped).  Idle stretches are one Timer each, with the model stepped in Python."""

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
from hw.layouts import bits_for_flows, rl_rate_layout, rl_send_layout
from hw.nic.rate_limiter_config import RateLimiterConfig
from sim.models.rate_limiter import RateLimiterModel


@cocotb.test()
async def random_traffic(dut):
    cfg = env_config(RateLimiterConfig)
    tb = TBBase(dut, env_seed(3))
    model, rng = RateLimiterModel(cfg), tb.rng
    send_l, rate_l = rl_send_layout(cfg), rl_rate_layout(cfg)
    fw = bits_for_flows(cfg)              # flow numbers up to 2**fw - 1 (some out of range)
    n = env_count("CC_EVENTS", 100000)
    for port in ("send", "rate"):
        getattr(dut, f"{port}__valid").value = 0
        getattr(dut, f"{port}__payload").value = 0
    await tb.reset()
    model.step()
    await Timer(CLOCK_PERIOD_NS // 2, unit="ns")
    sends = 0
    for _ in range(n):
        el = int(dut.eligible.value)
        assert el == model.eligible(), f"cycle {model.cycle}: RTL {el:b}, model " \
                                       f"{model.eligible():b}"
        assert int(dut.send__ready.value) == 1 and int(dut.rate__ready.value) == 1
        if rng.random() < 0.001:                      # an idle stretch
            gap = rng.randint(100, 20_000)
            await Timer(gap * CLOCK_PERIOD_NS, unit="ns")
            for _ in range(gap):
                model.step()
            continue
        send = rate = None
        ok = [f for f in range(cfg.flows) if (el >> f) & 1]
        if ok and rng.random() < 0.8:
            send = (rng.choice(ok), rng.choice([rng.randint(64, 1500), rng.randint(64, 9000)]))
        elif rng.random() < 0.02:
            send = (rng.randrange(1 << fw), rng.randrange(1 << cfg.len_width))
        if rng.random() < 0.02:
            rate = (rng.randrange(1 << fw),
                    rng.choice([0, cfg.min_rate, cfg.max_rate, rng.getrandbits(cfg.rate_width)]
                               + [rng.randint(cfg.max_rate // 100, cfg.max_rate)] * 6))
        dut.send__valid.value = int(send is not None)
        if send:
            dut.send__payload.value = send_l.const({"flow": send[0],
                                                    "bytes": send[1]}).as_bits()
        dut.rate__valid.value = int(rate is not None)
        if rate:
            dut.rate__payload.value = rate_l.const({"flow": rate[0], "rate": rate[1]}).as_bits()
        await RisingEdge(dut.clk)
        model.step(send, rate)
        sends += send is not None
        dut.send__valid.value = 0
        dut.rate__valid.value = 0
        await Timer(CLOCK_PERIOD_NS // 2, unit="ns")
    tb.log.info("%d steps, %d cycles, %d packets", n, model.cycle, sends)
    assert sends > n // 100
