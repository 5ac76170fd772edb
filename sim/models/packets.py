"""Packet building blocks of the golden models: headers as wire bytes through the shared
layouts (``hw.layouts.packets``: a header is a big-endian integer), the Internet checksum
(RFC 1071) and the IPv4/UDP pieces the CNP, CNM and private-CNM models share."""

from __future__ import annotations

import functools

from hw.layouts import IPV4_HEADER, LayoutCodec, byte_beat_layout

__all__ = ["codec", "header_bytes", "ones_sum", "ipv4_checksum", "udp_checksum",
           "ipv4_header", "stream_beats", "FrameAssembler"]


@functools.cache
def codec(layout) -> LayoutCodec:
    """The :class:`LayoutCodec` of ``layout`` (built once per layout)."""
    return LayoutCodec(layout)


def header_bytes(layout, values: dict) -> bytes:
    """A header's wire bytes; raises ``ValueError`` naming a field whose value does not fit."""
    return codec(layout).pack(values).to_bytes(layout.size // 8, "big")


def ones_sum(data: bytes) -> int:
    """The ones'-complement sum (RFC 1071) of big-endian 16-bit words (odd length: zero
    padded), folded to 16 bits."""
    data = data + b"\0" * (len(data) % 2)
    total = sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def ipv4_checksum(header: bytes) -> int:
    """RFC 791/1071: the complement of the ones'-complement sum of the header (checksum 0)."""
    return ~ones_sum(header) & 0xFFFF


def udp_checksum(src_ip: int, dst_ip: int, udp: bytes) -> int:
    """RFC 768 over the IPv4 pseudo-header and the UDP datagram (checksum field zero);
    a computed 0 is sent as 0xFFFF."""
    pseudo = src_ip.to_bytes(4, "big") + dst_ip.to_bytes(4, "big") + bytes([0, 17])
    pseudo += len(udp).to_bytes(2, "big")
    return (~ones_sum(pseudo + udp) & 0xFFFF) or 0xFFFF


def ipv4_header(*, dscp: int, ecn: int, ttl: int, total_length: int, src: int, dst: int,
                ident: int = 0, protocol: int = 17) -> bytes:
    """An IPv4 header without options, DF set, not fragmented, with its checksum."""
    fields = dict(version=4, ihl=5, dscp=dscp, ecn=ecn, total_length=total_length, id=ident,
                  flags=0b010, frag_offset=0, ttl=ttl, protocol=protocol, checksum=0, src=src,
                  dst=dst)
    fields["checksum"] = ipv4_checksum(header_bytes(IPV4_HEADER, fields))
    return header_bytes(IPV4_HEADER, fields)


def stream_beats(data_bytes: int, frame: bytes) -> list[int]:
    """A frame as packed beats of ``byte_beat_layout(data_bytes)``: wire byte i of a beat in
    bits [8i, 8i+8), ``keep`` for the valid bytes, ``last`` on the final beat."""
    layout = byte_beat_layout(data_bytes)
    beats = []
    for start in range(0, len(frame), data_bytes):
        chunk = frame[start:start + data_bytes]
        beats.append(layout.const({
            "data": int.from_bytes(chunk, "little"), "keep": (1 << len(chunk)) - 1,
            "last": int(start + data_bytes >= len(frame))}).as_bits())
    return beats


class FrameAssembler:
    """Frames back from packed beats of ``byte_beat_layout(data_bytes)`` (the inverse of
    :func:`stream_beats`), checking the stream's rules: ``keep`` contiguous from byte 0 and not
    empty, all bytes valid except on the last beat.  ``push(bits)`` returns the frame its last
    beat completes (also appended to ``frames``), else ``None``."""

    def __init__(self, data_bytes: int):
        self.data_bytes = data_bytes
        self.codec = codec(byte_beat_layout(data_bytes))
        self.partial = b""
        self.frames: list[bytes] = []

    def push(self, bits: int) -> bytes | None:
        v = self.codec.unpack(bits)
        keep, n = v["keep"], v["keep"].bit_length()
        assert n > 0 and keep == (1 << n) - 1, f"keep {keep:#x} is not contiguous from byte 0"
        assert v["last"] or n == self.data_bytes, "a partial beat that is not the last"
        self.partial += v["data"].to_bytes(self.data_bytes, "little")[:n]
        if not v["last"]:
            return None
        frame, self.partial = self.partial, b""
        self.frames.append(frame)
        return frame
