"""The register layer (hw/lib/csr.py): address layout, the golden register model, the RTL bank
against that model (random writes and reads, a per-flow window in block RAM), and the
SystemRDL text (compiled by systemrdl-compiler).  ``CC_SEED`` overrides the seed."""

from __future__ import annotations

import os
import random

import pytest
from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from hw.lib.csr import (
    CsrBank,
    Field,
    Register,
    RegisterMap,
    RegisterMapGroup,
    fourcc,
    rtl_window,
    wide_registers,
    write_error_register,
)
from hw.lib.csr_port import csr_ports
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
            **csr_ports(regmap),
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


# a power-of-two flow count whose windows (2 words each) span fewer words than the global
# part: the window area holds 16 flow numbers, 4 of them real (flow 4 must not alias flow 0)
POW2 = RegisterMap.from_list("ptwo", "PTWO", [("GLOBAL", 8, 1)], flows=4,
                             flow_registers=[("A", 8, 1), ("B", 16, 2)])
# one flow; the window's registers at sparse addresses (0 and 5: 8-word windows)
ONE = RegisterMap("one", (Register.single("GLOBAL", 8, 1),), "ONEF", flows=1,
                  flow_registers=(Register.single("A", 8, 1, addr=0),
                                  Register.single("B", 12, 2, addr=5)))


#: what the harness's RAM holds in the window words that are no register
MARKER = 0x5A5A_0000


class MultiFlow(wiring.Component):
    """The per-flow windows: the flow registers in one block RAM (one word per flow and
    register), read through a synchronous port so the data follows the address by a cycle.
    The RAM spans the whole window area (every flow number the address can hold), its words
    that are no register hold a marker (an unmapped or out-of-range access that reached it
    would show), and a write's data is masked by the register whose strobe is raised: every
    strobe is an output, checked write by write."""

    def __init__(self, regmap: RegisterMap):
        self.regmap = regmap
        super().__init__({
            **csr_ports(regmap),
            "wstb": Out(len(regmap.flow_registers)),
            "wflow": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        regmap = self.regmap
        bank = CsrBank(regmap)
        shift = regmap.flow_shift
        init = [MARKER | i for i in range(regmap.flow_base)]
        for f in range(regmap.flows):
            for r in regmap.flow_registers:
                init[f << shift | r.addr] = r.reset
        m.submodules.mem = mem = memory.Memory(shape=32, depth=len(init), init=init)
        wr, rd = mem.write_port(), mem.read_port()
        mask = 0
        for i, r in enumerate(regmap.flow_registers):
            m.d.comb += self.wstb[i].eq(bank.flow_wstb[r.name])
            mask = mask | Mux(bank.flow_wstb[r.name], r.write_mask, 0)
        index = self.csr_w.payload.addr[:shift] if shift else 0
        m.d.comb += [wr.en.eq(self.wstb.any()), wr.addr.eq(bank.flow_wflow << shift | index),
                     wr.data.eq(self.csr_w.payload.data & mask), self.wflow.eq(bank.flow_wflow),
                     rd.addr.eq(bank.flow_rflow << shift | bank.flow_rindex),
                     bank.flow_rdata.eq(rd.data)]
        bank.build(m, self.csr_w, self.csr_raddr, self.csr_rdata)
        return m



@pytest.mark.parametrize("regmap", [FLOWS, POW2, ONE], ids=lambda r: r.name)
def test_flow_windows(regmap):
    """Every word written and read back once, then random accesses: the RTL's strobes, flow
    number and read data against the model's decode."""
    rng = random.Random(seed(7))
    dut = MultiFlow(regmap)
    model = regmap.model()
    names = [r.name for r in regmap.flow_registers]
    words = 1 << regmap.addr_width
    assert ONE.flow_shift == 3 and POW2.flow_base == 32 and POW2.flow_shift == 1

    async def bench(ctx):
        async def write(addr, data):
            ctx.set(dut.csr_w.payload, {"addr": addr, "data": data})
            ctx.set(dut.csr_w.valid, 1)
            hit = model.write(addr, data)
            want = 0
            if hit is not None and hit[1] is not None:
                want = 1 << names.index(hit[0].name)
                assert ctx.get(dut.wflow) == hit[1], f"write 0x{addr:x}: flow"
            assert ctx.get(dut.wstb) == want, f"write 0x{addr:x}: strobes {ctx.get(dut.wstb):b}"
            await ctx.tick()
            ctx.set(dut.csr_w.valid, 0)

        async def read(addr):
            ctx.set(dut.csr_raddr, addr)
            await ctx.tick()
            assert ctx.get(dut.csr_rdata) == model.read(addr), f"read 0x{addr:x}"

        for addr in range(words):
            await write(addr, rng.getrandbits(32))
        for addr in range(words):
            await read(addr)
        for _ in range(300):
            if rng.random() < 0.5:
                await write(rng.randrange(words), rng.getrandbits(32))
            await read(rng.randrange(words))

    run_testbenches(dut, bench)


# checked fields (module docstring of hw/lib/csr.py, "Refused writes"): a lower bound, an
# upper bound, both, and the bounds a field's width implies (not compared by the RTL)
CHECKED = RegisterMap("chk", (
    Register("TTL", (Field("ttl", 8, reset=64, legal=((1, 255),)),
                     Field("mode", 3, reset=1, offset=8, legal=((0, 2), (5, 5))),
                     Field("any", 4, reset=3, offset=12))),
    Register.single("LO", 4, reset=2, legal=((2, 15),)),
    write_error_register(),
), "CHKB")


class Checked(wiring.Component):
    def __init__(self):
        super().__init__({
            **csr_ports(CHECKED),
            "wstb": Out(3),
            "refused": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        bank = CsrBank(CHECKED)
        bank.build(m, self.csr_w, self.csr_raddr, self.csr_rdata)
        m.d.comb += [self.wstb.eq(Cat(bank.wstb["TTL"], bank.wstb["LO"], bank.wstb["WERR"])),
                     self.refused.eq(bank.refused)]
        return m


def test_refused_writes_rtl_against_model():
    """Every value of each checked field at and beside its bounds, written through the RTL
    and the model: the strobes, the refusal, the register and ``WERR`` read back."""
    dut = Checked()
    model = CHECKED.model()
    names = ["TTL", "LO", "WERR"]
    words = []
    for ttl in (0, 1, 2, 254, 255):
        for mode in range(8):
            words.append(ttl | mode << 8 | ((ttl + mode) & 15) << 12)
    writes = [(CHECKED.addr("TTL"), w) for w in words]
    writes += [(CHECKED.addr("LO"), v) for v in range(16)]
    plan = []
    for i, w in enumerate(writes):
        plan.append(w)
        if i % 3 == 2:     # clear the sticky bit now and then
            plan.append((CHECKED.addr("WERR"), 0))

    async def bench(ctx):
        for addr, data in plan:
            ctx.set(dut.csr_w.payload, {"addr": addr, "data": data})
            ctx.set(dut.csr_w.valid, 1)
            hit = model.write(addr, data)
            want = 0 if hit is None else 1 << names.index(hit[0].name)
            assert (ctx.get(dut.wstb), ctx.get(dut.refused)) == (want, int(model.refused)), \
                f"write 0x{data:x} to word {addr}"
            await ctx.tick()
            ctx.set(dut.csr_w.valid, 0)
            for name in names:
                ctx.set(dut.csr_raddr, CHECKED.addr(name))
                await ctx.tick()
                assert ctx.get(dut.csr_rdata) == model.read(CHECKED.addr(name)), name

    # the model's rule by hand, so the comparison above is not only RTL = model
    m = CHECKED.model()
    assert m.write(0, 0 | 1 << 8) is None and m.refused and m.read(CHECKED.addr("WERR")) == 1
    assert m.write(0, 1 | 3 << 8) is None and m.refused
    assert m.write(0, 1 | 5 << 8 | 15 << 12) is not None and m.read(0) == 0xF501
    assert m.write(0, 255 | 6 << 8) is None and m.write(0, 255 | 2 << 8) is not None
    assert m.write(1, 1) is None and m.write(1, 2) is not None and m.read(1) == 2
    run_testbenches(dut, bench)


def test_field_rules():
    """What the declarations accept and compute, at their boundaries."""
    # legal values: a range from 0, a read-write field's reset checked, a command's not
    assert Field("f", 4, legal=((0, 3),)).is_legal(0)
    assert Field("f", 4, access="wo", legal=((1, 3),)).reset == 0
    with pytest.raises(ValueError, match="reset 0 is not legal"):
        Field("f", 4, legal=((1, 3),))
    with pytest.raises(ValueError, match="positive int"):
        Field("f", 0)
    with pytest.raises(ValueError, match="does not fit"):
        Field("f", 4, legal=((0, 16),))
    with pytest.raises(ValueError, match="read-only field"):
        Field("f", 4, access="ro", legal=((0, 3),))
    # the documentation writes values up to 0xFFFF in decimal, above in hex
    assert Field("f", 20, legal=((0, 65535), (65536, 0xFFFFF))).legal_text == \
        "0..65535, 0x10000..0xFFFFF"
    # unpack keeps each field's own bits
    assert TOY["CTRL"].unpack(0xFFFF_FFFF) == {"mode": 3, "enable": 1, "busy": 1, "level": 31}
    assert TOY["CTRL"].unpack(1 << 2 | 2 << 8) == {"mode": 0, "enable": 1, "busy": 0,
                                                     "level": 2}
    # the simple lists' fourth element is the description
    described = RegisterMap.from_list("d", "DESC", [("A", 8, 0, "the a knob"), ("B", 8, 0)])
    assert described["A"].desc == "the a knob" and described["B"].desc == ""
    assert "| the a knob |" in described.markdown()
    # flow numbers: 0 .. flows - 1
    assert FLOWS.addr("RATE", 0) == FLOWS.flow_base
    with pytest.raises(ValueError, match=r"give a flow 0\.\.4$"):
        FLOWS.addr("RATE", 5)
    with pytest.raises(ValueError, match=r"give a flow 0\.\.4$"):
        FLOWS.addr("RATE", -1)


def test_wide_fields_model():
    """A field wider than a word (module docstring, "Wide fields"): a high word is staged
    until the low word commits both; reading the low word snapshots both."""
    wide = RegisterMap("wide", wide_registers("big", 40), "WIDE")
    a0, a1 = wide.addr("BIG_W0"), wide.addr("BIG_W1")
    m = wide.model()
    m.write(a1, 0xAB)
    assert m["BIG_W1"] == 0 and m.read(a0) == 0 and m.read(a1) == 0
    m.write(a0, 0x1234_5678)
    assert (m["BIG_W0"], m["BIG_W1"]) == (0x1234_5678, 0xAB)
    assert m.read(a1) == 0           # the snapshot taken by the last read of W0
    assert m.read(a0) == 0x1234_5678 and m.read(a1) == 0xAB
    m.write(a1, 0xCD)
    m.write(a0, 1)
    assert m.read(a1) == 0xAB        # still the old snapshot
    assert m.read(a0) == 1 and m.read(a1) == 0xCD


def test_groups_and_windows():
    """A group's port width and the window decode of a part."""
    alone = RegisterMapGroup("g1", (("a", 0, TOY),))
    assert alone.addr_width == TOY.addr_width
    two = RegisterMapGroup("g2", (("a", 0, FLOWS), ("b", 64, FLOWS)))
    assert two.addr_width == 7 and two.addr("b", "RATE", 1) == 64 + FLOWS.addr("RATE", 1)
    word = Signal(8)
    local, inside = rtl_window(word, 64, FLOWS)
    full_local, full_inside = rtl_window(Signal(6), 0, FLOWS)
    dut = Module()
    dut.d.comb += Signal().eq(inside)

    async def bench(ctx):
        for w in range(256):
            ctx.set(word, w)
            assert (ctx.get(local), ctx.get(inside)) == (w & 63, int(64 <= w < 128)), w
        assert ctx.get(full_inside) == 1

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()


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
        # every field's reset as the compiler reads it: a read-write field's and the header's
        # constants; none for a field the block drives
        resets = {node.get_path(): node.get_property("reset")
                  for node in root.descendants(unroll=True)
                  if isinstance(node, systemrdl.node.FieldNode)}
        for r in regmap.registers + regmap.header:
            for f in r.fields:
                want = f.reset if f.access == "rw" or r in regmap.header else None
                assert resets[f"{regmap.name}.{r.name}.{f.name}"] == want, (r.name, f.name)
        if regmap.flows:
            for r in regmap.flow_registers:
                assert got[f"{regmap.name}.FLOW[4].{r.name}"] == 4 * regmap.addr(r.name, 4)
