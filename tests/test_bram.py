"""hw.lib.bram: the generic form against an independent Python reference (latency 2, both
enables, the collision rule), and the ECP5 form's DP16KD tiling and parameters."""

import random
import re

import pytest
from amaranth.back import verilog
from amaranth.hdl import Elaboratable, Module
from amaranth.lib import data
from amaranth.sim import Simulator

from hw.lib.bram import Bram, BramTarget, ecp5_tiling


class Host(Elaboratable):
    """A module that only holds the RAM (its ports are the RAM's signals)."""

    def __init__(self, shape, depth, addr_reg=False, out_reg=None):
        self.ram = Bram(shape, depth, name="ram", addr_reg=addr_reg, out_reg=out_reg)

    def elaborate(self, platform):
        m = Module()
        self.ram.build(m, platform)
        return m


def _ports(ram):
    return [ram.w_addr, ram.w_data, ram.w_en, ram.r_addr, ram.r_en, ram.r_data]


def _verilog(width, depth, platform=None, addr_reg=False, out_reg=None):
    host = Host(width, depth, addr_reg, out_reg)
    return verilog.convert(host, platform=platform, ports=_ports(host.ram), emit_src=False)


def run_reference_check(width, depth, cycles, seed, addr_reg=False, out_reg=False):
    """Random writes, reads and enables; r_data is compared every cycle with a reference
    written from the documented contract: the read register takes mem[r_addr] at an edge with
    r_en, and so does the output register, from the read register (a stall holds both); a
    read whose address is written at the same edge is undefined (not compared until it is
    replaced).  With ``addr_reg``: an address register takes r_addr at an edge with r_en and
    the read register takes mem[address register] (undefined if that address is written at
    the same edge); r_data is the read register, or with ``out_reg`` too an output register
    taking the read register at an edge with r_en (latency 3)."""
    print(f"seed {seed}")
    rng = random.Random(seed)
    host = Host(width, depth, addr_reg, True if out_reg else None)
    assert host.ram.latency == 1 + addr_reg + (out_reg or not addr_reg)
    dut = host.ram
    sim = Simulator(host)
    sim.add_clock(1e-6)
    checked = [0]

    async def bench(ctx):
        mem = [0] * depth
        rreg, rreg_ok = 0, True          # the RAM's read register (ok: defined)
        oreg, oreg_ok = 0, True          # the output register
        areg = 0                         # the address register (addr_reg)
        for _ in range(cycles):
            wa, wd, we = rng.randrange(depth), rng.getrandbits(width), rng.random() < 0.6
            ra = wa if rng.random() < 0.15 else rng.randrange(depth)
            ren = rng.random() < 0.8
            ctx.set(dut.w_addr, wa)
            ctx.set(dut.w_data, wd)
            ctx.set(dut.w_en, we)
            ctx.set(dut.r_addr, ra)
            ctx.set(dut.r_en, ren)
            if oreg_ok:
                assert ctx.get(dut.r_data) == oreg
                checked[0] += 1
            await ctx.tick()
            if addr_reg and out_reg:
                # the edge: all three registers move with r_en
                if ren:
                    oreg, oreg_ok = rreg, rreg_ok
                    rreg, rreg_ok = mem[areg], not (we and wa == areg)
                    areg = ra
            elif addr_reg:
                # the edge: the read register takes the addressed word, the address register
                # the new address; the output is the read register
                if ren:
                    rreg, rreg_ok = mem[areg], not (we and wa == areg)
                    areg = ra
                oreg, oreg_ok = rreg, rreg_ok
            elif ren:
                # the edge: the output register takes the read register's old value
                oreg, oreg_ok = rreg, rreg_ok
                rreg, rreg_ok = mem[ra], not (we and wa == ra)
            if we:
                mem[wa] = wd

    sim.add_testbench(bench)
    sim.run()
    assert checked[0] > cycles // 2


@pytest.mark.parametrize("width, depth, seed", [(8, 16, 1), (13, 5, 2), (1, 2, 3)])
def test_generic_against_reference(width, depth, seed):
    run_reference_check(width, depth, 1500, seed)


@pytest.mark.parametrize("width, depth, seed", [(8, 16, 6), (13, 5, 7), (1, 2, 8)])
def test_addr_reg_against_reference(width, depth, seed):
    run_reference_check(width, depth, 1500, seed, addr_reg=True)


@pytest.mark.parametrize("width, depth, seed", [(8, 16, 9), (13, 5, 10), (1, 2, 11)])
def test_latency_3_against_reference(width, depth, seed):
    run_reference_check(width, depth, 1500, seed, addr_reg=True, out_reg=True)


def test_out_reg_alone_refused():
    with pytest.raises(ValueError, match="out_reg=False needs addr_reg"):
        Bram(8, 4, out_reg=False)


def test_layout_shape():
    """A struct layout passes through: fields of r_data are the fields written."""
    lay = data.StructLayout({"a": 3, "b": 9})
    host = Host(lay, 4)
    dut = host.ram
    sim = Simulator(host)
    sim.add_clock(1e-6)

    async def bench(ctx):
        ctx.set(dut.w_addr, 2)
        ctx.set(dut.w_data, {"a": 5, "b": 300})
        ctx.set(dut.w_en, 1)
        await ctx.tick()
        ctx.set(dut.w_en, 0)
        ctx.set(dut.r_addr, 2)
        await ctx.tick()
        ctx.set(dut.r_addr, 0)
        assert ctx.get(dut.r_data.b) != 300      # latency 2: not yet
        await ctx.tick()
        assert ctx.get(dut.r_data.a) == 5 and ctx.get(dut.r_data.b) == 300

    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("width, depth, expected", [
    # (w, words, columns, banks), hand-counted: the fewest DP16KD, fewer banks on a tie
    (60, 1024, (18, 1024, 4, 1)),       # 4 x 18 = 72 >= 60
    (36, 1024, (18, 1024, 2, 1)),
    (60, 4096, (9, 2048, 7, 2)),        # 14 (4-bit: 15, 18-bit: 16)
    (20, 4096, (4, 4096, 5, 1)),        # 5 (9-bit: 3 x 2 = 6)
    (30, 16384, (1, 16384, 30, 1)),     # 30 (2-bit: 15 x 2 = 30, more banks)
    (18, 2048, (9, 2048, 2, 1)),        # 2 (18-bit: 1 x 2 = 2, more banks)
])
def test_ecp5_tiling(width, depth, expected):
    assert ecp5_tiling(width, depth) == expected


def _instances(text):
    return re.findall(r"DP16KD #\((.*?)\) (\w+) \((.*?)\);", text, re.S)


@pytest.mark.parametrize("width, depth, n, w, abits", [(40, 1024, 3, 18, 10),
                                                       (20, 4096, 5, 4, 12),
                                                       (60, 4096, 14, 9, 11),
                                                       (81, 128, 5, 18, 10)])
def test_ecp5_form(width, depth, n, w, abits):
    """The ECP5 form: n DP16KD, port B's output register on, the address on the upper
    ADx bits of the configuration (ADB[13:14 - abits]), nothing on the lower ones; the generic
    form has no primitive."""
    text = _verilog(width, depth, BramTarget("ecp5"))
    inst = _instances(text)
    assert len(inst) == n
    for params, _, conns in inst:
        assert '.REGMODE_B("OUTREG")' in params
        assert f".DATA_WIDTH_B(32'd{w})" in params
        for i in range(14):
            conn = re.search(rf"\.ADB{i}\(([^)]*)\)", conns).group(1)
            if i < 14 - abits or i - (14 - abits) >= (depth - 1).bit_length():
                assert conn == "1'h0", (i, conn)     # below the address / above the depth
            else:
                assert conn == f"ram_r_addr[{i - (14 - abits)}]", (i, conn)
        assert re.search(r"\.OCEB\(ram_r_en\)", conns) and re.search(r"\.CEB\(ram_r_en\)", conns)
    assert "DP16KD" not in _verilog(width, depth)


@pytest.mark.parametrize("width, depth, n, banks", [(40, 1024, 3, 1), (60, 4096, 14, 2)])
def test_ecp5_addr_reg_form(width, depth, n, banks):
    """``addr_reg``: port B without its output register (NOREG), its address from the
    address register (not ``r_addr``), and with several banks one bank-select register."""
    text = _verilog(width, depth, BramTarget("ecp5"), addr_reg=True)
    inst = _instances(text)
    assert len(inst) == n
    for params, _, conns in inst:
        assert '.REGMODE_B("NOREG")' in params
        assert "ram_r_addr_q" in conns and not re.search(r"\(ram_r_addr\[", conns)
    assert ("ram_bsel1" in text) == (banks > 1) and "ram_bsel2" not in text


@pytest.mark.parametrize("width, depth, n, banks", [(40, 1024, 3, 1), (60, 4096, 14, 2)])
def test_ecp5_latency_3_form(width, depth, n, banks):
    """``addr_reg`` and ``out_reg``: port B's output register on, its address from the address
    register, and with several banks two bank-select registers (the data's two stages)."""
    text = _verilog(width, depth, BramTarget("ecp5"), addr_reg=True, out_reg=True)
    inst = _instances(text)
    assert len(inst) == n
    for params, _, conns in inst:
        assert '.REGMODE_B("OUTREG")' in params
        assert "ram_r_addr_q" in conns and not re.search(r"\(ram_r_addr\[", conns)
    assert ("ram_bsel1" in text) == (banks > 1) and ("ram_bsel2" in text) == (banks > 1)


class HostA(Elaboratable):
    """A RAM with port A's fetch-and-replace (``read_a=True``)."""

    def __init__(self, width, depth):
        self.ram = Bram(width, depth, name="ram", read_a=True)

    def elaborate(self, platform):
        m = Module()
        self.ram.build(m, platform)
        return m


@pytest.mark.parametrize("width, depth, seed", [(8, 16, 4), (15, 5, 5)])
def test_read_a_against_reference(width, depth, seed):
    """``a_data`` in cycle c + 2 is the word at ``w_addr`` of cycle c BEFORE that cycle's
    write (writes to one address in consecutive cycles return each other's data in order);
    port B is unchanged.  The reference is written from the documented contract."""
    print(f"seed {seed}")
    rng = random.Random(seed)
    host = HostA(width, depth)
    dut = host.ram
    sim = Simulator(host)
    sim.add_clock(1e-6)

    async def bench(ctx):
        mem = [0] * depth
        pipe = [None, None]              # a_data expected: (value) of 1 and 2 edges ago
        hot = rng.randrange(depth)
        checked = 0
        for _ in range(1500):
            # a third of the writes hit one address: back-to-back fetch-and-replace
            wa = hot if rng.random() < 0.35 else rng.randrange(depth)
            wd, we = rng.getrandbits(width), rng.random() < 0.7
            ctx.set(dut.w_addr, wa)
            ctx.set(dut.w_data, wd)
            ctx.set(dut.w_en, we)
            ctx.set(dut.r_addr, rng.randrange(depth))
            if pipe[1] is not None:
                assert ctx.get(dut.a_data) == pipe[1]
                checked += 1
            await ctx.tick()
            pipe = [mem[wa], pipe[0]]
            if we:
                mem[wa] = wd
        assert checked > 1000

    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("width, depth, n, banks", [(15, 65536, 60, 4), (20, 4096, 5, 1)])
def test_ecp5_read_a_form(width, depth, n, banks):
    """The ECP5 form with read_a: port A in READBEFOREWRITE with its output register on, DOA
    connected; with several banks a_data is a bank multiplexer (asel registers).  Without
    read_a port A stays NORMAL / NOREG with DOA unconnected."""
    host = HostA(width, depth)
    r = host.ram
    text = verilog.convert(host, platform=BramTarget("ecp5"),
                           ports=_ports(r) + [r.a_data], emit_src=False)
    inst = _instances(text)
    assert len(inst) == n
    for params, _, conns in inst:
        assert '.WRITEMODE_A("READBEFOREWRITE")' in params
        assert '.REGMODE_A("OUTREG")' in params
        assert re.search(r"\.DOA0\([^)\s]", conns)
    assert ("ram_asel2" in text) == (banks > 1)
    plain = _verilog(width, depth, BramTarget("ecp5"))
    for params, _, conns in _instances(plain):
        assert '.WRITEMODE_A("NORMAL")' in params and '.REGMODE_A("NOREG")' in params
        assert ".DOA0(" not in conns
