"""Layouts and helpers every family of blocks uses: the IP ECN codepoint, register writes, byte
streams, the wire-order header helper and the fast layout codec."""

from amaranth.hdl import Shape
from amaranth.lib import data, enum

__all__ = ["Ecn", "csr_write_layout", "byte_beat_layout", "wire_header", "LayoutCodec"]


class Ecn(enum.Enum, shape=2):
    """IP ECN codepoint (RFC 3168)."""
    NOT_ECT = 0b00
    ECT1 = 0b01
    ECT0 = 0b10
    CE = 0b11



def csr_write_layout(addr_width: int, data_width: int = 32) -> data.StructLayout:
    """A register write: address (word index) and data."""
    return data.StructLayout({"addr": addr_width, "data": data_width})



def byte_beat_layout(data_bytes: int) -> data.StructLayout:
    """A beat of a byte stream: wire byte i in ``data[8i:8i+8]``; ``keep`` bit i = byte i
    valid (all ones except possibly on the last beat, whose valid bytes are the low ones)."""
    return data.StructLayout({"data": 8 * data_bytes, "keep": data_bytes, "last": 1})



def wire_header(*fields: tuple[str, int]) -> data.StructLayout:
    """A packet header layout from its fields in WIRE ORDER (first bit on the wire first).

    Byte-order convention: a header layout is the header read as ONE BIG-ENDIAN INTEGER.  Wire
    byte 0 is the most significant byte of ``layout.const({...}).as_bits()``, so
    ``bits.to_bytes(layout.size // 8, "big")`` gives the bytes in wire order.  Amaranth places
    a layout's first field at the least significant bits, so this helper declares the fields in
    reverse; each field then holds its natural (network-order) value, bit fields included
    (IPv4 byte 0: ``version`` is the high nibble, ``ihl`` the low one).
    """
    names = [name for name, _ in fields]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate field in header {names}")
    return data.StructLayout(dict(reversed(fields)))


class LayoutCodec:
    """Fast packing and unpacking of a flat ``StructLayout``, derived from the layout itself.

    ``layout.const({...}).as_bits()`` is the reference (and is what the tests compare this
    against), but it costs ~100 µs per call and silently truncates values that do not fit a
    field.  The codec reads each field's offset, width and enum type from the layout once, then
    packs in a few µs and raises :class:`ValueError` naming the field when a value is out of
    range; ``unpack`` returns a dict of ints and enum members.
    """

    def __init__(self, layout: data.StructLayout):
        self.layout = layout
        self.fields = []
        for name, field in layout:
            shape = field.shape
            enum_type = shape if isinstance(shape, type) and issubclass(shape, enum.Enum) else None
            self.fields.append((name, field.offset, Shape.cast(shape).width, enum_type))
        self.size = layout.size

    def pack(self, values: dict) -> int:
        bits = 0
        for name, offset, width, enum_type in self.fields:
            value = values.get(name, 0)
            if enum_type is not None and isinstance(value, enum_type):
                value = value.value
            value = int(value)
            if not 0 <= value < (1 << width):
                raise ValueError(f"field {name!r} = {value} does not fit {width} bits")
            bits |= value << offset
        return bits

    def unpack(self, bits: int) -> dict:
        out = {}
        for name, offset, width, enum_type in self.fields:
            value = (bits >> offset) & ((1 << width) - 1)
            out[name] = enum_type(value) if enum_type is not None else value
        return out

