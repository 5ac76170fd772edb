"""Per-flow rate limiter: pacing gaps against the float pacing rule (next send = now + bytes
/ Rc), rate clamping and when a rate change takes effect, configuration errors, and the RTL in the
Amaranth simulator against the golden model."""

from __future__ import annotations

import random

import pytest
from amaranth.sim import Simulator

from hw.nic.rate_limiter import RateLimiter
from hw.nic.rate_limiter_config import RateLimiterConfig
from hw.params import ConfigError
from sim.models.rate_limiter import RateLimiterModel
from sim.reference.rate_limiter import first_eligible_cycle, next_send_cycle

MBPS = 1 << 10


def send_times(model, flow, sizes, rates=None):
    """Send back to back as soon as eligible; return the send cycles."""
    times = []
    for k, size in enumerate(sizes):
        while not (model.eligible() >> flow) & 1:
            model.step()
        times.append(model.cycle)
        model.step(send=(flow, size), rate=(flow, rates[k]) if rates else None)
    return times


@pytest.mark.parametrize("mbps", [1, 100, 1_000, 25_000, 40_000, 100_000])
def test_gaps_match_spec_rule(mbps):
    """burst 0: every gap is the pacing rule now + bytes / Rc rounded up to a cycle, never shorter,
    and longer only by the truncation of the credit rate: a relative 2 / inc (inc in 2**-24
    bytes per cycle; at 156.25 MHz 1.5e-4 at 1 Mb/s, 1.5e-9 at 100 Gb/s), plus the rounding
    cycle."""
    cfg = RateLimiterConfig(flows=2)
    model = RateLimiterModel(cfg)
    model.step(rate=(1, mbps * MBPS))
    rng = random.Random(mbps)
    big = mbps >= 1000
    sizes = [rng.randint(64, 9000 if big else 200) for _ in range(40 if big else 3)]
    times = send_times(model, 1, sizes)
    slack = 2 / cfg.inc_for(mbps * MBPS)
    for t0, t1, size in zip(times, times[1:], sizes, strict=False):
        ideal = first_eligible_cycle(t0, size, mbps, cfg.clk_hz, 1, 100_000)
        assert ideal <= t1 <= ideal + (ideal - t0) * slack + 1, (t0, t1, size, ideal)


@pytest.mark.parametrize("mbps", [1_000, 40_000, 100_000])
def test_long_run_rate_with_burst_credit(mbps):
    """burst > 0 keeps fractions of a cycle: back-to-back packets leave at Rc on average."""
    cfg = RateLimiterConfig(flows=1, burst_bytes=9000)
    model = RateLimiterModel(cfg)
    model.step(rate=(0, mbps * MBPS))
    model.step(send=(0, 9000))                      # spend the initial credit
    rng = random.Random(mbps)
    sizes = [rng.randint(64, 1500) for _ in range(400)]
    times = send_times(model, 0, sizes)
    achieved = sum(sizes[:-1]) * 8 / ((times[-1] - times[0]) / cfg.clk_hz) / 1e6
    # bound: truncation of inc (2 / inc relative), plus one packet of credit at the start of
    # the measured window and one cycle at its end
    bound = (2 / cfg.inc_for(mbps * MBPS) + 1500 / sum(sizes[:-1])
             + 1 / (times[-1] - times[0]))
    assert abs(achieved - mbps) <= mbps * bound, (achieved, mbps, bound)
    assert next_send_cycle(0, 1, mbps, cfg.clk_hz, 1, 100_000) > 0


def test_rate_change_takes_effect_at_next_packet():
    cfg = RateLimiterConfig(flows=1)
    model = RateLimiterModel(cfg)
    model.step(rate=(0, 1_000 * MBPS))
    t0 = model.cycle
    model.step(send=(0, 1000))                    # 1000 B at 1 Gb/s: 8 µs = 1250 cycles
    model.step(rate=(0, 100_000 * MBPS))          # faster, but this gap is already set
    while not model.eligible() & 1:
        model.step()
    assert model.cycle - t0 in (1250, 1251)       # ceil, or one more (truncated credit rate)
    t1 = model.cycle
    model.step(send=(0, 1000))                    # now at 100 Gb/s: 80 ns = 12.5 cycles
    while not model.eligible() & 1:
        model.step()
    assert model.cycle - t1 in (13, 14)


def test_rate_clamped_to_min_and_line():
    cfg = RateLimiterConfig(flows=1, line_rate_mbps=40_000, min_rate_mbps=10)
    model = RateLimiterModel(cfg)
    model.step(rate=(0, 1))
    assert model.rate[0] == 10 * MBPS
    model.step(rate=(0, (1 << cfg.rate_width) - 1))
    assert model.rate[0] == 40_000 * MBPS


def test_burst_credit():
    cfg = RateLimiterConfig(flows=1, burst_bytes=3000)
    model = RateLimiterModel(cfg)
    for _ in range(1000):
        model.step()
    assert model.credit[0] == 3000 << 24          # capped at burst_bytes
    for _ in range(3):                            # three 1000-byte packets back to back
        assert model.eligible() & 1
        model.step(send=(0, 1000))
    assert model.credit[0] >= 0 or not model.eligible() & 1


@pytest.mark.parametrize("changes, field", [
    (dict(min_rate_mbps=0), "min_rate_mbps"), (dict(min_rate_mbps=200_000), "min_rate_mbps"),
    (dict(burst_bytes=1 << 14), "burst_bytes"), (dict(flows=0), "flows"),
])
def test_invalid_config(changes, field):
    with pytest.raises(ConfigError) as info:
        RateLimiterConfig(**changes)
    assert info.value.field == field


def test_rtl_matches_model():
    cfg = RateLimiterConfig(flows=3, burst_bytes=2000)
    dut, model, rng = RateLimiter(cfg), RateLimiterModel(cfg), random.Random(4)
    sim = Simulator(dut)
    sim.add_clock(4e-9)

    async def bench(ctx):
        for cycle in range(4000):
            el = ctx.get(dut.eligible)
            assert el == model.eligible(), cycle
            send = rate = None
            ok = [f for f in range(3) if (el >> f) & 1]
            if ok and rng.random() < 0.7:
                send = (rng.choice(ok), rng.randint(64, 9000))
            elif rng.random() < 0.05:
                send = (rng.randrange(4), rng.randint(0, (1 << 14) - 1))   # ineligible too
            if rng.random() < 0.05:
                rate = (rng.randrange(4), rng.choice([0, 1, 1 << 20, rng.getrandbits(27)]))
            ctx.set(dut.send.valid, send is not None)
            ctx.set(dut.send.payload.flow, send[0] if send else 0)
            ctx.set(dut.send.payload.bytes, send[1] if send else 0)
            ctx.set(dut.rate.valid, rate is not None)
            ctx.set(dut.rate.payload.flow, rate[0] if rate else 0)
            ctx.set(dut.rate.payload.rate, rate[1] if rate else 0)
            await ctx.tick()
            model.step(send, rate)

    sim.add_testbench(bench)
    sim.run()
