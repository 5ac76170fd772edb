"""The register port every block on the register layer (:mod:`hw.lib.csr`) has.

``csr_w``: a stream of ``(addr, data)`` word writes (``ready``: the block takes the write now;
see :meth:`hw.lib.csr.CsrBank.build` for the "apply only while idle" rule); ``csr_raddr`` /
``csr_rdata``: the read port, data one cycle after the address.  The address width is the
register map's (:attr:`hw.lib.csr.RegisterMap.addr_width`), the data width 32 bits.
"""

from __future__ import annotations

from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from ..layouts.common import csr_write_layout
from .csr import RegisterMap

__all__ = ["csr_ports"]


def csr_ports(regmap: RegisterMap) -> dict:
    """The members ``csr_w``, ``csr_raddr``, ``csr_rdata`` of a block's signature."""
    aw, dw = regmap.addr_width, regmap.data_width
    return {"csr_w": In(stream.Signature(csr_write_layout(aw, dw))),
            "csr_raddr": In(aw), "csr_rdata": Out(dw)}
