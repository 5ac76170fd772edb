"""The register port every block on the register layer (:mod:`hw.lib.csr`) has.

``csr_w``: a stream of ``(addr, data)`` word writes (``ready``: the block takes the write now;
see :meth:`hw.lib.csr.CsrBank.build` for the "apply only while idle" rule); ``csr_raddr`` /
``csr_rdata``: the read port, data one cycle after the address.  The address width is the
register map's (:attr:`hw.lib.csr.RegisterMap.addr_width`), the data width 32 bits.

A block whose reads may take longer (a multi-flow engine's per-flow windows: the flow's state
comes out of its pipeline) adds a read handshake, ``csr_ports(regmap, wait=True)``:
``csr_rstb`` (in) is 1 in the cycle a read of ``csr_raddr`` starts (the address is held until
the answer), ``csr_rack`` (out) is 1 in the cycle ``csr_rdata`` holds its answer: the cycle
after ``csr_rstb`` for a word that answers at once, later for one that waits.  One read at a
time.  :class:`hw.lib.axi_lite.AxiLiteRegs` drives it when the block has it.
"""

from __future__ import annotations

from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from ..layouts.common import csr_write_layout
from .csr import RegisterMap

__all__ = ["csr_ports"]


def csr_ports(regmap: RegisterMap, wait: bool = False) -> dict:
    """The members ``csr_w``, ``csr_raddr``, ``csr_rdata`` of a block's signature (``wait``:
    and the read handshake ``csr_rstb`` / ``csr_rack``)."""
    aw, dw = regmap.addr_width, regmap.data_width
    ports = {"csr_w": In(stream.Signature(csr_write_layout(aw, dw))),
             "csr_raddr": In(aw), "csr_rdata": Out(dw)}
    if wait:
        ports |= {"csr_rstb": In(1), "csr_rack": Out(1)}
    return ports
