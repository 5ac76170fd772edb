"""Directed boundary tests of the per-flow rate limiter (hw/nic/rate_limiter.py) in Amaranth's
simulator, for what its random comparison with the model rarely reaches (found by ``make
mutate``, docs/verification.md): the clamp of a rate write at both ends and that a write
changes only its own flow, the credit's saturation at its floor (sends of a flow that is not
eligible), and a BURST register lowered below a flow's credit.  Each test checks ``eligible``
every cycle against the golden model and the gaps against values derived by hand or from the
float pacing rule (sim/reference/rate_limiter.py)."""

from __future__ import annotations

from amaranth.sim import Simulator

from hw.nic.rate_limiter import RateLimiter
from hw.nic.rate_limiter_config import CREDIT_FRAC, RateLimiterConfig
from sim.models.rate_limiter import RateLimiterModel
from sim.reference.rate_limiter import first_eligible_cycle

MBPS = 1 << 10


def run(cfg, schedule, cycles):
    """Drive the RTL and the model with ``schedule`` (cycle -> dict with optional ``send``
    (flow, bytes), ``rate`` (flow, value), ``csr`` (addr, data)); return ``eligible`` per cycle
    (checked against the model every cycle)."""
    dut, model = RateLimiter(cfg), RateLimiterModel(cfg)
    seen = []
    sim = Simulator(dut)
    sim.add_clock(4e-9)

    async def bench(ctx):
        for cycle in range(cycles):
            el = ctx.get(dut.eligible)
            assert el == model.eligible(), (cycle, el, model.eligible())
            seen.append(el)
            ev = schedule.get(cycle, {})
            send, rate, csr = ev.get("send"), ev.get("rate"), ev.get("csr")
            ctx.set(dut.send.valid, send is not None)
            ctx.set(dut.send.payload.flow, send[0] if send else 0)
            ctx.set(dut.send.payload.bytes, send[1] if send else 0)
            ctx.set(dut.rate.valid, rate is not None)
            ctx.set(dut.rate.payload.flow, rate[0] if rate else 0)
            ctx.set(dut.rate.payload.rate, rate[1] if rate else 0)
            ctx.set(dut.csr_w.valid, csr is not None)
            ctx.set(dut.csr_w.payload.addr, csr[0] if csr else 0)
            ctx.set(dut.csr_w.payload.data, csr[1] if csr else 0)
            await ctx.tick()
            model.step(send, rate)
            if csr is not None:
                model.write(*csr)

    sim.add_testbench(bench)
    sim.run()
    return seen


def gap(seen, flow, sent_at):
    """Cycles from a send at ``sent_at`` until ``flow`` is eligible again."""
    for c in range(sent_at + 1, len(seen)):
        if (seen[c] >> flow) & 1:
            return c - sent_at
    raise AssertionError(f"flow {flow} not eligible again after cycle {sent_at}")


def test_rate_write_clamped_at_both_ends_and_only_its_flow():
    """Line 10 Gb/s, minimum 5 Gb/s (so both clamps show within a few hundred cycles).  Flow 0
    is written far below the minimum (1/1024 Mb/s) and flow 1 far above the line rate (the
    field's largest value); each then sends 1000 bytes (sends at different cycles, the rate
    write one cycle before its own flow's send and while the other flow is still pacing): the
    gaps are the pacing rule at 5 and 10 Gb/s (1600 ns = 250 cycles and 125 cycles at 156.25
    MHz, plus at most one cycle for the truncated credit rate), not at the written values."""
    cfg = RateLimiterConfig(flows=2, line_rate_mbps=10_000, min_rate_mbps=5_000)
    top = (1 << cfg.rate_width) - 1
    assert top > cfg.max_rate
    sched = {0: {"rate": (0, 1)}, 1: {"send": (0, 1000)},
             2: {"rate": (1, top)}, 3: {"send": (1, 1000)}}
    seen = run(cfg, sched, 400)
    g0, g1 = gap(seen, 0, 1), gap(seen, 1, 3)
    for g, mbps in ((g0, 5_000), (g1, 10_000)):
        ideal = first_eligible_cycle(0, 1000, mbps, cfg.clk_hz, 1, 100_000)
        assert ideal in (g, g - 1), (g, mbps, ideal)
    assert (g0, g1) in ((250, 125), (251, 126), (250, 126), (251, 125))


def test_rate_write_changes_only_its_own_flow():
    """Flow 0 written to the minimum, flow 1 never written (it keeps the line rate): flow 1's
    gap after a 1000-byte send is the line-rate one (800 ns at 10 Gb/s: 125 cycles),
    flow 0's the minimum's (250)."""
    cfg = RateLimiterConfig(flows=2, line_rate_mbps=10_000, min_rate_mbps=5_000)
    sched = {0: {"rate": (0, cfg.min_rate)}, 2: {"send": (1, 1000)}, 3: {"send": (0, 1000)}}
    seen = run(cfg, sched, 300)
    assert gap(seen, 1, 2) in (125, 126)
    assert gap(seen, 0, 3) in (250, 251)


def test_credit_saturates_at_its_floor():
    """Sends of a flow that is not eligible (the scheduler's error) drive the credit down; it
    saturates at -2**(credit_width - 1) (-32768 bytes) instead of wrapping to a positive value:
    the flow stays ineligible, and is eligible again exactly when the floor plus the credit
    earned since reaches 0: ceil(2**(credit_width - 1) / inc) cycles after the last send, inc
    the line rate's credit per cycle (80 bytes at 100 Gb/s: 410 cycles)."""
    cfg = RateLimiterConfig(flows=1)
    big = (1 << cfg.len_width) - 1
    sched = {c: {"send": (0, big)} for c in range(1, 6)}       # 5 x 16383 bytes
    seen = run(cfg, sched, 700)
    assert all(not (e & 1) for e in seen[2:400])
    inc = cfg.inc_for(cfg.max_rate)
    floor = 1 << (cfg.credit_width - 1)
    assert floor == 32768 << CREDIT_FRAC
    assert gap(seen, 0, 5) == -(-floor // inc)


def test_lower_burst_keeps_the_credit_above_it_until_spent():
    """BURST 3000 bytes: an idle flow holds 3000 bytes of credit.  BURST is then written to
    1000: the credit above it is kept (it never rises above max(credit, BURST), so it is not
    cut), and a 2000-byte packet leaves the flow eligible (1000 bytes left); a second one at
    once makes it ineligible."""
    cfg = RateLimiterConfig(flows=1, burst_bytes=3000)
    addr = cfg.register_map().addr("BURST")
    sched = {200: {"csr": (addr, 1000)}, 202: {"send": (0, 2000)}, 203: {"send": (0, 2000)}}
    seen = run(cfg, sched, 210)
    assert seen[203] & 1            # 3000 - 2000 (+ earning) >= 0
    assert not seen[204] & 1        # 1000 + 2 cycles' earning - 2000 < 0
