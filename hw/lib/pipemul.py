"""A pipelined unsigned multiplier in logic (shift-and-add), for products on a fast clock.

Why not ``a * b``: Yosys maps a product to the FPGA's multiplier blocks without their internal
pipeline registers (on the ECP5 nothing packs flip-flops into MULT18X18D), and a register ->
MULT18X18D -> register path alone takes about 8 ns on speed grade 6, so every block with a
product on a register-to-register path is held near 125 MHz whatever else it does.  This
helper builds the product as the sum of the shifted copies of ``a`` selected by the bits of
``b``, added in a tree of ``fan_in``-input adders with a register after each level: each
stage is at most two carry chains deep.

``pipelined_product(m, a, b, en=...)`` returns ``(product, latency)``; the product of the
operands presented at an enabled edge appears ``latency`` enabled edges later (the pipeline
advances only when ``en`` is high, so it stays aligned with a stalling pipeline around it).
``stages`` pads the latency to a fixed number of register levels (at least what the tree
needs), so callers can keep one latency across configurations.
"""

from __future__ import annotations

from amaranth.hdl import Mux, Signal

__all__ = ["product_levels", "pipelined_product"]


def product_levels(b_width: int, fan_in: int = 4) -> int:
    """Register levels of the adder tree for a ``b_width``-bit multiplier (at least 1)."""
    terms, levels = b_width, 0
    while terms > 1 or levels == 0:
        terms = -(-terms // fan_in)
        levels += 1
    return levels


def _tree(values):
    while len(values) > 1:
        values = [values[i] + values[i + 1] if i + 1 < len(values) else values[i]
                  for i in range(0, len(values), 2)]
    return values[0]


def pipelined_product(m, a, b, *, en=None, fan_in: int = 4, stages: int | None = None,
                      name: str = "mul", domain: str = "sync", drop_low: int = 0):
    """``a * b`` (unsigned) after ``latency`` enabled edges; returns ``(product, latency)``.

    ``drop_low``: return ``(a * b) >> drop_low``; the last level's register holds only those
    bits (a caller that discards the low bits then leaves no unused flip-flops)."""
    width = len(a) + len(b)
    assert 0 <= drop_low < width, (name, drop_low, width)
    en = 1 if en is None else en
    levels = product_levels(len(b), fan_in)
    if stages is not None and stages < levels:
        raise ValueError(f"{name}: {len(b)}-bit multiplier needs {levels} stages, not {stages}")
    terms = [Mux(b[i], a << i, 0) for i in range(len(b))]
    level = 0
    while level == 0 or len(terms) > 1:
        nxt = []
        final = len(terms) <= fan_in
        for j in range(0, len(terms), fan_in):
            sum_ = _tree(terms[j:j + fan_in])
            if final and drop_low:
                reg = Signal(width - drop_low, name=f"{name}_l{level}_{j // fan_in}")
                sum_ = sum_[drop_low:]
            else:
                reg = Signal(width, name=f"{name}_l{level}_{j // fan_in}")
            with m.If(en):
                m.d[domain] += reg.eq(sum_)
            nxt.append(reg)
        terms, level = nxt, level + 1
    out = terms[0]
    for extra in range((stages or levels) - levels):
        reg = Signal(len(out), name=f"{name}_pad{extra}")
        with m.If(en):
            m.d[domain] += reg.eq(out)
        out = reg
    return out, stages or levels
