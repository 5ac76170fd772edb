"""Feed-forward pipeline helpers of the delay-based datapaths (TIMELY, Swift): a stage hook
that registers the values of a namespace a later stage reads (no flip-flop for a dead value;
:meth:`Stages.finish` adds the registers once the update is built), products as carry-save
rows, wide sums split over two stages, and an exact restoring divider two quotient bits per
stage.

Everything is written once for both forms of a datapath: with ``Stages(m, pipelined=False)``
every cut is the identity and the update is one combinational cycle (the engine's
``latency = 1`` form); with ``pipelined=True`` every cut is a register stage and the update
takes ``latency = 1 + cuts`` cycles (the engine's ``latency > 1`` contract: no loop, no
enable, the run-time registers constant while updates are in flight).

The divider is :func:`sim.models.divider.udiv_sat`'s floor quotient computed as the hardware
does: after the overflow check (``num >= den * 2**Q``: the quotient saturates) the partial
remainder stays below ``den * 2**(i + 2)``, and each radix-4 step compares the two-bit window
of the remainder with ``den``, ``2 den`` and ``3 den`` side by side (three carry chains of the
divisor's width + 2 bits, then a 4:1 select): two exact quotient bits per step, one step per
pipeline stage.  :func:`radix4_divide` is the same algorithm in ints (the tests compare it
with ``udiv_sat``).
"""

from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data

from .csa import compress, fit

__all__ = ["Cut", "Stages", "mul_rows", "reduce_rows", "split_lo", "split_hi", "lt", "Divider",
           "radix4_divide"]


class Cut(SimpleNamespace):
    """The namespace after a cut: a value's register (or, combinational, its named wire) is
    made when a later stage first reads it, so a value whose last use is before the cut is
    not carried (no flip-flop holds a value nobody reads)."""

    def __init__(self, pending: dict):
        object.__setattr__(self, "_pending", pending)

    def __getattr__(self, name):
        pending = self.__dict__["_pending"]
        if name not in pending:
            raise AttributeError(name)
        value = pending.pop(name)()
        object.__setattr__(self, name, value)
        return value

    def __setattr__(self, name, value):
        self.__dict__["_pending"].pop(name, None)
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if self.__dict__["_pending"].pop(name, None) is None:
            object.__delattr__(self, name)

    def names(self) -> list:
        return [k for k in vars(self) if k != "_pending"] + list(self.__dict__["_pending"])


class Stages:
    """The cut hook: ``v = stages(v)`` registers (when ``pipelined``; else names as a wire)
    each value of the namespace ``v`` that a later stage reads (lists element by element;
    ints and ``None`` pass unchanged).  The registers are made as they are read
    (:class:`Cut`, possibly inside an ``m.If``), so their statements are added by
    :meth:`finish`, which the datapath calls once its update is built.  ``k``: the cuts
    registered so far (the update's latency is ``1 + k``).

    ``cuts``: the cut points (numbered from 1, per call) that are registers, for a datapath
    whose latency selects a subset of its cut points (the QCN engine's); the others pass the
    namespace on unchanged, and ``pipelined`` is whether any is a register.  Without it every
    cut point is a register (``pipelined``) or a named wire."""

    def __init__(self, m: Module, pipelined: bool = False, prefix: str = "", cuts=None):
        self.cuts = None if cuts is None else frozenset(cuts)
        if self.cuts is not None:
            pipelined = bool(self.cuts)
        self.m, self.pipelined, self.prefix, self.k, self.n = m, pipelined, prefix, 0, 0
        self._stmts, self._finished = [], False

    def __call__(self, v: SimpleNamespace) -> SimpleNamespace:
        # combinational form: every value read later still becomes a named wire at the cut,
        # so that the carry-save trees stay a DAG (an expression reused by the next section
        # is emitted once)
        self.n += 1
        if self.cuts is not None and self.n not in self.cuts:
            return v
        self.k += self.pipelined
        names = v.names() if isinstance(v, Cut) else list(vars(v))
        return Cut({name: (lambda name=name, n=self.n: self._reg(name, getattr(v, name), n))
                    for name in names})

    def _reg(self, name, x, n):
        if isinstance(x, (list, tuple)):
            return [self._reg(f"{name}{j}", y, n) for j, y in enumerate(x)]
        if x is None or isinstance(x, int):
            return x
        # (a read after finish() would make a register nothing drives)
        assert not self._finished, f"{name} read after Stages.finish()"
        shape = x.shape() if isinstance(x, data.View) else Value.cast(x).shape()
        reg = Signal(shape, name=f"{self.prefix}p{n}_{name}")
        self._stmts.append(reg.eq(x))
        return reg

    def finish(self):
        """Add the cuts' statements (unconditional), once the update is built."""
        if self._stmts:
            if self.pipelined:
                self.m.d.sync += self._stmts
            else:
                self.m.d.comb += self._stmts
        self._stmts, self._finished = [], True

    def reduce(self, rows, width: int, levels: int = 3) -> list:
        """``levels`` rows of 3:2 compressors (the same in both forms: the combinational one
        names each row, so that the tree stays a DAG in the simulator and the Verilog)."""
        rows = compress(rows, width, levels)
        if self.pipelined:
            return rows
        out = []
        for x in rows:
            sig = Signal(len(Value.cast(x)), name=f"{self.prefix}c{self.n}_{len(out)}")
            self.m.d.comb += sig.eq(x)
            out.append(sig)
        return out


def mul_rows(a, b, width: int) -> list:
    """``a * b`` mod ``2**width`` as rows to add up: the copies of ``a`` (signed or unsigned,
    extended to ``width``) shifted by ``j`` and selected by bit ``j`` of ``b`` (unsigned)."""
    a, b = Value.cast(a), Value.cast(b)
    return [fit(Mux(b[j], a, 0) << j, width) for j in range(len(b))]


def reduce_rows(rows, width: int) -> Value:
    """The sum of the rows mod ``2**width`` (one carry chain once two rows are left)."""
    rows = compress(rows, width)
    total = rows[0] if len(rows) == 1 else rows[0] + rows[1]
    return Value.cast(total)[:width]


def split_lo(rows, h: int, drop: int = 0) -> tuple:
    """A wide sum over two stages, first half: the rows reduced to two, the sum of their low
    ``h`` bits (``h + 1`` bits, the carry on top) and their high parts, to carry to
    :func:`split_hi`.  ``drop``: the caller reads only the sum's bits from ``drop`` up, so
    only the low half's bits ``drop .. h`` are returned (the bits below are not carried)."""
    assert 0 <= drop <= h, (drop, h)
    rows = compress(rows, max(len(Value.cast(x)) for x in rows))
    lo = rows[0][:h] if len(rows) == 1 else rows[0][:h] + rows[1][:h]
    return Value.cast(lo)[drop:], [Value.cast(x)[h:] for x in rows]


def split_hi(lo, his, h: int, width: int, drop: int = 0) -> Value:
    """The second half: the high parts plus the low half's carry; the sum mod ``2**width``
    (its ``drop`` low bits 0: :func:`split_lo` with the same ``drop``)."""
    lo = Value.cast(lo)
    hi = his[0] + lo[h - drop] if len(his) == 1 else his[0] + his[1] + lo[h - drop]
    return Cat(Const(0, drop), lo[:h - drop], Value.cast(hi)[:width - h])


def lt(a, b) -> Value:
    """``a < b`` (unsigned or signed operands) as the sign of ``a - b``: one carry chain."""
    a, b = Value.cast(a), Value.cast(b)
    w = max(len(a), len(b)) + (2 if a.shape().signed or b.shape().signed else 1)
    return (fit(a, w) - fit(b, w))[w - 1]


class Divider:
    """``floor(num / den)`` saturated to ``2**qbits - 1`` (:func:`sim.models.divider.udiv_sat`),
    one radix-4 step per :meth:`step`.  Build it with the operands (:meth:`start`, which also
    makes the overflow check unless ``check=False``: the caller knows the quotient fits), keep
    its live values in the stage namespace (:attr:`vals`, a list), call :meth:`step` once per
    stage until :attr:`done`, then :meth:`quotient`.  Only live bits are carried: the quotient
    grows by each step's digits (no constant or shifted-out bits), the saturation flag exists
    only with the check, and the last step leaves the quotient and the flag alone (its
    remainder and the divisor's multiples are read by nothing after it)."""

    def __init__(self, den_width: int, qbits: int):
        self.dw, self.q = den_width, qbits
        # positions of the steps, most significant first: a radix-2 step first if qbits is odd
        self.positions = list(range(qbits - 2, -1, -2))
        if qbits % 2:
            self.positions = [qbits - 1] + [p for p in range(qbits - 3, -1, -2)]
        self.n = 0

    @property
    def steps(self) -> int:
        return len(self.positions)

    @property
    def done(self) -> bool:
        return self.n == len(self.positions)

    def start(self, num, den, check: bool = True) -> list:
        """The values the steps carry: [remainder, den, 3 den, quotient so far (None: no
        digit yet), saturated (None: no check)]."""
        dw, Q = self.dw, self.q
        num, den = Value.cast(num), Value.cast(den)[:dw]
        rw = Q + dw
        sat = None
        if check:
            # num >= den 2**Q  <=>  floor(num / 2**Q) >= den
            sat = ~lt(num[Q:], den) if len(num) > Q else (den == 0)
        den3 = (den + (den << 1))[:dw + 2]
        self.n = 0
        return [fit(num, rw), den, den3, None, sat]

    def step(self, vals) -> list:
        """One step: the next values, or ``[quotient bits, saturated]`` after the last."""
        rem, den, den3, q, sat = vals
        dw = self.dw
        i = self.positions[self.n]
        self.n += 1
        radix2 = self.q % 2 == 1 and i == self.q - 1
        if radix2:
            hi = rem[i:i + dw + 1]
            r1 = (fit(hi, dw + 2) - fit(den, dw + 2))[:dw + 2]
            d1 = ~r1[dw + 1]
            new = Mux(d1, r1, fit(hi, dw + 2))[:dw]
            digit = d1
        else:
            hi = rem[i:i + dw + 2]
            w = dw + 3
            r1 = (fit(hi, w) - fit(den, w))[:w]
            r2 = (fit(hi, w) - fit(den << 1, w))[:w]
            r3 = (fit(hi, w) - fit(den3, w))[:w]
            g1, g2, g3 = ~r1[w - 1], ~r2[w - 1], ~r3[w - 1]
            new = Mux(g3, r3, Mux(g2, r2, Mux(g1, r1, fit(hi, w))))[:dw]
            digit = Cat(g1 & ~g2 | g3, g2)
        # the quotient so far, most significant digit first (qbits bits after the last step)
        q = Value.cast(digit) if q is None else Cat(digit, q)
        if self.done:
            return [q, sat]
        return [Cat(rem[:i], new), den, den3, q, sat]

    def quotient(self, vals) -> Value:
        q, sat = vals
        assert len(q) == self.q, (len(q), self.q)
        return q if sat is None else Mux(sat, (1 << self.q) - 1, q)


def radix4_divide(num: int, den: int, qbits: int) -> int:
    """The quotient of :class:`Divider`, in ints (a radix-2 first step if ``qbits`` is odd)."""
    if num >= den << qbits:
        return (1 << qbits) - 1
    positions = list(range(qbits - 2, -1, -2))
    if qbits % 2:
        positions = [qbits - 1] + list(range(qbits - 3, -1, -2))
    rem, q = num, 0
    for i in positions:
        if qbits % 2 and i == qbits - 1:
            d = 1 if rem >= den << i else 0
            q = (q << 1) | d
        else:
            d = 3 if rem >= (3 * den) << i else 2 if rem >= (2 * den) << i else \
                1 if rem >= den << i else 0
            q = (q << 2) | d
        rem -= (d * den) << i
    return q
