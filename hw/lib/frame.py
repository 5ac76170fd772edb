"""Frames in RTL: headers packed through the wire-order layouts of :mod:`hw.layouts.packets`,
their wire bytes, and the shift register that puts a frame on a byte stream."""

from __future__ import annotations

from amaranth.hdl import C, Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data

from ..params import bits_for

__all__ = ["pack_fields", "be_bytes", "from_be", "shift_out"]


def pack_fields(layout: data.StructLayout, values: dict) -> Value:
    """A header as a Value, packed through ``layout`` (fields at the layout's offsets; an int
    is a constant of the field's width, a Value is truncated to it)."""
    parts = []
    for name, field in sorted(layout, key=lambda nf: nf[1].offset):
        v = values[name]
        parts.append(Const(v, field.width) if isinstance(v, int) else Value.cast(v)[:field.width])
    return Cat(*parts)


def be_bytes(value: Value, nbytes: int) -> list[Value]:
    """The wire bytes of a header Value (a big-endian integer, the ``hw.layouts`` convention)."""
    return [value[8 * (nbytes - 1 - i):8 * (nbytes - i)] for i in range(nbytes)]


def from_be(layout: data.StructLayout, byte_list: list[Value]) -> data.View:
    """A header layout viewed over its wire bytes (byte 0 the most significant)."""
    return data.View(layout, Cat(*reversed(byte_list)))


def shift_out(m: Module, out, data_bytes: int, max_bytes: int, load, body, length,
              min_length: int = 1) -> Value:
    """Shift a frame out of one register onto the byte stream ``out``, ``data_bytes`` per beat
    (``keep``, ``last``), one beat per clock.  ``load`` (only while idle) takes ``body`` (wire
    byte i in bits [8i, 8i+8)) and ``length`` (bytes, ``min_length`` <= length).  Returns
    ``idle``."""
    DB = data_bytes
    nbeats = -(-max_bytes // DB)
    buf = Signal(8 * DB * nbeats)
    left = Signal(bits_for(max_bytes))
    # valid, last and keep are registers, set with ``left``: computed from ``left`` they put a
    # compare and a carry chain before the enable of the whole frame register (the critical
    # path of the CNM generator, 8.9 ns).  A frame never shorter than a beat (``min_length``)
    # loads constant flags, so the request's length arithmetic does not reach them either.
    valid, last = Signal(), Signal(init=1)
    keep = Signal(DB)
    m.d.comb += [
        out.valid.eq(valid),
        out.payload.data.eq(buf[:8 * DB]),
        out.payload.keep.eq(keep),
        out.payload.last.eq(last),
    ]

    def flags(n):          # (last, keep) of a frame with n >= 1 bytes left
        return n <= DB, Mux(n <= DB, (Const(1, DB + 1) << n) - 1, (1 << DB) - 1)

    rest = (left - DB)[:len(left)]
    with m.If(out.valid & out.ready):
        m.d.sync += buf.eq(buf >> (8 * DB))
        with m.If(last):
            m.d.sync += [left.eq(0), valid.eq(0), last.eq(1), keep.eq(0)]
        with m.Else():
            r_last, r_keep = flags(rest)
            m.d.sync += [left.eq(rest), last.eq(r_last), keep.eq(r_keep)]
    with m.If(load):
        l_last, l_keep = (C(0, 1), (1 << DB) - 1) if min_length > DB else flags(length)
        m.d.sync += [buf.eq(body), left.eq(length), valid.eq(1), last.eq(l_last),
                     keep.eq(l_keep)]
    return ~valid
