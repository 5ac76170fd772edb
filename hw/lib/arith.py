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
