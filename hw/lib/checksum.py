"""The Internet checksum (RFC 1071) in RTL: ones'-complement sums of big-endian 16-bit words."""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Value

__all__ = ["ones_sum", "be_words"]


def ones_sum(words: list[Value], bound: int | None = None) -> Value:
    """One's complement sum (RFC 1071) of 16-bit values, folded to 16 bits: end-around carries
    are added back until the value provably fits (the bound is tracked per fold).  ``bound``:
    the largest possible plain sum, when ``words`` are themselves plain sums of 16-bit words
    (default ``0xFFFF * len(words)``).  The checksum field is the complement of the result."""
    total = sum(words)
    bound = 0xFFFF * len(words) if bound is None else bound
    while bound > 0xFFFF:
        hi = bound >> 16
        total = total[:16] + total[16:]
        bound = max((bound & 0xFFFF) + hi, 0xFFFF + hi - 1)
    return total[:16]


def be_words(byte_list: list[Value]) -> list[Value]:
    """Big-endian 16-bit words of a list of bytes in wire order (odd length: zero padded)."""
    if len(byte_list) % 2:
        byte_list = byte_list + [Const(0, 8)]
    return [Cat(byte_list[i + 1], byte_list[i]) for i in range(0, len(byte_list), 2)]
