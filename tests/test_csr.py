"""The register layer (hw/lib/csr.py): address layout, the golden register model, the RTL bank
against that model (random writes and reads, a per-flow window in block RAM), and the
SystemRDL text (compiled by systemrdl-compiler).  ``CC_SEED`` overrides the seed."""

from __future__ import annotations

import os
import random

import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.layouts import csr_write_layout
from hw.lib.csr import CsrBank, Field, Register, RegisterMap, fourcc
from tests.streams import run_testbenches


def seed(default: int) -> int:
    s = int(os.environ.get("CC_SEED", default))
    print(f"seed {s} (CC_SEED={s} reproduces)")
    return s


TOY = RegisterMap("toy", (
    Register("CTRL", (Field("mode", 2, reset=1), Field("enable", 1),
                      Field("busy", 1, access="ro"), Field("level", 5, offset=8, reset=17))),
    Register.single("LIMIT", 20, reset=1000, desc="a limit"),
    Register.single("STATUS", 12, access="ro"),
    Register.single("COUNT", 32, addr=5),
), "TOYB", version=(2, 3), desc="a toy block")

FLOWS = RegisterMap.from_list("mf", "MFLO", [("GLOBAL", 8, 3)], flows=5,
                              flow_registers=[("RATE", 24, 100), ("ALPHA", 10, 1023),
                                              ("TARGET", 24, 7)])


def test_layout():
    assert [r.addr for r in TOY.registers] == [0, 1, 2, 5]
    ctrl = TOY["CTRL"]
    assert [(f.name, f.offset) for f in ctrl.fields] == [("mode", 0), ("enable", 2),
                                                         ("busy", 3), ("level", 8)]
    assert ctrl.reset == 1 | 17 << 8 and ctrl.write_mask == 0b11111_0000_0111
    assert TOY.header_offset == 16 and TOY.addr_width == 5 and TOY.size_bytes == 128
    assert TOY.header_values() == {16: fourcc("TOYB"), 17: 2 << 16 | 3, 18: 128, 19: 0}
    assert fourcc("TOYB") == 0x544F5942
    # 3 per-flow registers -> 4-word windows; 5 flows x 4 words above the 32-word global part
    assert (FLOWS.flow_shift, FLOWS.flow_base, FLOWS.addr_width) == (2, 32, 6)
    assert FLOWS.addr("ALPHA", 3) == 32 + (3 << 2 | 1)
    assert FLOWS.header_values()[19] == 5 | 2 << 16
    assert FLOWS.decode(32 + (4 << 2 | 3)) is None and FLOWS.decode(32 + (5 << 2)) is None
    # a map with more than 16 registers moves its header to the next power of two
    big = RegisterMap.from_list("big", "BIGB", [(f"R{i}", 8, 0) for i in range(17)])
    assert big.header_offset == 32


@pytest.mark.parametrize("bad, message", [
    (lambda: RegisterMap.from_list("x", "XX", []), "four ASCII"),
    (lambda: RegisterMap.from_list("x", "XXXX", [("A", 8, 0), ("A", 8, 0)]), "duplicate"),
    (lambda: RegisterMap.from_list("x", "XXXX", [("ID", 8, 0)]), "duplicate"),
    (lambda: RegisterMap.from_list("x", "XXXX", [("A", 33, 0)]), "wider"),
    (lambda: Field("f", 4, reset=16), "does not fit"),
    (lambda: Register("R", (Field("a", 4), Field("b", 4, offset=2))), "overlaps"),
])
def test_declaration_errors(bad, message):
    with pytest.raises(ValueError, match=message):
        bad()


def test_model():
    regs = TOY.model(sources={"STATUS": lambda: 0xABC})
    assert regs.read(0) == TOY["CTRL"].reset and regs.read(1) == 1000
    assert regs.write(0, 0xFFFF_FFFF) == (TOY["CTRL"], None)
    assert regs.read(0) == 0b11111_0000_0111
    assert regs.field("CTRL", "level") == 31
    assert regs.write(2, 5) is None and regs.read(2) == 0xABC      # read-only
    assert regs.write(3, 5) is None and regs.read(3) == 0          # unmapped
    assert regs.write(16, 5) is None and regs.read(16) == fourcc("TOYB")
    f = FLOWS.model()
    assert f.write(FLOWS.addr("RATE", 4), 0xFFFF_FFFF) == (FLOWS["RATE"], 4)
    assert f.read(FLOWS.addr("RATE", 4)) == 0xFF_FFFF and f.read(FLOWS.addr("RATE", 3)) == 100


class Toy(wiring.Component):
    """A block with the toy map: STATUS and CTRL.busy read a free-running counter; COUNT counts
    up every cycle (a software write wins); writes apply only when ``idle``."""

    def __init__(self, regmap: RegisterMap, delay: int = 0):
        self.regmap, self.delay = regmap, delay
        super().__init__({
            "csr_w": In(stream.Signature(csr_write_layout(regmap.addr_width, 32))),
            "csr_raddr": In(regmap.addr_width),
            "csr_rdata": Out(32),
            "idle": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        bank = CsrBank(self.regmap, resets={"LIMIT": 77})
        free = Signal(12)
        m.d.sync += free.eq(free + 1)
        bank.source("STATUS", free)
        bank.source("CTRL", free[0], field="busy")
        m.d.sync += bank["COUNT"].eq(bank["COUNT"] + 1)
        bank.build(m, self.csr_w, self.csr_raddr, self.csr_rdata, idle=self.idle,
                   delay=self.delay)
        return m


@pytest.mark.parametrize("delay", [0, 1])
def test_rtl_against_model(delay):
    rng = random.Random(seed(13 + delay))
    dut = Toy(TOY, delay)
    model = TOY.model()
    model.values["LIMIT"] = 77
    state = {"cycle": 0}

    async def bench(ctx):
        for _ in range(400):
            # a write offered for a few cycles while the block is busy, then taken when idle
            if rng.random() < 0.5:
                addr, data = rng.randrange(1 << TOY.addr_width), rng.getrandbits(32)
                ctx.set(dut.csr_w.payload, {"addr": addr, "data": data})
                ctx.set(dut.csr_w.valid, 1)
                ctx.set(dut.idle, 0)
                for _ in range(rng.randrange(3)):
                    await ctx.tick()
                    state["cycle"] += 1
                    assert not ctx.get(dut.csr_w.ready)
                ctx.set(dut.idle, 1)
                assert ctx.get(dut.csr_w.ready)
                await ctx.tick()
                state["cycle"] += 1
                ctx.set(dut.csr_w.valid, 0)
                if delay:
                    await ctx.tick()
                    state["cycle"] += 1
                model.write(addr, data)
                if addr == TOY.addr("COUNT"):
                    count_base = state["cycle"] - (data & 0xFFFF_FFFF)
                    state["count_base"] = count_base
            addr = rng.randrange(1 << TOY.addr_width)
            ctx.set(dut.csr_raddr, addr)
            await ctx.tick()
            cycle_at_read = state["cycle"]
            state["cycle"] += 1
            got = ctx.get(dut.csr_rdata)
            reg = TOY.decode(addr)
            if reg and reg[0].name == "STATUS":
                want = cycle_at_read & 0xFFF
            elif reg and reg[0].name == "COUNT":
                want = (cycle_at_read - state.get("count_base", 0)) & 0xFFFF_FFFF
            else:
                want = model.read(addr)
                if reg and reg[0].name == "CTRL":
                    want |= (cycle_at_read & 1) << 3
            assert got == want, f"read 0x{addr:x}: RTL 0x{got:x}, expected 0x{want:x}"

    run_testbenches(dut, bench)


class MultiFlow(wiring.Component):
    """The per-flow windows: the flow registers in one block RAM (one word per flow and
    register), read through a synchronous port so the data follows the address by a cycle."""

    def __init__(self):
        super().__init__({
            "csr_w": In(stream.Signature(csr_write_layout(FLOWS.addr_width, 32))),
            "csr_raddr": In(FLOWS.addr_width),
            "csr_rdata": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        bank = CsrBank(FLOWS)
        shift = FLOWS.flow_shift
        init = [0] * (FLOWS.flows << shift)
        for f in range(FLOWS.flows):
            for r in FLOWS.flow_registers:
                init[f << shift | r.addr] = r.reset
        m.submodules.mem = mem = memory.Memory(shape=32, depth=len(init), init=init)
        wr, rd = mem.write_port(), mem.read_port()
        stb = Signal()
        for r in FLOWS.flow_registers:
            stb = stb | bank.flow_wstb[r.name]
        masks = {r.addr: r.write_mask for r in FLOWS.flow_registers}
        index = self.csr_w.payload.addr[:shift]
        mask = Signal(32)
        with m.Switch(index):
            for a, v in masks.items():
                with m.Case(a):
                    m.d.comb += mask.eq(v)
        m.d.comb += [wr.en.eq(stb), wr.addr.eq(bank.flow_wflow << shift | index),
                     wr.data.eq(self.csr_w.payload.data & mask),
                     rd.addr.eq(bank.flow_rflow << shift | bank.flow_rindex),
                     bank.flow_rdata.eq(rd.data)]
        bank.build(m, self.csr_w, self.csr_raddr, self.csr_rdata)
        return m


def test_flow_windows():
    rng = random.Random(seed(7))
    dut = MultiFlow()
    model = FLOWS.model()

    async def bench(ctx):
        for _ in range(300):
            addr = rng.randrange(1 << FLOWS.addr_width)
            if rng.random() < 0.5:
                data = rng.getrandbits(32)
                ctx.set(dut.csr_w.payload, {"addr": addr, "data": data})
                ctx.set(dut.csr_w.valid, 1)
                await ctx.tick()
                ctx.set(dut.csr_w.valid, 0)
                model.write(addr, data)
            addr = rng.randrange(1 << FLOWS.addr_width)
            ctx.set(dut.csr_raddr, addr)
            await ctx.tick()
            assert ctx.get(dut.csr_rdata) == model.read(addr), f"read 0x{addr:x}"

    run_testbenches(dut, bench)


def test_documents():
    md = TOY.markdown()
    assert "| 0x01 | 0x004 | LIMIT | limit | [19:0] | RW | 0x3E8 | a limit |" in md
    assert "| 0x10 | 0x040 | ID | id | [31:0] | RO | 0x544F5942 |" in md
    systemrdl = pytest.importorskip("systemrdl")
    for regmap in (TOY, FLOWS):
        rdl = regmap.systemrdl()
        rdlc = systemrdl.RDLCompiler()
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".rdl", delete=False) as f:
            f.write(rdl)
        rdlc.compile_file(f.name)
        root = rdlc.elaborate(top_def_name=regmap.name)
        os.unlink(f.name)
        got = {}
        for node in root.descendants(unroll=True):
            if isinstance(node, systemrdl.node.RegNode):
                got[node.get_path()] = node.absolute_address
        c = regmap.c_layout()
        for r in regmap.registers + regmap.header:
            assert got[f"{regmap.name}.{r.name}"] == c[r.name]
        if regmap.flows:
            for r in regmap.flow_registers:
                assert got[f"{regmap.name}.FLOW[4].{r.name}"] == 4 * regmap.addr(r.name, 4)
