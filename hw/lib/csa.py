"""Carry-save arithmetic for products and sums in logic (the pipelined datapaths).

Yosys maps ``a * b`` to the ECP5's MULT18X18D without its pipeline registers, too slow between
flip-flops at 156.25 MHz, so the pipelined DCQCN and QCN datapaths build their products as rows
(shifted copies of one operand selected by the bits of the other) and reduce them with rows of
3:2 compressors, one LUT level each (sum = x ^ y ^ z, carry = majority shifted up one), leaving
two rows for one carry chain.  Everything is modulo ``2**width``.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Value

__all__ = ["fit", "compress"]


def fit(x, width: int) -> Value:
    """``x`` mod ``2**width`` (sign- or zero-extended, or truncated), unsigned."""
    x = Value.cast(x)
    if len(x) >= width:
        return x[:width]
    fill = x[-1].replicate(width - len(x)) if x.shape().signed else Const(0, width - len(x))
    return Cat(x, fill)


def compress(rows, width: int, levels: int | None = None) -> list:
    """``levels`` rows of 3:2 compressors over ``rows`` (every level, down to two rows, when
    ``levels`` is None), summed mod ``2**width``: the rows left (their sum is unchanged)."""
    if len(rows) <= 2:
        return list(rows)
    rows = [fit(x, width) for x in rows]
    level = 0
    while len(rows) > 2 and (levels is None or level < levels):
        full = len(rows) // 3 * 3
        nxt = []
        for j in range(0, full, 3):
            a, b, c = rows[j:j + 3]
            nxt += [a ^ b ^ c, Cat(Const(0, 1), (a & b) | (a & c) | (b & c))[:width]]
        rows, level = nxt + rows[full:], level + 1
    return rows
