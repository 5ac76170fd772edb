"""Small arithmetic helpers of the RTL (combinational expressions)."""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, Value

__all__ = ["saturating_inc", "popcount", "umin", "umax", "named_wire", "delayed"]


def saturating_inc(counter: Value) -> Value:
    """``counter + 1``, holding at all ones."""
    return counter + (counter != (1 << len(counter)) - 1)


def popcount(bits: Value) -> Value:
    """The number of bits set in ``bits``."""
    return sum(bits[i] for i in range(len(bits)))


def umin(a: Value, b: Value) -> Value:
    """The smaller of two unsigned values (the width of the wider)."""
    return Mux(a < b, a, b)


def umax(a: Value, b: Value) -> Value:
    """The larger of two unsigned values (the width of the wider)."""
    return Mux(a > b, a, b)


def at_most_one(x, frac: int):
    """A fraction register (``frac`` fraction bits) whose values above 1.0 read as 1.0.

    Such a register is a bit wider than its fraction so that it holds 1.0 exactly; the values
    it can also hold between 1.0 and 2.0 mean nothing and would make a gain turn a state
    negative or a floor outgrow its width.  An OR of the high bits and a select, on registers
    only (ahead of a product's partial-product AND, into which synthesis merges it); a Python
    int gives ``min(x, 1.0)``."""
    if isinstance(x, int):
        return min(x, 1 << frac)
    x = Value.cast(x)
    return Mux(x[frac:].any(), 1 << frac, x)


def named_wire(m: Module, name: str, expr, width: int | None = None, cond=None) -> Signal:
    """A named combinational signal carrying ``expr``, for a value used more than once: the
    Verilog computes it once (a reused Python expression is emitted at every use) and the name
    shows in waveforms.  ``width``: truncate to that many bits (default: the full shape);
    ``cond``: drive it only when ``cond`` holds (0 otherwise)."""
    sig = Signal(Value.cast(expr).shape() if width is None else width, name=name)
    if cond is None:
        m.d.comb += sig.eq(expr)
    else:
        with m.If(cond):
            m.d.comb += sig.eq(expr)
    return sig


def delayed(m: Module, value, cycles: int, name: str = "dly", domain: str = "sync"):
    """``value`` as it was ``cycles`` clock edges ago (a shift register of ``cycles`` stages;
    ``cycles == 0`` returns ``value`` itself).  Pipelined datapaths carry their operands to the
    stage that uses them with it."""
    out = value
    for i in range(cycles):
        reg = Signal(Value.cast(value).shape(), name=f"{name}_d{i + 1}")
        m.d[domain] += reg.eq(out)
        out = reg
    return out
