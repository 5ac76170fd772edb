"""cocotb testbench of the AXI4-Lite register slave (:class:`hw.lib.axi_lite.AxiLiteRegs`)
around a block, driven by cocotbext-axi's ``AxiLiteMaster``: every word of the map read after
reset (reset values, the identification header, SLVERR and 0 on unmapped words), every
register written and read back against the block's golden model, SLVERR on writes to
read-only or unmapped words and on partial strobes (nothing written), and back-to-back
accesses (all writes, then all reads, issued at once).  ``CC_TOP`` names the top
(gateware/tops.py) whose block is wrapped; ``CC_SEED`` overrides the seed."""

from __future__ import annotations

import logging
import os
import warnings

import cocotb
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiResp

from cocotb_tests.infra.tb import TBBase, env_seed
from gateware.tops import TOPS

# cocotbext-axi 0.1.28 still calls cocotb 2's deprecated setimmediatevalue; the suite turns
# warnings into errors, so this library's own deprecation warnings are let through.
warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"cocotbext\.")


def _model(top: str):
    """(write, read) of the block's golden model for the registers."""
    cfg = TOPS[top].config
    if top.startswith("marker"):
        from sim.models.marker import MarkerModel
        model = MarkerModel(cfg)
        return model.write, model.read
    if top.startswith("ldcp_window"):
        from sim.models.ldcp_window import LdcpWindowModel
        model = LdcpWindowModel(cfg)
        return model._write, model.read
    if top.startswith("cnp_gen"):
        from sim.models.cnp import CnpModel
        model = CnpModel(cfg)
        return model.write, model.read
    regs = cfg.register_map().model()
    return regs.write, regs.read


class TB(TBBase):
    def __init__(self, dut):
        super().__init__(dut, env_seed(31))
        self.top = os.environ["CC_TOP"]
        self.regmap = TOPS[self.top].config.register_map()
        self.write_model, self.read_model = _model(self.top)
        for name, value in ((n, 0) for n in ("desc__valid", "decision__ready", "ack__valid",
                                             "request__valid", "frame__ready", "start__valid",
                                             "pkt__ready", "sent", "inflight")):
            if hasattr(dut, name):
                getattr(dut, name).value = value
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        for log in (self.axil.write_if.log, self.axil.read_if.log):
            log.setLevel(logging.WARNING)

    async def read_word(self, word: int):
        resp = await self.axil.read(4 * word, 4)
        return int.from_bytes(resp.data, "little"), resp.resp

    async def check_all(self, when: str):
        for word in range(1 << self.regmap.addr_width):
            value, resp = await self.read_word(word)
            mapped = self.regmap.decode(word) is not None
            assert resp == (AxiResp.OKAY if mapped else AxiResp.SLVERR), \
                f"{when}: word 0x{word:02x} answered {resp}"
            want = self.read_model(word)
            assert value == want, f"{when}: word 0x{word:02x} = 0x{value:x}, model 0x{want:x}"


@cocotb.test()
async def registers(dut):
    """Reset values; write and read back every register; errors change nothing."""
    tb = TB(dut)
    await tb.reset()
    await tb.check_all("after reset")
    regmap = tb.regmap
    for _ in range(2):
        for reg in tb.rng.sample(regmap.registers, len(regmap.registers)):
            value = tb.rng.getrandbits(32)
            resp = await tb.axil.write(4 * reg.addr, value.to_bytes(4, "little"))
            assert resp.resp == (AxiResp.OKAY if reg.writable else AxiResp.SLVERR), reg.name
            if reg.writable:
                tb.write_model(reg.addr, value)
        await ClockCycles(dut.clk, 2)
        await tb.check_all("after writes")
    # errors: unmapped, read-only (the header), partial strobes; nothing may change
    writable = [r for r in regmap.registers if r.writable]
    unmapped = [w for w in range(1 << regmap.addr_width) if regmap.decode(w) is None]
    for word in unmapped[:4] + [regmap.header_offset, regmap.header_offset + 3]:
        resp = await tb.axil.write(4 * word, b"\xff\xff\xff\xff")
        assert resp.resp == AxiResp.SLVERR, f"write to word 0x{word:02x}: {resp.resp}"
    for reg in writable[:3]:
        resp = await tb.axil.write(4 * reg.addr, b"\xa5\xa5")        # 2 of 4 byte strobes
        assert resp.resp == AxiResp.SLVERR, f"partial write to {reg.name}: {resp.resp}"
        resp = await tb.axil.write(4 * reg.addr + 1, b"\x5a")         # one byte, unaligned
        assert resp.resp == AxiResp.SLVERR, f"byte write to {reg.name}: {resp.resp}"
    await tb.check_all("after rejected writes")


@cocotb.test()
async def back_to_back(dut):
    """Every register written, then every word read, all issued at once (the master queues
    them and the slave takes them as fast as it can)."""
    tb = TB(dut)
    await tb.reset()
    regmap = tb.regmap
    writes = []
    for reg in regmap.registers:
        if reg.writable:
            value = tb.rng.getrandbits(32)
            writes.append(cocotb.start_soon(
                tb.axil.write(4 * reg.addr, value.to_bytes(4, "little"))))
            tb.write_model(reg.addr, value)
    for w in writes:
        assert (await w).resp == AxiResp.OKAY
    await ClockCycles(dut.clk, 2)
    words = list(range(1 << regmap.addr_width))
    reads = [cocotb.start_soon(tb.axil.read(4 * w, 4)) for w in words]
    start = tb.cycle()
    for word, r in zip(words, reads, strict=True):
        resp = await r
        value = int.from_bytes(resp.data, "little")
        assert value == tb.read_model(word), f"word 0x{word:02x} = 0x{value:x}"
    cycles = tb.cycle() - start
    tb.log.info("%d back-to-back reads in %d cycles", len(words), cycles)
    assert cycles <= 3 * len(words) + 8, f"{len(words)} reads took {cycles} cycles"
