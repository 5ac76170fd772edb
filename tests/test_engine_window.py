"""Per-flow register windows of the engine tops (hw/nic/engine_regs.py), in the Amaranth
simulator on a 16-flow DCQCN engine: window writes become ctl WRITE / START / STOP / RESET, a
window read holds ``csr_rack`` until the engine's READ answer is back and selects the field,
``CTRL`` reads the flow's enable bit, unmapped window words answer at once with 0 and issue
nothing, global words answer the cycle after ``csr_rstb``, and READs of the outer ``ctl``
stream issued around window reads all come out on the outer ``rd`` (none lost, none taken by
the window).  Expected values are the written ones, the configuration's register values and
hand counts of the control operations (the engine's ``ev_ctl`` counter).
``CC_SEED`` overrides the seed."""

from __future__ import annotations

import os
import random

from hw.lib.csr import fourcc
from hw.nic.engine_regs import CTRL_EN_BIT, CTRL_RESET, CTRL_START, CTRL_STOP
from hw.nic.flow_datapath import CtlOp
from hw.nic.flow_engine_config import COUNTER_BASE, FlowEngineConfig
from tests.streams import csr_read, csr_write, run_testbenches

SMALL = dict(n_flows=16, time_width=26, wheel_horizon=256, wheel_slots=512, out_fifo_depth=20)
EV_CTL = COUNTER_BASE + 3            # ev_tx, ev_cn, ev_timer, ev_ctl


def _config():
    from hw.nic.dcqcn_engine import DcqcnEngineConfig
    return DcqcnEngineConfig(engine=FlowEngineConfig(**SMALL), pipelined=False)


def test_map():
    """Hand-derived layout of the 16-flow DCQCN map: 16 state fields + CTRL = 17 words, so 32
    words per flow; 16 x 32 = 0x200 words of windows above the header's 0x200."""
    cfg = _config()
    regmap = cfg.register_map()
    assert (regmap.flows, regmap.flow_shift, regmap.flow_base) == (16, 5, 0x200)
    assert regmap.addr_width == 10 and regmap.size_bytes == 4096
    assert [r.name for r in regmap.flow_registers][:3] == ["RC", "RT", "ALPHA"]
    assert regmap.addr("CTRL", 15) == 0x200 + 15 * 32 + 16
    assert regmap.header_values()[0x103] == 16 | 5 << 16
    # CTRL: write-only command bits 0..2 (a write is accepted, they read 0), en read-only at 8
    ctrl = regmap["CTRL"]
    assert ctrl.writable and ctrl.write_mask == 0b111 and ctrl.read_mask == 0x100
    model = regmap.model()
    assert model.write(regmap.addr("CTRL", 2), 0xFFFF_FFFF) == (ctrl, 2)
    assert model.read(regmap.addr("CTRL", 2)) == 0
    assert "sw = w; hw = r;" in regmap.systemrdl()


def test_window_accesses():
    s = int(os.environ.get("CC_SEED", 3))
    print(f"seed {s} (CC_SEED={s} reproduces)")
    rng = random.Random(s)
    from hw.nic.dcqcn_engine import dcqcn_engine
    cfg = _config()
    dut = dcqcn_engine(cfg)
    regmap = cfg.register_map()
    regs = cfg.rp.registers()
    lay = dut.layouts
    fields = lay["fields"]
    width = {name: f.width for name, f in lay["word"]["algo"].shape}

    def win(flow, name):
        return regmap.addr(name, flow)

    ext_reads = [rng.randrange(16) for _ in range(12)]   # the outer ctl stream's READs
    ext_got = []
    ops = {"n": 0}                                        # ctl operations issued, by hand

    async def read(ctx, addr, wait_max=None):
        value, waited = await csr_read(ctx, dut, addr)
        if wait_max is not None:
            assert waited <= wait_max, f"word 0x{addr:x}: rack after {waited} cycles"
        return value, waited

    async def bus(ctx):
        while not ctx.get(dut.ready):
            await ctx.tick()
        # global words: one cycle, as before
        assert (await read(ctx, 0x100, 1))[0] == fourcc("DCQE")
        assert (await read(ctx, 0x103, 1))[0] == 16 | 5 << 16
        assert (await read(ctx, 0, 1))[0] == regmap.registers[0].reset
        # a cleared flow: every field 0, disabled; with nothing in flight the answer comes
        # pipe_depth + 4 cycles after csr_rstb (READ registered, issued, the pipeline, the rd
        # FIFO, the answer registered): 9 with this one-cycle datapath
        value, waited = await read(ctx, win(0, "RC"))
        assert value == 0 and waited == 9, f"RC {value}, rack after {waited} cycles"
        assert (await read(ctx, win(0, "CTRL")))[0] == 0
        ops["n"] += 2
        # START the first and the last flow: init state, enabled
        for f in (0, 15):
            await csr_write(ctx, dut, win(f, "CTRL"), CTRL_START)
            ops["n"] += 1
        for f in (0, 15):
            value, waited = await read(ctx, win(f, "CTRL"))
            assert value == 1 << CTRL_EN_BIT, f"flow {f} CTRL 0x{value:x}"
            assert waited > 3, "a window read must wait for the pipeline"
            assert (await read(ctx, win(f, "RC")))[0] == regs.max_rate
            assert (await read(ctx, win(f, "ALPHA")))[0] == regs.alpha_init
            ops["n"] += 3
        # STOP flow 15 (its timers would change its state), then write and read back every
        # field (masked to the field's width)
        await csr_write(ctx, dut, win(15, "CTRL"), CTRL_STOP)
        ops["n"] += 1
        values = {}
        for name in fields:
            v = rng.getrandbits(32)
            await csr_write(ctx, dut, win(15, name.upper()), v)
            values[name] = v & ((1 << width[name]) - 1)
            ops["n"] += 1
        for name in rng.sample(fields, len(fields)):
            got = (await read(ctx, win(15, name.upper())))[0]
            assert got == values[name], f"flow 15 {name}: 0x{got:x} != 0x{values[name]:x}"
            ops["n"] += 1
        # stopped; a CTRL write without a command bit (nothing issued); RESET (en kept)
        await csr_write(ctx, dut, win(15, "CTRL"), 0)
        assert (await read(ctx, win(15, "CTRL")))[0] == 0
        await csr_write(ctx, dut, win(15, "CTRL"), CTRL_RESET)
        assert (await read(ctx, win(15, "RC")))[0] == regs.max_rate
        assert (await read(ctx, win(15, "CTRL")))[0] == 0
        ops["n"] += 4
        # several command bits: the lowest (START)
        await csr_write(ctx, dut, win(15, "CTRL"), CTRL_STOP | CTRL_START)
        assert (await read(ctx, win(15, "CTRL")))[0] == 1 << CTRL_EN_BIT
        ops["n"] += 2
        # unmapped window words: answered at once with 0, nothing issued; writes ignored
        for addr in (win(3, "CTRL") + 1, win(3, "RC") + 31):
            assert (await read(ctx, addr, 1))[0] == 0
            await csr_write(ctx, dut, addr, 0xFFFF_FFFF)
        # the outer ctl stream's READs are all answered on rd (counted below)
        for _ in range(2000):
            if len(ext_got) >= len(ext_reads):
                break
            await ctx.tick()
        assert len(ext_got) == len(ext_reads), f"{len(ext_got)} of {len(ext_reads)} outer " \
            "READs answered"
        for _ in range(20):
            await ctx.tick()
        got = (await read(ctx, EV_CTL, 1))[0]
        assert got == ops["n"] + len(ext_reads), \
            f"ev_ctl {got}, expected {ops['n']} + {len(ext_reads)}"

    async def outer_ctl(ctx):
        while not ctx.get(dut.ready):
            await ctx.tick()
        for _ in range(30):
            await ctx.tick()
        for f in ext_reads:
            ctx.set(dut.ctl.payload, {"flow": f, "op": CtlOp.READ, "field": 0, "value": 0})
            ctx.set(dut.ctl.valid, 1)
            await ctx.tick().until(dut.ctl.ready)
            ctx.set(dut.ctl.valid, 0)
            for _ in range(rng.randrange(6)):
                await ctx.tick()

    async def outer_rd(ctx):
        for _ in range(5000):
            if len(ext_got) >= len(ext_reads):
                break
            ctx.set(dut.rd.ready, rng.random() < 0.5)
            *_, valid, ready, payload = await ctx.tick().sample(
                dut.rd.valid, dut.rd.ready, dut.rd.payload)
            if valid and ready:
                ext_got.append(payload.flow)
        ctx.set(dut.rd.ready, 1)
        for _ in range(200):
            *_, valid = await ctx.tick().sample(dut.rd.valid)
            assert not valid, "a window answer appeared on the outer rd"

    run_testbenches(dut, bus, outer_ctl, outer_rd)
    assert ext_got == ext_reads
