"""DCQCN reaction point: the per-flow rate state machine of the four reference behaviours.

See ``docs/dcqcn.md`` for the algorithm, the profiles and the figures, and
:mod:`sim.models.dcqcn` for the bit-exact golden model the RTL is verified against.

Two parts, as the project's conventions ask for per-flow engines:

- :class:`RpDatapath`: a purely combinational update ``(state, event) -> next state`` for one
  clock cycle, including the timers (per-flow down-counters), with the knobs as constants or
  as run-time values;
- :class:`DcqcnRp`: the storage (one flow held in registers) around it, with an event stream
  and the knobs as run-time registers (:meth:`DcqcnRpConfig.register_map`).

The update itself is :func:`build_rp_update`, written once for constant knobs (here) and
run-time registers (the multi-flow engine's :class:`hw.nic.dcqcn_engine.DcqcnDatapath`), with
the timers supplied by the caller (down-counters here, deadlines in the engine).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import nullcontext
from copy import copy
from enum import Enum
from types import SimpleNamespace

from amaranth.hdl import Const, Module, Mux, Signal, Value, ValueCastable
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..layouts import RpEventKind, RpMode, rp_event_layout, rp_state_layout
from ..lib.arith import at_most_one, named_wire, umax, umin
from ..lib.csa import compress, fit
from ..lib.csr import CsrBank
from ..lib.csr_port import csr_ports
from ..lib.pipeline import Cut
from .dcqcn_config import (
    ALPHA_FRAC,
    ALPHA_ONE,
    G_FRAC,
    MDF_FRAC,
    STAGE_BITS,
    STAGE_MAX,
    AlphaMode,
    ClampRule,
    CutMode,
    DcqcnRpConfig,
    HaiStep,
    IncreaseRule,
)

__all__ = ["RpDatapath", "DcqcnRp", "build_rp_update", "StagePipe", "RP_CUTS"]


# -- the per-flow update, shared by the single flow (RpDatapath) and the engine's datapath ------
# Knobs are either Python ints (elaboration-time constants: the settings not chosen are not
# built) or Amaranth values (run-time registers: every setting built, chosen by multiplexers).
# These helpers fold the constants, so that one description serves both.

#: hardware codes of the profile switches (the index in each setting's ``ALL``)
ALPHA_ON_CNP = AlphaMode.ALL.index(AlphaMode.ON_CNP)
CUT_EVERY, CUT_CHECK, CUT_HOLD = (CutMode.ALL.index(c) for c in (
    CutMode.EVERY_CNP, CutMode.PERIODIC_CHECK, CutMode.HOLDOFF))
INC_NS3, INC_HPCC = IncreaseRule.ALL.index(IncreaseRule.NS3), IncreaseRule.ALL.index(
    IncreaseRule.HPCC)
HAI_LIN1, HAI_CONST = HaiStep.ALL.index(HaiStep.LINEAR1), HaiStep.ALL.index(HaiStep.CONST)
CLAMP_ALWAYS, CLAMP_BYTE, CLAMP_TIME = (ClampRule.ALL.index(c) for c in (
    ClampRule.ALWAYS, ClampRule.BYTE_STAGE, ClampRule.TIME_STAGE))


def _fixed(x) -> bool:
    """An elaboration-time constant (a Python int or bool)."""
    return isinstance(x, int)


def _maybe(c) -> bool:
    """``c`` can hold: a value, or a true constant."""
    return not _fixed(c) or bool(c)


def _and(a, b):
    if _fixed(a):
        return b if a else False
    if _fixed(b):
        return a if b else False
    return a & b


def _or(a, b):
    if _fixed(a):
        return True if a else b
    if _fixed(b):
        return True if b else a
    return a | b


def _not(a):
    return (not a) if _fixed(a) else ~a


def _mux(c, a, b):
    if _fixed(c):
        return a if c else b
    return Mux(c, a, b)


def _const(x):
    return Const(x) if _fixed(x) else x


def _pick(knob, cases, default):
    """The expression of ``knob``'s code among ``cases`` (``(code, expr)``), else ``default``."""
    if _fixed(knob):
        return dict(cases).get(knob, default)
    for code, expr in reversed(cases):
        default = Mux(knob == code, expr, default)
    return default


def _when(m, c):
    """``m.If(c)``, or nothing for a true constant (callers test :func:`_maybe` first)."""
    if _fixed(c):
        assert c
        return nullcontext()
    return m.If(c)


def _sat_one(x):
    """``umin(x, ALPHA_ONE)`` for unsigned ``x`` (ALPHA_ONE is a power of two: an OR of the
    high bits instead of a compare)."""
    return Mux(Value.cast(x)[ALPHA_FRAC:].any(), ALPHA_ONE, x)


class _CutDict(Mapping):
    """A dict after a pipeline cut, made as it is read (as :class:`Cut`)."""

    def __init__(self, pending: dict):
        self._keys, self._pending, self._made = list(pending), pending, {}

    def __getitem__(self, key):
        if key not in self._made:
            if key not in self._pending:
                raise KeyError(key)
            self._made[key] = self._pending.pop(key)()
        return self._made[key]

    def __iter__(self):
        return iter(self._keys)

    def __len__(self):
        return len(self._keys)


class StagePipe:
    """The pipeline hooks of :func:`build_rp_update`.

    The update is written as a sequence of sections separated by named *cuts*; every value a
    later section uses is carried in a namespace through :meth:`cut`.  ``cuts``: the names of
    the cuts that are pipeline registers (each adds one clock cycle: :attr:`latency`); the
    others, and every cut of the combinational build (``cuts`` empty, the default), are the
    identity.  A registered cut registers only the values a later section reads (lazily, see
    :meth:`cut`); :meth:`finish` adds the registers once the update is built.

    Sums of products go through :meth:`msum` / :meth:`reduce` / :meth:`total`.  In the
    combinational build :meth:`msum` is the plain expression (Yosys maps the products to
    multiplier blocks) and :meth:`reduce` does nothing.  In a pipelined build (the ECP5's
    MULT18X18D has no packed pipeline registers and is too slow between flip-flops at
    156.25 MHz) it is a carry-save tree in logic: the shifted partial products (a negated one
    as its complement plus one), constants and values are the terms; each :meth:`reduce`
    level is one row of 3:2 compressors (one LUT level: sum = x ^ y ^ z, carry = majority),
    so the terms travel through the cuts as they are reduced; :meth:`total` adds the last
    two (one carry chain).  Everything is modulo ``2**width``: exact for a result that fits,
    and for a bit slice of a possibly negative one.
    """

    def __init__(self, m: Module | None = None, cuts=(), prefix: str = "",
                 domain: str = "sync"):
        self.m, self.cuts, self.prefix, self.domain = m, tuple(cuts), prefix, domain
        self.latency = 1
        self.used: list[str] = []
        self._stmts = []

    @property
    def pipelined(self) -> bool:
        return bool(self.cuts)

    def cut(self, name: str, carry):
        """``carry`` after the cut ``name``: registered if it is one of :attr:`cuts`.

        A registered cut is lazy (as :mod:`hw.nic.qcn_engine`'s): every Amaranth value in
        ``carry`` (recursively through namespaces, dicts, lists and tuples, and objects with a
        ``staged(fn)`` method) gets its register when a later section first reads it, so a
        value no later section reads is not registered; the registers of a namespace's or a
        dict's entries are made entry by entry, those of a list or tuple all together.  One
        value reached twice (the state in ``c.s`` and in the timers) gets one register per cut.
        Python constants and ``Const`` pass unchanged.  The registers' statements are added by
        :meth:`finish` (a register may be made inside an ``m.If`` of the section reading it).
        """
        self.used.append(name)
        if name not in self.cuts:
            return carry
        self.latency += 1
        return self._lazy(carry, f"{self.prefix}{name}", {})

    def _lazy(self, x, name, memo):
        if x is None or isinstance(x, (bool, int, str, Enum, Const)):
            return x
        if isinstance(x, SimpleNamespace):
            keys = x.names() if isinstance(x, Cut) else list(vars(x))
            return Cut({k: (lambda k=k: self._lazy(getattr(x, k), f"{name}_{k}", memo))
                         for k in keys})
        if isinstance(x, Mapping):
            return _CutDict({k: (lambda k=k: self._lazy(x[k], f"{name}_{k}", memo))
                             for k in x})
        if isinstance(x, (list, tuple)):
            return type(x)(self._lazy(v, f"{name}_{i}", memo) for i, v in enumerate(x))
        if hasattr(x, "staged"):
            return x.staged(lambda v: self._lazy(v, name, memo))
        if id(x) in memo:
            return memo[id(x)][1]
        shape = x.shape() if isinstance(x, ValueCastable) else Value.cast(x).shape()
        reg = Signal(shape, name=name)
        self._stmts.append(reg.eq(x))
        memo[id(x)] = (x, reg)          # (x kept alive: its id stays its own)
        return reg

    def finish(self):
        """Add the statements of the registers made so far (unconditional); call it once
        every value the update uses is read (again after later reads: it adds only the new
        ones)."""
        if self._stmts:
            self.m.d[self.domain] += self._stmts
        self._stmts = []

    def msum(self, width: int, *, values=(), products=(), neg_products=()):
        """``sum(values) + sum(a * b) - sum(a' * b')`` modulo ``2**width`` (``b``: the
        multiplier whose bits select the shifted copies of ``a``), as ``(width, terms)``."""
        if not self.pipelined:
            expr = 0
            for v in values:
                expr = expr + v
            for a, b in products:
                expr = expr + a * b
            for a, b in neg_products:
                expr = expr - a * b
            return width, [Value.cast(expr)[:width]]
        const = 0
        terms = []
        for v in values:
            if isinstance(v, int):
                const += v
            else:
                terms.append(fit(v, width))
        for sign, pairs in ((1, products), (-1, neg_products)):
            for a, b in pairs:
                a, b = Value.cast(a), Value.cast(b)
                for i in range(len(b)):
                    t = fit(Mux(b[i], a, 0) << i, width)
                    if sign < 0:
                        t, const = (~t)[:width], const + 1     # -t = ~t + 1
                    terms.append(t)
        if const % (1 << width):
            terms.append(Const(const % (1 << width), width))
        return width, terms

    def reduce(self, x, levels: int = 1):
        """``levels`` rows of 3:2 compressors (down to two terms)."""
        width, terms = x
        return width, compress(terms, width, levels)

    def total(self, x):
        """The sum (a carry chain: reduce to two terms first)."""
        width, terms = self.reduce(x, 64)
        return terms[0] if len(terms) == 1 else (terms[0] + terms[1])[:width]


#: the cuts of :func:`build_rp_update`, in order, and what the section after each computes
#: (section 1, before the first: the timers' due compares (the caller), alpha*g and Rc*mdf
#: partial products + 1 compressor row, the byte counter, stage + 1, 10 Rc, reload deadlines)
RP_CUTS = (
    "due",        # 2: cut decision, the stages; Rt > 10 Rc; alpha*g 4 rows, Rc*mdf 3
    "decide",     # 3: (1-g) alpha and (1-g) alpha + g summed; hi/lo of the stages, the
                  #    guard; Rc*mdf 2 rows
    "stages",     # 4: (1-g) alpha + g saturated, the alpha the cut uses; increase phase, HAI
                  #    factor; the floor summed
    "alpha",      # 5: Rc*alpha_cut and HAI partial products
    "alpha_cut",  # 6: Rc*alpha_cut 4 rows, HAI product 3 rows; Rc - floor
    "dec_a",      # 7: Rc*alpha_cut 3 rows; HAI product summed; (Rc - floor) << gd_shift
    "dec_b",      # 8: Rc*alpha_cut summed; the increment, Rt + inc
    "product",    # 9: >> gd_shift and the cut's compare; min(Rt + inc, max_rate), guard
    "shift",      # 10: Rc - dec; (Rt + Rc) / 2 and its compares
    "cut",        # 11: the clamps of (Rt + Rc) / 2; every next-state field
)


def build_rp_update(m: Module, *, s, n, r, rate_width: int, cnp, tx, tx_bytes, timers,
                    prefix: str = "", gated: bool = True, any_state: bool = False,
                    pipe: StagePipe | None = None) -> SimpleNamespace:
    """The reaction point's per-flow update (steps 2-6 of ``docs/dcqcn.md``; the model is
    :func:`sim.models.dcqcn.rp_update`) into ``m``: ``n``'s fields from ``s``'s and the event.

    ``s`` / ``n``: the flow's state and next state (views with the fields of
    :func:`rp_state_layout` other than the timers; this function drives every field of ``n``,
    by default ``s``'s value).  ``r``: the
    knobs, the fields of :class:`DcqcnRpRegisters`, each a Python int or an Amaranth value (see
    above).  ``cnp``, ``tx``: the event; ``tx_bytes``: its bytes.  ``timers``: the three timers
    (alpha ``a``, rate increase ``t``, cut check / holdoff ``d``) in the caller's form, with
    ``due[k]`` (expires in this update), ``d_quiet`` (the cut-check timer stopped or expiring),
    ``prepare(m, reloads)`` (the reload period of each timer, computed early),
    ``defaults(m)`` (what a timer does when no rule acts), ``restart(m, k, period)`` (period
    ``"K"``, ``"T"``, ``"P"`` or ``"P1"``: P + 1, from now), ``reload(m, k)`` and
    ``staged(fn)`` (a copy with its values, a namespace, passed through ``fn``: the timers'
    values cross the cuts as the update's own do, each registered only if a later section
    reads it).
    ``prefix``: of the signal names.  ``gated``: intermediate values are driven only when used
    (0 otherwise).  ``any_state``: the state may hold any value (the engine's WRITE), not only
    those the update produces: alpha above 1.0 is saturated where it decays.

    ``pipe``: the pipeline hooks (:class:`StagePipe`; default combinational).  The update is
    written once as sections between the cuts of :data:`RP_CUTS`; with a pipelined ``pipe``
    the registers are constant and the inputs (``s``, the event, the timers) are valid in the
    first cycle only, ``n`` is valid ``pipe.latency - 1`` cycles later.  Every value a section
    uses from an earlier one is carried through the cuts in ``c``; the knobs ``r`` are not
    (constant while an update is in flight).  Returns the last section's ``c`` (``c.s``,
    ``c.timers``: the inputs as of the cycle ``n`` is valid in); the caller that passed
    ``pipe`` calls its :meth:`StagePipe.finish` after its own last read of ``c``.
    """
    p = StagePipe(m) if pipe is None else pipe
    RW = rate_width

    def wire(name, expr, width=None, cond=None):
        return named_wire(m, prefix + name, expr, width, cond if gated else None)

    c = SimpleNamespace(s=s, cnp=cnp, timers=timers)
    AW = ALPHA_FRAC + 1
    g = at_most_one(r.g, G_FRAC)

    # ---- section 1: what depends on the state and the event only -------------------------------
    c.first = cnp & ~s.active
    # 3. alpha - (alpha * g >> 10) = (alpha * 2**10 + 2**10 - 1 - alpha * g) >> 10, exactly
    # (one compressor level here, the rest in section 2: in the engine this section starts
    # at the forwarding multiplexer, whose select fans out to the whole state word).  Section
    # 3 adds g * 2**24 to the same rows for (1-g) alpha + g: alpha (1024 - g) + 1023 + g 2**24
    # is below 2**35 too (at most alpha 1024 + 1023 for alpha >= 2**24, 2**34 + 1023 below),
    # so neither sum wraps at this width
    c.ag = p.reduce(p.msum(AW + G_FRAC, values=[s.alpha << G_FRAC, (1 << G_FRAC) - 1],
                           neg_products=[(s.alpha, g)]), 1)
    # 4. the byte counter
    was_hai = s.mode == RpMode.HAI
    halve = _and(r.halve_in_hyper, was_hai)
    byte_on = r.byte_reset != 0
    c.txa = c.b_fire = Const(0)
    if _maybe(byte_on):
        txa = tx & s.active
        if not _fixed(byte_on):
            txa = txa & byte_on
        c.txa, c.b_fire = txa, txa & (tx_bytes >= s.bc)
        # (the counter's width: the difference's sign bit is never stored)
        c.bc_next = Mux(c.b_fire, _mux(halve, r.byte_half, r.byte_reset),
                        s.bc - tx_bytes)[:len(s.bc)]
        c.bs_up = Mux(s.b_stage != STAGE_MAX, s.b_stage + 1, s.b_stage)
    c.ts_up = Mux(s.t_stage != STAGE_MAX, s.t_stage + 1, s.t_stage)
    if _maybe(r.rt_guard):
        c.rc10 = (s.rc << 3) + (s.rc << 1)          # Rc * 10 (no multiplier block)
    # (Rt' + Rc) >> 1 > min_rate <=> Rt' > 2 min_rate + 1 - Rc; ... < max_rate <=>
    # Rt' < 2 max_rate - Rc (signed bounds, so the compares run beside the add)
    c.avg_lo, c.avg_hi = ((r.min_rate << 1) | 1) - s.rc, (r.max_rate << 1) - s.rc
    # 5. the cut's clamp and floor (ceil(Rc * mdf / 2**16))
    clamp = _pick(r.clamp_rule, [(CLAMP_ALWAYS, Const(1)), (CLAMP_BYTE, s.b_stage != 0),
                                 (CLAMP_TIME, s.t_stage != 0)],
                  (s.b_stage != 0) | (s.t_stage != 0))
    if not _fixed(r.clamp_rule):
        clamp = wire("clamp", clamp)
    c.clamp = clamp
    if _maybe(r.min_dec_fac):
        # (a factor above 1.0 acts as 1.0: the floor never exceeds Rc, so it fits the rate)
        mdf = at_most_one(r.min_dec_fac, MDF_FRAC)
        c.mdf = p.reduce(p.msum(RW + MDF_FRAC + 2, values=[(1 << MDF_FRAC) - 1],
                                products=[(s.rc, mdf)]), 1)
    # the increase rule's thresholds (registers only: computed here, carried)
    rule = r.increase_rule
    F = r.threshold
    off = r.hai_step == HAI_LIN1
    off = int(off) if _fixed(off) else off
    c.fe = F + (1 if rule == INC_HPCC else 0) if _fixed(rule) else F + (rule == INC_HPCC)
    c.off_f = off - F                # the HAI factor is lo + off - F
    timers.prepare(m, {"a": r.k_cycles, "t": _mux(halve, r.t_half_cycles, r.t_cycles),
                       "d": r.p_cycles})

    c = p.cut("due", c)
    # ---- section 2: 2. the cut decision; the stages ---------------------------------------------
    s, timers = c.s, c.timers
    a_due, t_due, d_due = timers.due["a"], timers.due["t"], timers.due["d"]
    cut = _pick(r.cut_mode, [(CUT_EVERY, c.cnp), (CUT_HOLD, c.cnp & timers.d_quiet)],
                d_due & s.dec_flag)
    first_set = (c.first & (r.first_rate != 0)) if _maybe(r.first_rate) else Const(0)
    if not _fixed(r.first_rate):
        first_set = wire("first_set", first_set)
    c.first_set = first_set
    c.action = wire("action", cut | first_set)
    c.t_ev = wire("t_ev", t_due & ~c.action)
    c.b_ev = wire("b_ev", c.b_fire & ~c.action) if _maybe(byte_on) else Const(0)
    c.inc_ev = inc_ev = c.t_ev | c.b_ev
    c.ts = wire("ts", Mux(c.t_ev, c.ts_up, s.t_stage), 8, inc_ev)
    c.bs = (wire("bs", Mux(c.b_ev, c.bs_up, s.b_stage), 8, inc_ev) if _maybe(byte_on)
            else s.b_stage)
    if _maybe(r.rt_guard):
        c.rt_big = s.rt > c.rc10
    c.ag = p.reduce(c.ag, 4)
    if _maybe(r.min_dec_fac):
        c.mdf = p.reduce(c.mdf, 3)

    c = p.cut("decide", c)
    # ---- section 3: (1-g) alpha and (1-g) alpha + g; hi/lo of the stages --------------------
    s, a_due, cnp = c.s, c.timers.due["a"], c.cnp
    alpha_used = a_due | cnp | c.action
    c.decayed = wire("decayed", p.total(c.ag)[G_FRAC:], AW, alpha_used)
    # (1-g) alpha + g before its saturation: g * 2**24 as a third row beside the two (one
    # compressor level and a chain parallel to the one above), so that section 4 is the
    # saturation and the select only (it was an add behind a long route, the critical path)
    width, rows = c.ag
    c.raised_sum = wire("raised_sum", p.total((width, rows + [fit(g << ALPHA_FRAC, width)]))
                        [G_FRAC:], AW, alpha_used)
    c.this = Mux(c.t_ev, c.ts, c.bs)
    if _maybe(r.rt_guard):
        c.guard = _and(r.rt_guard, ((c.ts == 1) | (c.bs == 1)) & c.rt_big)
    if _fixed(byte_on):
        c.hi, c.lo = (umax(c.ts, c.bs), umin(c.ts, c.bs)) if byte_on else (c.ts, c.ts)
    else:
        c.hi = wire("hi", Mux(byte_on, umax(c.ts, c.bs), c.ts), STAGE_BITS)
        c.lo = wire("lo", Mux(byte_on, umin(c.ts, c.bs), c.ts), STAGE_BITS)
    if _maybe(r.min_dec_fac):
        c.mdf = p.reduce(c.mdf, 2)

    c = p.cut("stages", c)
    # ---- section 4: (1-g) alpha + g saturated, the alpha the cut uses; the phase; the floor -
    s, a_due, cnp = c.s, c.timers.due["a"], c.cnp
    # (this and ``decayed``: driven when a CNP or the alpha timer updates alpha, and for every
    # cut: with alpha updated on CNPs and the cut taking that alpha, a periodic-check cut
    # without a CNP uses them too; gated on the first two alone that cut read 0, cut nothing)
    c.raised = wire("raised", _sat_one(c.raised_sum), AW, a_due | cnp | c.action)  # (1-g)a + g
    if any_state:
        c.decayed = _sat_one(c.decayed)
    ts, bs, hi, lo, t_ev = c.ts, c.bs, c.hi, c.lo, c.t_ev

    def ns3_phase():
        this = c.this
        select = Mux((bs < F) | (ts < F), RpMode.AI, RpMode.HAI)
        return Mux(s.mode == RpMode.FR, Mux(this < F, RpMode.FR, select),
                   Mux(s.mode == RpMode.AI, Mux(t_ev, select, RpMode.AI), RpMode.HAI))

    def counted_phase(fe):
        return Mux(hi < fe, RpMode.FR, Mux(lo > fe, RpMode.HAI, RpMode.AI))

    if _fixed(rule):
        cls = ns3_phase() if rule == INC_NS3 else counted_phase(c.fe)
    else:
        cls = Mux(rule == INC_NS3, ns3_phase(), counted_phase(c.fe))
    c.cls = wire("cls", cls)
    c.excess = lo + c.off_f       # the HAI factor before its clamps (signed)
    if _maybe(r.min_dec_fac):
        c.floor = wire("floor", p.total(c.mdf)[MDF_FRAC:], RW, c.action)
    # the alpha the cut uses, selected here beside (1-g) alpha + g and registered: each of its
    # bits fans out to a whole row of Rc * alpha_cut, and the select in front of that fan-out
    # was the pipelined engine's critical path
    # (written as one late select of `raised` against a choice among registers, so the path
    # is the add and its saturation plus one LUT level)
    raised, decayed = c.raised, c.decayed
    on_cnp = r.alpha_mode == ALPHA_ON_CNP
    per_raised = a_due & s.alpha_flag
    per_other = Mux(a_due, decayed, s.alpha)
    if _fixed(on_cnp):
        alpha_cut = (raised if r.alpha_before_cut else s.alpha) if on_cnp else \
            wire("alpha_cut", Mux(per_raised, raised, per_other))
    else:
        take_raised = Mux(on_cnp, r.alpha_before_cut, per_raised)
        other = Mux(on_cnp, s.alpha, per_other)
        alpha_cut = wire("alpha_cut", Mux(take_raised, raised, other))
    c.alpha_cut = alpha_cut

    c = p.cut("alpha", c)
    # ---- section 5: Rc * alpha_cut starts; HAI product starts ------------------------------
    s = c.s
    c.dec = p.msum(RW + AW, products=[(s.rc, c.alpha_cut)])
    mult = Mux(c.excess > 0, c.excess, 0)
    # (lo + 1 - F reaches STAGE_MAX + 1 only with F = 0, which a run-time threshold allows)
    mult = mult[:8] if _fixed(F) and F >= 1 else umin(mult, STAGE_MAX)[:8]
    c.hai = p.msum(len(Value.cast(r.hai_rate)) + 8, products=[(r.hai_rate, mult)])
    # the cut's floors: max(floor, min_rate)
    c.floor = umax(c.floor, r.min_rate) if _maybe(r.min_dec_fac) else r.min_rate

    c = p.cut("alpha_cut", c)
    # ---- section 6: Rc * alpha_cut and the HAI product compressed; Rc - floor ---------------
    s = c.s
    c.dec = p.reduce(c.dec, 4)
    c.hai = p.reduce(c.hai, 3)
    # Rc - floor (signed): the cut's result is Rc - dec if dec < Rc - floor, else the floor
    c.rc_room = s.rc - c.floor

    c = p.cut("dec_a", c)
    # ---- section 7: Rc * alpha_cut compressed; the increment --------------------------------
    c.dec = p.reduce(c.dec, 3)
    c.hai = p.total(c.hai)
    # dec < Rc - floor <=> Rc * alpha_cut < (Rc - floor) << gd_shift: compared beside the shift
    c.room = c.rc_room << r.gd_shift

    c = p.cut("dec_b", c)
    # ---- section 8: Rc * alpha_cut summed; Rt + inc ----------------------------------------
    s = c.s
    c.dec = p.total(c.dec)
    hai_inc = _mux(r.hai_step == HAI_CONST, _const(r.hai_rate), c.hai)
    inc = Mux(c.cls == RpMode.AI, r.ai_rate, Mux(c.cls == RpMode.HAI, hai_inc, 0))
    c.rt_sum = s.rt + inc

    c = p.cut("product", c)
    # ---- section 9: dec = (Rc * alpha_cut) >> gd_shift; min(Rt + inc, max_rate), guard --------
    s = c.s
    c.keep = c.dec < c.room         # the cut leaves more than the floor
    c.dec = wire("dec", c.dec >> r.gd_shift)
    rt_inc = umin(c.rt_sum, r.max_rate)
    if _maybe(r.rt_guard):
        rt_inc = Mux(c.guard, s.rt >> 3, rt_inc)
    c.rt_inc = wire("rt_inc", rt_inc, RW, c.inc_ev)

    c = p.cut("shift", c)
    # ---- section 10: the cut's result; (Rt + Rc) / 2 -------------------------------------------
    s = c.s
    # max(Rc - dec if dec < Rc else 0, floor) (the floor >= 0)
    # (not a named wire: in the single flow's build it is the next rc itself, so the name
    # would be an unused alias in the Verilog)
    c.new_rc = Mux(c.keep, s.rc - c.dec, c.floor)[:RW]
    c.rc_avg = wire("rc_avg", (c.rt_inc + s.rc) >> 1, RW, c.inc_ev)
    c.avg_above_min, c.avg_below_max = c.rt_inc > c.avg_lo, c.rt_inc < c.avg_hi

    c = p.cut("cut", c)
    # ---- section 11: min(max((Rt + Rc) / 2, min_rate), max_rate) (compares side by side);
    # every next-state field ------------------------------------------------------------------
    s, cnp, timers, action = c.s, c.cnp, c.timers, c.action
    a_due, d_due = timers.due["a"], timers.due["d"]
    rc_inc = Mux(c.avg_above_min, Mux(c.avg_below_max, c.rc_avg, r.max_rate),
                 Mux(_const(r.min_rate) < r.max_rate, r.min_rate, r.max_rate))
    new_rc = c.new_rc

    m.d.comb += n.eq(s)
    m.d.comb += n.active.eq(s.active | cnp)
    timers.defaults(m)

    # 3. alpha
    def on_cnp_rules():
        with m.If(cnp):
            m.d.comb += n.alpha.eq(c.raised)
            timers.restart(m, "a", "K")
        with m.Elif(a_due):
            m.d.comb += n.alpha.eq(c.decayed)
            timers.reload(m, "a")

    def periodic_rule():
        m.d.comb += [n.alpha.eq(c.alpha_cut), n.alpha_flag.eq(0)]
        timers.reload(m, "a")

    if _fixed(on_cnp):
        if on_cnp:
            on_cnp_rules()
        else:
            with m.If(a_due):
                periodic_rule()
    else:
        with m.If(on_cnp):
            on_cnp_rules()
        with m.Elif(a_due):
            periodic_rule()

    # 4. byte counter and rate increase
    if _maybe(byte_on):
        with m.If(c.txa):
            m.d.comb += n.bc.eq(c.bc_next)
    with m.If(c.inc_ev):
        m.d.comb += [
            n.rt.eq(c.rt_inc),
            n.rc.eq(rc_inc),
            n.t_stage.eq(c.ts), n.b_stage.eq(c.bs), n.mode.eq(c.cls),
        ]
        with m.If(c.t_ev):
            timers.reload(m, "t")

    # 5. the cut
    check = r.cut_mode == CUT_CHECK
    hold = r.cut_mode == CUT_HOLD
    if _maybe(check):
        with m.If(_and(check, d_due)):
            timers.reload(m, "d")
    with m.If(action):
        m.d.comb += [n.rc.eq(new_rc), n.rt.eq(Mux(c.clamp, s.rc, s.rt))]
        if _maybe(r.first_rate):
            with m.If(c.first_set):
                m.d.comb += [n.rc.eq(r.first_rate), n.rt.eq(r.first_rate)]
        m.d.comb += [n.t_stage.eq(0), n.b_stage.eq(0), n.mode.eq(RpMode.FR)]
        timers.restart(m, "t", "T")
        reload_bc = _and(byte_on, _or(_not(r.bc_reload_on_clamp_only), c.clamp | c.first_set))
        if _maybe(reload_bc):
            with _when(m, reload_bc):
                m.d.comb += n.bc.eq(r.byte_reset)
        if _maybe(hold):
            with _when(m, hold):
                timers.restart(m, "d", "P")
        if _maybe(check):
            with _when(m, check):
                m.d.comb += n.dec_flag.eq(0)

    # 6. the CNP's flags
    periodic = _not(on_cnp)
    if _maybe(periodic):
        with m.If(_and(cnp, periodic)):
            with m.If(c.first):
                timers.restart(m, "a", "K")
                m.d.comb += n.alpha_flag.eq(0)
            with m.Else():
                m.d.comb += n.alpha_flag.eq(1)
    if _maybe(check):
        with m.If(_and(cnp, check)):
            m.d.comb += n.dec_flag.eq(1)
            with m.If(c.first):
                timers.restart(m, "d", "P1")
    p.finish()
    return c


class _CounterTimers:
    """The single flow's timers: down-counters in the state (``a_cnt``, ``t_cnt``, ``d_cnt``);
    a counter at 1 expires (-> 0), any other non-zero one counts down.  Its values are the
    namespace ``v`` (``staged`` passes it through a pipeline cut)."""

    def __init__(self, s, n, r):
        self.n, self.r = n, r
        self.v = SimpleNamespace(s=s, due={k: s[k + "_cnt"] == 1 for k in "atd"},
                                 d_quiet=s.d_cnt <= 1, reloads={})

    s = property(lambda self: self.v.s)
    due = property(lambda self: self.v.due)
    d_quiet = property(lambda self: self.v.d_quiet)
    reloads = property(lambda self: self.v.reloads)

    def staged(self, fn):
        new = copy(self)
        new.v = fn(self.v)
        return new

    def prepare(self, m, reloads):
        self.v.reloads = dict(reloads)

    def defaults(self, m):
        for k in "atd":
            src = self.s[k + "_cnt"]
            m.d.comb += self.n[k + "_cnt"].eq(Mux(src != 0, src - 1, 0))

    def restart(self, m, k, period):
        r = self.r
        value = {"K": r.k_cycles, "T": r.t_cycles, "P": r.p_cycles, "P1": r.p_cycles + 1}
        m.d.comb += self.n[k + "_cnt"].eq(value[period])

    def reload(self, m, k):
        m.d.comb += self.n[k + "_cnt"].eq(self.reloads[k])


class RpDatapath:
    """One cycle of one flow: ``next_state = f(state, event)`` (combinational; elaboratable on
    its own through :meth:`elaborate`, or added to the storage's module with :meth:`build`).

    Inputs: ``state`` (:func:`rp_state_layout`), ``ev_valid``, ``ev`` (:func:`rp_event_layout`);
    pass existing values to use the datapath inside another module (:meth:`build`), or leave
    them out to get fresh signals.  Output: ``next_state``.  ``regs``: the knobs, the fields of
    :class:`DcqcnRpRegisters` as Amaranth values (run-time registers, every setting built) or,
    by default, the configuration's elaboration-time constants; intermediate results are
    expressions, not named signals, so that the settings a profile does not use fold away
    cleanly with constants.  The update is
    :func:`build_rp_update` (shared with the multi-flow engine's
    :class:`hw.nic.dcqcn_engine.DcqcnDatapath`) with the timers as down-counters.
    """

    def __init__(self, cfg: DcqcnRpConfig, state=None, ev_valid=None, ev=None, regs=None):
        self.cfg = cfg
        self.regs = cfg.registers() if regs is None else regs
        self.state = Signal(rp_state_layout(cfg)) if state is None else state
        self.ev_valid = Signal() if ev_valid is None else ev_valid
        self.ev = Signal(rp_event_layout(cfg)) if ev is None else ev
        self.next_state = Signal(rp_state_layout(cfg))

    def elaborate(self, platform):
        m = Module()
        self.build(m)
        return m

    def build(self, m: Module) -> None:
        """Add the update logic to ``m`` (the storage's module: one flat Verilog module)."""
        cfg, r = self.cfg, self.regs
        s, n = self.state, self.next_state
        cnp = named_wire(m, "cnp", self.ev_valid & (self.ev.kind == RpEventKind.CNP))
        tx = self.ev_valid & (self.ev.kind == RpEventKind.TX)
        # (every field keeps its value unless a step overrides it)
        build_rp_update(m, s=s, n=n, r=r, rate_width=cfg.rate_width, cnp=cnp, tx=tx,
                        tx_bytes=self.ev.bytes, timers=_CounterTimers(s, n, r))


class DcqcnRp(wiring.Component):
    """DCQCN reaction point for one flow (state in registers, :class:`RpDatapath` update).

    Parameters
    ----------
    config : DcqcnRpConfig
        Widths and clock (elaboration-time); the ConnectX knobs and the profile settings are
        run-time registers reset to this configuration's values (one build runs any profile).

    Ports
    -----
    event : In(stream(rp_event_layout))
        ``CNP`` (a CNP arrived for the flow) or ``TX`` with the bytes the flow sent.  Always
        ready: one event per clock, sustained.
    state : Out(rp_state_layout)
        The flow's state: ``rc`` (the rate to pace at), ``rt``, ``alpha``, stages, phase,
        timers, byte counter and flags.
    rate : Out(rate_width)
        ``state.rc``, UQ.10 Mb/s (for the rate limiter).
    csr_w : In(stream(csr_write_layout)), csr_raddr : In(6), csr_rdata : Out(32)
        The register port (:meth:`DcqcnRpConfig.register_map`: the 25 fields of
        :class:`DcqcnRpRegisters`, the ID header).  Always ready; a write is applied at the
        edge that takes it and used from the next cycle (timers already running keep
        counting; the new periods apply from their next restart or reload).

    Latency and throughput
    ----------------------
    An event accepted at a clock edge is reflected in ``state`` right after that edge (latency 1
    cycle); time passes on every cycle (timers are exact to the cycle).  One event per clock.
    """

    LATENCY = 1

    def __init__(self, config: DcqcnRpConfig):
        if not isinstance(config, DcqcnRpConfig):
            raise TypeError(f"DcqcnRp needs a DcqcnRpConfig, not {config!r}")
        self.config = config
        r = config.registers()
        super().__init__({
            "event": In(stream.Signature(rp_event_layout(config))),
            # the state register itself (reset: Rc = Rt = max rate, alpha = initial alpha)
            "state": Out(rp_state_layout(config), init={
                "rc": r.max_rate, "rt": r.max_rate, "alpha": r.alpha_init, "bc": r.byte_reset}),
            "rate": Out(config.rate_width),
            **csr_ports(config.register_map()),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        # ---- run-time registers (declared once in DcqcnRpConfig.register_map) ---------------
        bank = CsrBank(cfg.register_map())
        regs = cfg.registers_from({r.name: bank[r.name] for r in bank.map.registers})
        # ---- state (storage: one flow in registers, the ``state`` port) -----------------------
        state = self.state
        # ---- handshake: always ready ---------------------------------------------------------
        m.d.comb += self.event.ready.eq(1)
        # ---- update: the datapath, then the state register --------------------------------------
        dp = RpDatapath(cfg, state=state, ev_valid=self.event.valid, ev=self.event.payload,
                        regs=regs)
        dp.build(m)
        m.d.sync += state.eq(dp.next_state)
        m.d.comb += self.rate.eq(state.rc)
        bank.build(m, self.csr_w, self.csr_raddr, self.csr_rdata)
        self.csr_bank = bank        # (the register storage, for formal harnesses)
        return m
