"""Formal properties of the Internet checksum (:mod:`hw.lib.checksum`) and of the CNP
generator's IPv4 header checksum (:mod:`hw.nic.cnp_gen`).

The reference is the arithmetic definition, not the RTL's fold: the ones'-complement sum of
words whose plain sum is ``S`` is 0 when ``S == 0`` and else the value in ``[1, 0xFFFF]``
congruent to ``S`` modulo ``0xFFFF`` (each end-around carry adds ``2**16 - 1 = 0 (mod
0xFFFF)`` back); a header whose checksum field is right sums (with the field) to ``0xFFFF``,
i.e. to a non-zero multiple of ``0xFFFF`` before folding.
"""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Cover, Module, Mux, Signal
from amaranth.hdl._ast import AnyConst

from hw.layouts import IPV4_HEADER, cnp_request_layout
from hw.lib.checksum import ones_sum
from hw.lib.frame import pack_fields
from hw.nic.cnp_config import REG_WIDTHS, CnpGenConfig, cnp_header_fields

from .runner import Property

__all__ = ["PROPERTIES"]


def fold_reference(total):
    """The ones'-complement sum of words whose plain sum is ``total`` (the definition)."""
    return Mux(total == 0, 0, (total - 1) % 0xFFFF + 1)


def _ones_sum_plain(n: int):
    def build():
        m = Module()
        words = [AnyConst(16) for _ in range(n)]
        got = Signal(16)
        m.d.comb += got.eq(ones_sum(words))
        m.d.comb += Assert(got == fold_reference(sum(words)))
        # the end-around carry arises, twice when n > 1, and the zero/0xFFFF edges exist
        total = Signal(range(0xFFFF * n + 1))
        m.d.comb += total.eq(sum(words))
        m.d.comb += [Cover(total == 0xFFFF), Cover(total == 0x10000), Cover(got == 0xFFFF)]
        if n > 1:
            m.d.comb += Cover(total == 0xFFFF * n)
        return m
    return build


def _ones_sum_partials(bounds: tuple[int, ...]):
    """``ones_sum(partials, sum(bounds))``, partials being plain sums bounded by ``bounds``
    (the L3QCN generator's two-stage checksum)."""
    def build():
        m = Module()
        parts = []
        for i, b in enumerate(bounds):
            p = Signal(range(b + 1), name=f"p{i}")
            m.d.comb += [p.eq(AnyConst(len(p))), Assume(p <= b)]
            parts.append(p)
        got = Signal(16)
        m.d.comb += got.eq(ones_sum(parts, sum(bounds)))
        m.d.comb += Assert(got == fold_reference(sum(parts)))
        m.d.comb += [Cover(sum(parts) == sum(bounds)), Cover(got == 0xFFFF)]
        return m
    return build


def _cnp_header_checksum():
    """The CNP generator's IPv4 header (its shared field function ``cnp_header_fields`` and
    ``pack_fields``, as the RTL builds it) with the checksum the RTL computes
    (``~ones_sum`` of the header with a zero field) verifies: all ten words sum to 0xFFFF, for
    every request and every register value."""
    def build():
        m = Module()
        cfg = CnpGenConfig(ip_version=4, l2="none", data_bytes=16)
        req = Signal(cnp_request_layout(cfg))
        regs = {reg: Signal(w, name=reg.name.lower()) for reg, w in REG_WIDTHS.items()}
        m.d.comb += req.eq(AnyConst(len(req.as_value())))
        m.d.comb += [sig.eq(AnyConst(len(sig))) for sig in regs.values()]

        def header(cksum):
            ip = cnp_header_fields(cfg, regs, req, cksum, masked=False)[0]
            hdr = pack_fields(IPV4_HEADER, ip)
            return [hdr[16 * k:16 * (k + 1)] for k in range(10)]

        cksum = Signal(16)
        m.d.comb += cksum.eq(~ones_sum(header(0)))
        m.d.comb += Assert(ones_sum(header(cksum)) == 0xFFFF)
        m.d.comb += [Cover(cksum == 0), Cover(cksum == 0x8000)]
        return m
    return build


PROPERTIES = [
    Property("checksum.ones_sum_10", "ones_sum of 10 words (an IPv4 header) equals the "
             "ones'-complement sum, every input", _ones_sum_plain(10), mode="prove", depth=1,
             cover_depth=1),
    Property("checksum.ones_sum_2", "ones_sum of 2 words (one end-around carry)",
             _ones_sum_plain(2), mode="prove", depth=1, cover_depth=1, quick=True),
    Property("checksum.ones_sum_partials", "ones_sum of two bounded partial sums (the L3QCN "
             "UDP checksum's two halves) equals the definition",
             _ones_sum_partials((0xFFFF * 14, 0xFFFF * 14)), mode="prove", depth=1,
             cover_depth=1, quick=True),
    Property("cnp_gen.ipv4_header_checksum", "the CNP's IPv4 header with the generator's "
             "checksum sums to 0xFFFF, every request and register value",
             _cnp_header_checksum(), mode="prove", depth=1, cover_depth=1),
]
