"""Frames in RTL: headers packed through the wire-order layouts of :mod:`hw.layouts.packets`,
their wire bytes, and the shift register that puts a frame on a byte stream."""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
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


def shift_out(m: Module, out, data_bytes: int, max_bytes: int, load, body, length) -> Value:
    """Shift a frame out of one register onto the byte stream ``out``, ``data_bytes`` per beat
    (``keep``, ``last``), one beat per clock.  ``load`` (only while idle) takes ``body`` (wire
    byte i in bits [8i, 8i+8)) and ``length`` (bytes >= 1).  Returns ``idle``."""
    DB = data_bytes
    nbeats = -(-max_bytes // DB)
    buf = Signal(8 * DB * nbeats)
    left = Signal(bits_for(max_bytes))
    last = left <= DB
    m.d.comb += [
        out.valid.eq(left != 0),
        out.payload.data.eq(buf[:8 * DB]),
        out.payload.keep.eq(Mux(last, (Const(1, DB + 1) << left) - 1, (1 << DB) - 1)),
        out.payload.last.eq(last),
    ]
    with m.If(out.valid & out.ready):
        m.d.sync += [buf.eq(buf >> (8 * DB)), left.eq(Mux(last, 0, left - DB))]
    with m.If(load):
        m.d.sync += [buf.eq(body), left.eq(length)]
    return left == 0
