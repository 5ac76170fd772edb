"""AXI4-Lite register slave around any block with the project's register port.

:class:`AxiLiteRegs` wraps a block that has ``csr_w`` (a stream of ``(addr, data)`` word
writes), ``csr_raddr`` and ``csr_rdata`` (data one cycle after the address) and a register map
(:mod:`hw.lib.csr`).  The wrapper has every other port of the block unchanged and, instead of
the register port, an AXI4-Lite slave (AMBA AXI4-Lite, ARM IHI 0022) with the usual signal
names ``s_axil_*``, so that a Vivado/Quartus/LiteX interconnect or cocotbext-axi's
``AxiLiteMaster`` can drive it.
"""

from __future__ import annotations

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .csr import RegisterMap, RegisterMapGroup, map_windows, rtl_legal_write, rtl_window

__all__ = ["AxiLiteRegs", "OKAY", "SLVERR", "axi_lite_members"]

OKAY, SLVERR = 0b00, 0b10
_CSR_PORTS = ("csr_w", "csr_raddr", "csr_rdata")
#: the read handshake of a block whose reads may wait (hw/lib/csr_port.py)
_WAIT_PORTS = ("csr_rstb", "csr_rack")


def axi_lite_members(addr_width: int, data_width: int = 32, prefix: str = "s_axil") -> dict:
    """The signature members of an AXI4-Lite slave (byte addresses of ``addr_width`` bits;
    no ``awprot``/``arprot``: a slave may omit them, and these registers do not use them)."""
    p = prefix
    return {
        f"{p}_awaddr": In(addr_width), f"{p}_awvalid": In(1),
        f"{p}_awready": Out(1),
        f"{p}_wdata": In(data_width), f"{p}_wstrb": In(data_width // 8), f"{p}_wvalid": In(1),
        f"{p}_wready": Out(1),
        f"{p}_bresp": Out(2), f"{p}_bvalid": Out(1), f"{p}_bready": In(1),
        f"{p}_araddr": In(addr_width), f"{p}_arvalid": In(1),
        f"{p}_arready": Out(1),
        f"{p}_rdata": Out(data_width), f"{p}_rresp": Out(2), f"{p}_rvalid": Out(1),
        f"{p}_rready": In(1),
    }


class AxiLiteRegs(wiring.Component):
    """A block with its register port replaced by an AXI4-Lite slave.

    Parameters
    ----------
    block : wiring.Component
        The block (``csr_w``, ``csr_raddr``, ``csr_rdata`` ports).
    regmap : RegisterMap or RegisterMapGroup
        Its register map (``block.config.register_map()`` when omitted); a group for a
        composition with several maps on one port (the Swift NIC).

    Ports
    -----
    every port of ``block`` except the register port, unchanged;
    ``s_axil_*`` : the AXI4-Lite slave, byte addresses of ``regmap.addr_width + 2`` bits
    (the map's size; an interconnect strips the base address), 32-bit data.

    Behaviour
    ---------
    * A write (address and data taken together) to a word with a writable field is passed to
      the block's ``csr_w`` and answered ``OKAY`` once the block takes it (the block may hold
      it while busy: the response waits).  A write to an unmapped word, to a read-only
      register (the identification header, status words), to an address that is not a
      multiple of 4, or with byte strobes other than all ones is not performed and answered
      ``SLVERR``.  A write refused by a field's legal values (:mod:`hw.lib.csr`, "Refused
      writes") is passed to the block all the same (it keeps the register and sets its
      ``WERR.refused``) and answered ``SLVERR``.
    * A read returns the block's word and ``OKAY``; an unmapped or unaligned address reads 0
      with ``SLVERR``.  With a block that has the read handshake (``csr_rstb`` / ``csr_rack``,
      :mod:`hw.lib.csr_port`: a multi-flow engine's per-flow windows) ``rvalid`` waits for
      ``csr_rack``: AXI4-Lite lets a slave hold a read as long as it needs.
    * No ``awprot``/``arprot`` (not used).  One read and one write may be outstanding at once.

    Latency and throughput
    ----------------------
    Read: ``rvalid`` two cycles after the address is taken (or the cycle after ``csr_rack``),
    one read every three cycles with an always-ready master.  Write: ``bvalid`` the cycle
    after the block takes the write (one cycle after the address and data when the block is
    idle).
    """

    def __init__(self, block: wiring.Component,
                 regmap: RegisterMap | RegisterMapGroup | None = None):
        self.block = block
        self.regmap = regmap if regmap is not None else block.config.register_map()
        members = {n: m for n, m in block.signature.members.items()
                   if n not in _CSR_PORTS + _WAIT_PORTS}
        missing = [n for n in _CSR_PORTS if n not in block.signature.members]
        if missing:
            raise TypeError(f"{type(block).__name__} has no register port {missing}")
        self.waits = "csr_rack" in block.signature.members
        self.addr_width = self.regmap.addr_width + 2
        super().__init__({**members, **axi_lite_members(self.addr_width)})

    def _decode(self, word, writes: bool):
        """1 where ``word`` is mapped (``writes``: and has a writable field), in any of the
        port's maps (a :class:`hw.lib.csr.RegisterMapGroup`'s parts: each decodes the low
        bits of its aligned window)."""
        hit = Const(0, 1)
        for base, regmap in map_windows(self.regmap):
            local, inside = rtl_window(word, base, regmap)
            hit = hit | (inside & self._decode_map(regmap, local, writes))
        return hit

    @staticmethod
    def _decode_map(regmap, word, writes: bool):
        hit = Const(0, 1)
        regs = [r for r in regmap.registers if r.writable or not writes]
        if not writes:
            regs += list(regmap.header)
        for r in regs:
            hit = hit | (word == r.addr)
        if regmap.flows:
            top = regmap.addr_width - 1
            index = word[:regmap.flow_shift] if regmap.flow_shift else Const(0, 1)
            flow_hit = Const(0, 1)
            for r in regmap.flow_registers:
                if r.writable or not writes:
                    flow_hit = flow_hit | (index == r.addr)
            flow_ok = word[regmap.flow_shift:top] < regmap.flows
            hit = Mux(word[top], flow_hit & flow_ok, hit)
        return hit

    def elaborate(self, platform):
        m = Module()
        m.submodules.block = block = self.block

        # ---- every other port passes through ------------------------------------------------
        for path, member, outer in self.signature.flatten(self):
            if path[0].startswith("s_axil_"):
                continue
            inner = block
            for part in path:
                inner = getattr(inner, part) if isinstance(part, str) else inner[part]
            if member.flow == In:
                m.d.comb += inner.eq(outer)
            else:
                m.d.comb += outer.eq(inner)

        def s(name):
            return getattr(self, f"s_axil_{name}")

        # ---- writes: address and data together, then the block's csr_w, then the response --
        w_busy = Signal()           # a write is waiting for the block
        b_valid, b_resp = s("bvalid"), s("bresp")   # (the response ports are registers)
        w_word = Signal(self.regmap.addr_width)
        w_data = Signal(32)
        w_bad = Signal()            # the waiting write will be refused (answered SLVERR)
        take_w = s("awvalid") & s("wvalid") & ~w_busy & ~b_valid
        aw_word = s("awaddr")[2:]
        w_ok = (self._decode(aw_word, writes=True) & (s("wstrb") == 0xF)
                & (s("awaddr")[:2] == 0))
        refused = Const(0, 1)
        for base, regmap in map_windows(self.regmap):
            local, inside = rtl_window(aw_word, base, regmap)
            for r in regmap.registers:
                if r.writable and r.checked:
                    refused = refused | (inside & (local == r.addr)
                                         & ~rtl_legal_write(r, s("wdata")))
        m.d.comb += [s("awready").eq(take_w), s("wready").eq(take_w),
                     block.csr_w.valid.eq(w_busy), block.csr_w.payload.addr.eq(w_word),
                     block.csr_w.payload.data.eq(w_data)]
        with m.If(take_w):
            m.d.sync += [w_word.eq(aw_word), w_data.eq(s("wdata")), w_bad.eq(refused)]
            with m.If(w_ok):
                m.d.sync += w_busy.eq(1)
            with m.Else():
                m.d.sync += [b_valid.eq(1), b_resp.eq(SLVERR)]
        with m.If(w_busy & block.csr_w.ready):
            m.d.sync += [w_busy.eq(0), b_valid.eq(1), b_resp.eq(Mux(w_bad, SLVERR, OKAY))]
        with m.If(b_valid & s("bready")):
            m.d.sync += b_valid.eq(0)

        # ---- reads: the block's word one cycle after the address, held until taken ---------
        r_wait = Signal()           # the block's rdata is for r_word at the coming edge
        r_valid = s("rvalid")
        r_word = Signal(self.regmap.addr_width)
        r_ok = Signal()
        take_r = s("arvalid") & ~r_wait & ~r_valid
        ar_word = s("araddr")[2:]
        m.d.comb += [s("arready").eq(take_r),
                     block.csr_raddr.eq(Mux(take_r, ar_word, r_word))]
        answered = Const(1)
        if self.waits:
            m.d.comb += block.csr_rstb.eq(take_r)
            answered = block.csr_rack
        with m.If(take_r):
            m.d.sync += [r_word.eq(ar_word), r_wait.eq(1),
                         r_ok.eq(self._decode(ar_word, writes=False) & (s("araddr")[:2] == 0))]
        with m.If(r_wait & answered):
            m.d.sync += [r_wait.eq(0), r_valid.eq(1),
                         s("rdata").eq(Mux(r_ok, block.csr_rdata, 0)),
                         s("rresp").eq(Mux(r_ok, OKAY, SLVERR))]
        with m.If(r_valid & s("rready")):
            m.d.sync += r_valid.eq(0)
        return m
