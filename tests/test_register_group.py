"""Several register maps on one port: :class:`hw.lib.csr.RegisterMapGroup`, used by the Swift
NIC (the Swift engine's map and the pacer's, each with its own header and per-flow windows).

Checked against addresses derived by hand for ``SwiftNicConfig.for_flows(4)`` with the test's
small wheel (tests/test_swift_nic.py ``small``): the Swift engine's map is 1024 words
(globals from word 0, counters from 128, header at 256, flow ``f`` word ``r`` at
``512 + 16 f + r``: nine window registers, so 16 words per flow); the pacer's is 1024 words at
word 1024 (header 1024 + 256, flow ``f`` word ``r`` at ``1024 + 512 + 8 f + r``: eight window
registers).  The SystemRDL through PeakRDL's C header and the RTL behind AXI4-Lite must both
agree with those numbers."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from hw.lib.axi_lite import AxiLiteRegs
from hw.lib.csr import RegisterMap, RegisterMapGroup, fourcc
from hw.nic.swift_nic import SwiftNic
from tests.streams import axil_read, axil_read_resp, axil_write, run_testbenches
from tests.test_swift_nic import small

OKAY, SLVERR = 0, 2
SWIFT_ID, PACER_ID = 256, 1024 + 256                  # word addresses, by hand
SWIFT_FLOW3_CTRL = 512 + 3 * 16 + 8                    # CTRL is the 9th window register
PACER_FLOW3_CTRL = 1024 + 512 + 3 * 8 + 7             # CTRL is the 8th
PACER_IVAL_INIT, PACER_WC = 1024, 1024 + 2


def _map(name, n_regs=3, **kw):
    return RegisterMap.from_list(name, "TEST", [(f"R{i}", 8, i) for i in range(n_regs)], **kw)


def test_group_rejects_overlap_misalignment_and_duplicates():
    a, b = _map("a"), _map("b")                         # 32 words each (header at 16)
    assert a.addr_width == 5
    with pytest.raises(ValueError, match="overlap"):
        RegisterMapGroup("g", (("a", 0, a), ("b", 0, b)))
    with pytest.raises(ValueError, match="not aligned"):
        RegisterMapGroup("g", (("a", 0, a), ("b", 48, b)))
    with pytest.raises(ValueError, match="unique"):
        RegisterMapGroup("g", (("a", 0, a), ("a", 32, b)))
    g = RegisterMapGroup("g", (("a", 0, a), ("b", 64, b)))
    assert (g.addr_width, g.size_bytes) == (7, 512)     # words 0..95: 7 bits
    assert g.decode(64 + 16)[:2] == ("b", b["ID"])
    assert g.decode(40) is None                         # between the parts
    assert g.c_layout()["b__ID"] == 4 * (64 + 16) and g.c_layout()["b__R1.r1"] == 0


def test_swift_nic_group_addresses_by_hand():
    g = small(4).register_map("nic")
    assert [(i, b) for i, b, _ in g.parts] == [("swift", 0), ("pacer", 1024)]
    assert g.addr_width == 11 and g.size_bytes == 8192
    assert g.addr("swift", "ID") == SWIFT_ID and g.addr("pacer", "ID") == PACER_ID
    assert g.addr("swift", "CTRL", 3) == SWIFT_FLOW3_CTRL
    assert g.addr("pacer", "CTRL", 3) == PACER_FLOW3_CTRL
    layout = g.c_layout()
    assert layout["swift__ID"] == 4 * SWIFT_ID and layout["pacer__ID"] == 4 * PACER_ID
    assert layout["pacer__IVAL_INIT"] == 4 * PACER_IVAL_INIT
    assert g.decode(PACER_FLOW3_CTRL)[0] == "pacer" and g.decode(PACER_FLOW3_CTRL)[2] == 3
    rdl = g.systemrdl()
    assert "} swift @ 0x0;" in rdl and "} pacer @ 0x1000;" in rdl
    assert "Part `pacer`" in g.markdown()


CC = shutil.which("cc") or shutil.which("gcc")


@pytest.mark.skipif(CC is None, reason="no C compiler")
def test_swift_nic_c_header_by_hand(tmp_path):
    pytest.importorskip("peakrdl_cheader")
    from gateware.export import export_registers
    g = small(4).register_map("nic")
    h = export_registers(g, tmp_path)["h"]
    checks = {
        "offsetof(nic_t, swift.ID)": 4 * SWIFT_ID,
        "offsetof(nic_t, pacer.ID)": 4 * PACER_ID,
        "offsetof(nic_t, pacer.IVAL_INIT)": 4 * PACER_IVAL_INIT,
        "offsetof(nic_t, swift.FLOW[3].CTRL)": 4 * SWIFT_FLOW3_CTRL,
        "offsetof(nic_t, pacer.FLOW[3].CTRL)": 4 * PACER_FLOW3_CTRL,
        "NIC__PACER__FLOW__GRANTS__GRANTS_bw": 16,
    }
    src = tmp_path / "t.c"
    src.write_text(f'#include "{h.name}"\n#include <stddef.h>\n#include <stdio.h>\n'
                   "int main(void) {\n" + "".join(
                       f'    printf("%lu\\n", (unsigned long)({e}));\n' for e in checks)
                   + "    return 0;\n}\n")
    exe = tmp_path / "t"
    subprocess.run([CC, "-std=c11", "-I", str(tmp_path), "-o", str(exe), str(src)], check=True)
    got = [int(x) for x in subprocess.run([str(exe)], capture_output=True, text=True,
                                          check=True).stdout.split()]
    assert dict(zip(checks, got, strict=True)) == checks


def test_swift_nic_behind_axi_lite():
    """The composition behind one AXI4-Lite slave: both headers, a pacer register written and
    read back, a window word of each part; SLVERR for unmapped words of either part and for a
    write to a read-only word."""
    cfg = small(4)
    dut = AxiLiteRegs(SwiftNic(cfg), cfg.register_map())
    assert dut.addr_width == 11 + 2

    async def bench(ctx):
        while not ctx.get(dut.ready):
            await ctx.tick()
        assert await axil_read(ctx, dut, SWIFT_ID) == fourcc("SWFE")
        assert await axil_read(ctx, dut, PACER_ID) == fourcc("PACE")
        assert await axil_write(ctx, dut, PACER_WC, 1) == OKAY
        assert await axil_read(ctx, dut, PACER_WC) == 1
        assert await axil_write(ctx, dut, PACER_FLOW3_CTRL - 7 + 5, 1234) == OKAY   # IVAL_W0
        assert await axil_read(ctx, dut, PACER_FLOW3_CTRL - 7 + 5, limit=200) == 1234
        assert await axil_read(ctx, dut, SWIFT_FLOW3_CTRL - 8, limit=200) == 0    # PACE
        for word in (11, 512 + 9, PACER_IVAL_INIT + 3, 1024 + 512 + 4 * 8):
            assert (await axil_read_resp(ctx, dut, word))[1] == SLVERR, word
        assert await axil_write(ctx, dut, PACER_ID, 0) == SLVERR             # read-only
        assert await axil_write(ctx, dut, 1024 + 512, 5) == SLVERR           # GRANTS: read-only
        assert await axil_write(ctx, dut, 11, 5) == SLVERR                   # unmapped

    run_testbenches(dut, bench, period=1e-6)
