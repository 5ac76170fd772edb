"""Stream helpers for the Amaranth-simulation tests: offer packed payloads on an
``amaranth.lib.stream`` interface, take them with random back-pressure, read a register word."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable

from amaranth.sim import Simulator


async def stream_put(ctx, stream, items: Iterable, *, rng: random.Random | None = None,
                     p_valid: float = 1.0) -> None:
    """Offer each item (a packed int, or a value the payload accepts) until it is taken; with
    ``rng``, idle cycles before an item while ``rng.random() > p_valid``."""
    for item in items:
        if rng is not None:
            while rng.random() > p_valid:
                ctx.set(stream.valid, 0)
                await ctx.tick()
        ctx.set(stream.payload.as_value() if isinstance(item, int) else stream.payload, item)
        ctx.set(stream.valid, 1)
        await ctx.tick().until(stream.ready)
    ctx.set(stream.valid, 0)


async def stream_get(ctx, stream, count: int | None = None, *,
                     rng: random.Random | None = None, p_ready: float = 1.0,
                     into: list | None = None, until: Callable[[], bool] | None = None,
                     on_item: Callable[[int], object] | None = None) -> list[int]:
    """Take packed payloads until ``count`` are taken or ``until()`` holds (checked before each
    cycle); ``ready`` is drawn every cycle as ``rng.random() < p_ready`` (always 1 without
    ``rng``).  Items go to ``into`` (returned) and, if given, to ``on_item``."""
    out = [] if into is None else into
    while not ((count is not None and len(out) >= count) or (until is not None and until())):
        ctx.set(stream.ready, rng.random() < p_ready if rng is not None else 1)
        *_, payload, valid, ready = await ctx.tick().sample(stream.payload, stream.valid,
                                                            stream.ready)
        if valid and ready:
            bits = payload.as_value().value if hasattr(payload, "as_value") else int(payload)
            out.append(bits)
            if on_item is not None:
                on_item(bits)
    return out


async def csr_read(ctx, dut, addr: int, *, limit: int = 200) -> tuple[int, int]:
    """Read register word ``addr`` through an engine's read port (``csr_raddr``, a one-cycle
    ``csr_rstb``, then ``csr_rdata`` when ``csr_rack``): returns (data, cycles from the strobe
    to the answer), and leaves one idle cycle after it.  No answer within ``limit`` cycles fails."""
    ctx.set(dut.csr_raddr, addr)
    ctx.set(dut.csr_rstb, 1)
    await ctx.tick()
    ctx.set(dut.csr_rstb, 0)
    waited = 1
    while not ctx.get(dut.csr_rack):
        await ctx.tick()
        waited += 1
        assert waited < limit, f"no rack for word 0x{addr:x}"
    value = ctx.get(dut.csr_rdata)
    await ctx.tick()
    return value, waited


async def csr_write(ctx, dut, addr: int, data: int) -> None:
    """Write register word ``addr`` through an engine's write port (``csr_w``): offered until
    taken, then withdrawn."""
    ctx.set(dut.csr_w.payload, {"addr": addr, "data": data})
    ctx.set(dut.csr_w.valid, 1)
    await ctx.tick().until(dut.csr_w.ready)
    ctx.set(dut.csr_w.valid, 0)


def expect_stream(ctx, port, want: int | None, what: str, where: str) -> int | None:
    """One cycle of an output stream against the golden model's: ``valid`` exactly when the
    model has a payload (``want`` not ``None``), then the packed payload equal to ``want``.
    Returns the payload bits (``None`` when not valid).  ``what`` names the stream and
    ``where`` the cycle and seed in the failure message."""
    valid = ctx.get(port.valid)
    assert bool(valid) == (want is not None), f"{what}.valid {valid}, model {want} {where}"
    if not valid:
        return None
    bits = ctx.get(port.payload.as_value())
    assert bits == want, f"{what} {bits:#x} != model {want:#x} {where}"
    return bits


async def axil_write(ctx, dut, word: int, data: int, *, limit: int = 50) -> int:
    """An AXI4-Lite write of word ``word`` (address and data together, all byte strobes) on a
    :class:`hw.lib.axi_lite.AxiLiteRegs` top: returns the response (0 OKAY, 2 SLVERR)."""
    ctx.set(dut.s_axil_awaddr, 4 * word)
    ctx.set(dut.s_axil_wdata, data)
    ctx.set(dut.s_axil_wstrb, 0xF)
    ctx.set(dut.s_axil_awvalid, 1)
    ctx.set(dut.s_axil_wvalid, 1)
    ctx.set(dut.s_axil_bready, 1)
    await ctx.tick().until(dut.s_axil_awready)
    ctx.set(dut.s_axil_awvalid, 0)
    ctx.set(dut.s_axil_wvalid, 0)
    for _ in range(limit):
        *_, valid, resp = await ctx.tick().sample(dut.s_axil_bvalid, dut.s_axil_bresp)
        if valid:
            return resp
    raise AssertionError(f"no write response for word 0x{word:x}")


async def axil_read_resp(ctx, dut, word: int, *, limit: int = 50) -> tuple[int, int]:
    """An AXI4-Lite read of word ``word``: returns (data, response)."""
    ctx.set(dut.s_axil_araddr, 4 * word)
    ctx.set(dut.s_axil_arvalid, 1)
    ctx.set(dut.s_axil_rready, 1)
    await ctx.tick().until(dut.s_axil_arready)
    ctx.set(dut.s_axil_arvalid, 0)
    for _ in range(limit):
        *_, valid, data, resp = await ctx.tick().sample(dut.s_axil_rvalid, dut.s_axil_rdata,
                                                        dut.s_axil_rresp)
        if valid:
            return data, resp
    raise AssertionError(f"no read response for word 0x{word:x}")


async def axil_read(ctx, dut, word: int, *, limit: int = 50) -> int:
    """An AXI4-Lite read that must be answered OKAY: returns the data."""
    data, resp = await axil_read_resp(ctx, dut, word, limit=limit)
    assert resp == 0, f"read of word 0x{word:x} answered {resp}"
    return data


def run_testbenches(dut, *benches, period: float = 4e-9) -> None:
    """Simulate ``dut`` with a clock (250 MHz by default) and the given async testbenches until
    they all return."""
    sim = Simulator(dut)
    sim.add_clock(period)
    for bench in benches:
        sim.add_testbench(bench)
    sim.run()
