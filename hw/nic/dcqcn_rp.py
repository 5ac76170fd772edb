"""DCQCN reaction point: the per-flow rate state machine of the four reference behaviours.

See ``docs/dcqcn.md`` for the algorithm, the profiles and the figures, and
:mod:`sim.models.dcqcn` for the bit-exact golden model the RTL is verified against.

Two parts, as the project's conventions ask for per-flow engines:

- :class:`RpDatapath`: a purely combinational update ``(state, event) -> next state`` for one
  clock cycle, including the timers (per-flow down-counters), with the knobs as constants;
- :class:`DcqcnRp`: the storage (one flow held in registers) around it, with an event stream.

The update itself is :func:`build_rp_update`, written once for constant knobs (here) and
run-time registers (the multi-flow engine's :class:`hw.nic.dcqcn_engine.DcqcnDatapath`), with
the timers supplied by the caller (down-counters here, deadlines in the engine).
"""

from __future__ import annotations

from contextlib import nullcontext

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..layouts import RpEventKind, RpMode, rp_event_layout, rp_state_layout
from ..lib.arith import named_wire, umax, umin
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

__all__ = ["RpDatapath", "DcqcnRp", "build_rp_update"]


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


def build_rp_update(m: Module, *, s, n, r, rate_width: int, cnp, tx, tx_bytes, timers,
                    prefix: str = "", gated: bool = True, any_state: bool = False) -> None:
    """The reaction point's per-flow update (steps 2-6 of ``docs/dcqcn.md``; the model is
    :func:`sim.models.dcqcn.rp_update`) into ``m``: ``n``'s fields from ``s``'s and the event.

    ``s`` / ``n``: the flow's state and next state (views with the fields of
    :func:`rp_state_layout` other than the timers; ``n`` already defaults to ``s``).  ``r``: the
    knobs, the fields of :class:`DcqcnRpRegisters`, each a Python int or an Amaranth value (see
    above).  ``cnp``, ``tx``: the event; ``tx_bytes``: its bytes.  ``timers``: the three timers
    (alpha ``a``, rate increase ``t``, cut check / holdoff ``d``) in the caller's form, with
    ``due[k]`` (expires in this update), ``d_quiet`` (the cut-check timer stopped or expiring),
    ``defaults(m)`` (what a timer does when no rule acts), ``restart(m, k, period)`` (period
    ``"K"``, ``"T"``, ``"P"`` or ``"P1"``: P + 1, from now) and ``reload(m, k, value)``.
    ``prefix``: of the signal names.  ``gated``: intermediate values are driven only when used
    (0 otherwise).  ``any_state``: the state may hold any value (the engine's WRITE), not only
    those the update produces: alpha above 1.0 is saturated where it decays.
    """
    RW = rate_width
    a_due, t_due, d_due = timers.due["a"], timers.due["t"], timers.due["d"]

    def wire(name, expr, width=None, cond=None):
        return named_wire(m, prefix + name, expr, width, cond if gated else None)

    m.d.comb += n.active.eq(s.active | cnp)
    timers.defaults(m)

    # ---- 2. cut decision --------------------------------------------------------------
    first = cnp & ~s.active
    cut = _pick(r.cut_mode, [(CUT_EVERY, cnp), (CUT_HOLD, cnp & timers.d_quiet)],
                d_due & s.dec_flag)
    first_set = (first & (r.first_rate != 0)) if _maybe(r.first_rate) else Const(0)
    if not _fixed(r.first_rate):
        first_set = wire("first_set", first_set)
    action = wire("action", cut | first_set)

    # ---- 3. alpha -----------------------------------------------------------------------
    AW = ALPHA_FRAC + 1
    decayed = wire("decayed", s.alpha - ((s.alpha * r.g) >> G_FRAC), AW, a_due | cnp)
    plus_g = decayed + (r.g << (ALPHA_FRAC - G_FRAC))
    raised = wire("raised", umin(plus_g, ALPHA_ONE), AW, a_due | cnp)  # (1-g)a + g
    if any_state:
        decayed = umin(decayed, ALPHA_ONE)
    on_cnp = r.alpha_mode == ALPHA_ON_CNP
    per_cut = Mux(a_due, Mux(s.alpha_flag, raised, decayed), s.alpha)

    def on_cnp_rules():
        with m.If(cnp):
            m.d.comb += n.alpha.eq(raised)
            timers.restart(m, "a", "K")
        with m.Elif(a_due):
            m.d.comb += n.alpha.eq(decayed)
            timers.reload(m, "a", r.k_cycles)

    def periodic_rule(alpha_cut):
        m.d.comb += [n.alpha.eq(alpha_cut), n.alpha_flag.eq(0)]
        timers.reload(m, "a", r.k_cycles)

    if _fixed(on_cnp):
        if on_cnp:
            on_cnp_rules()
            alpha_cut = raised if r.alpha_before_cut else s.alpha
        else:
            alpha_cut = wire("alpha_cut", per_cut)
            with m.If(a_due):
                periodic_rule(alpha_cut)
    else:
        alpha_cut = wire("alpha_cut", Mux(on_cnp, Mux(r.alpha_before_cut, raised, s.alpha),
                                          per_cut))
        with m.If(on_cnp):
            on_cnp_rules()
        with m.Elif(a_due):
            periodic_rule(alpha_cut)

    # ---- 4. byte counter and rate increase ------------------------------------------------
    was_hai = s.mode == RpMode.HAI
    halve = _and(r.halve_in_hyper, was_hai)
    byte_on = r.byte_reset != 0
    if _maybe(byte_on):
        txa = tx & s.active
        if not _fixed(byte_on):
            txa = txa & byte_on
        b_fire = txa & (tx_bytes >= s.bc)
        with m.If(txa):
            m.d.comb += n.bc.eq(Mux(b_fire, _mux(halve, r.byte_half, r.byte_reset),
                                    s.bc - tx_bytes))
    t_ev = wire("t_ev", t_due & ~action)
    b_ev = wire("b_ev", b_fire & ~action) if _maybe(byte_on) else Const(0)

    inc_ev = t_ev | b_ev
    ts = wire("ts", Mux(t_ev & (s.t_stage != STAGE_MAX), s.t_stage + 1, s.t_stage), 8, inc_ev)
    bs = (wire("bs", Mux(b_ev & (s.b_stage != STAGE_MAX), s.b_stage + 1, s.b_stage), 8, inc_ev)
          if _maybe(byte_on) else s.b_stage)
    F = r.threshold
    if _fixed(byte_on):
        hi, lo = (umax(ts, bs), umin(ts, bs)) if byte_on else (ts, ts)
    else:
        hi = wire("hi", Mux(byte_on, umax(ts, bs), ts), STAGE_BITS)
        lo = wire("lo", Mux(byte_on, umin(ts, bs), ts), STAGE_BITS)

    def ns3_phase():
        this = Mux(t_ev, ts, bs)
        select = Mux((bs < F) | (ts < F), RpMode.AI, RpMode.HAI)
        return Mux(s.mode == RpMode.FR, Mux(this < F, RpMode.FR, select),
                   Mux(s.mode == RpMode.AI, Mux(t_ev, select, RpMode.AI), RpMode.HAI))

    def counted_phase(fe):
        return Mux(hi < fe, RpMode.FR, Mux(lo > fe, RpMode.HAI, RpMode.AI))

    rule = r.increase_rule
    if _fixed(rule):
        cls = ns3_phase() if rule == INC_NS3 else counted_phase(F + (1 if rule == INC_HPCC
                                                                      else 0))
    else:
        cls = Mux(rule == INC_NS3, ns3_phase(), counted_phase(F + (rule == INC_HPCC)))
    cls = wire("cls", cls)
    off = r.hai_step == HAI_LIN1
    off = int(off) if _fixed(off) else off
    mult = Mux(lo + off > F, lo + off - F, 0)
    # (lo + 1 - F reaches STAGE_MAX + 1 only with F = 0, which a run-time threshold allows)
    mult = mult[:8] if _fixed(F) and F >= 1 else umin(mult, STAGE_MAX)
    hai_inc = _mux(r.hai_step == HAI_CONST, _const(r.hai_rate), mult * r.hai_rate)
    inc = Mux(cls == RpMode.AI, r.ai_rate, Mux(cls == RpMode.HAI, hai_inc, 0))
    rt_sum = s.rt + inc
    rt_inc = umin(rt_sum, r.max_rate)
    if _maybe(r.rt_guard):
        guard = _and(r.rt_guard, ((ts == 1) | (bs == 1)) & (s.rt > s.rc * 10))
        rt_inc = Mux(guard, s.rt >> 3, rt_inc)
    rt_inc = wire("rt_inc", rt_inc, RW, inc_ev)
    rc_avg = wire("rc_avg", (rt_inc + s.rc) >> 1, RW, inc_ev)
    with m.If(inc_ev):
        m.d.comb += [
            n.rt.eq(rt_inc),
            n.rc.eq(umin(umax(rc_avg, r.min_rate), r.max_rate)),
            n.t_stage.eq(ts), n.b_stage.eq(bs), n.mode.eq(cls),
        ]
        with m.If(t_ev):
            timers.reload(m, "t", _mux(halve, r.t_half_cycles, r.t_cycles))

    # ---- 5. the cut -------------------------------------------------------------------------
    check = r.cut_mode == CUT_CHECK
    hold = r.cut_mode == CUT_HOLD
    if _maybe(check):
        with m.If(_and(check, d_due)):
            timers.reload(m, "d", r.p_cycles)
    clamp = _pick(r.clamp_rule, [(CLAMP_ALWAYS, Const(1)), (CLAMP_BYTE, s.b_stage != 0),
                                 (CLAMP_TIME, s.t_stage != 0)],
                  (s.b_stage != 0) | (s.t_stage != 0))
    if not _fixed(r.clamp_rule):
        clamp = wire("clamp", clamp)
    dec = wire("dec", (s.rc * alpha_cut) >> r.gd_shift)
    cut_rc = wire("cut_rc", Mux(dec < s.rc, s.rc - dec, 0), RW, action)
    new_rc = umax(cut_rc, r.min_rate)
    if _maybe(r.min_dec_fac):
        floor = wire("floor", (s.rc * r.min_dec_fac + ((1 << MDF_FRAC) - 1)) >> MDF_FRAC, RW,
                     action)
        new_rc = umax(umax(cut_rc, floor), r.min_rate)
    new_rc = wire("new_rc", new_rc)
    with m.If(action):
        m.d.comb += [n.rc.eq(new_rc), n.rt.eq(Mux(clamp, s.rc, s.rt))]
        if _maybe(r.first_rate):
            with m.If(first_set):
                m.d.comb += [n.rc.eq(r.first_rate), n.rt.eq(r.first_rate)]
        m.d.comb += [n.t_stage.eq(0), n.b_stage.eq(0), n.mode.eq(RpMode.FR)]
        timers.restart(m, "t", "T")
        reload_bc = _and(byte_on, _or(_not(r.bc_reload_on_clamp_only), clamp | first_set))
        if _maybe(reload_bc):
            with _when(m, reload_bc):
                m.d.comb += n.bc.eq(r.byte_reset)
        if _maybe(hold):
            with _when(m, hold):
                timers.restart(m, "d", "P")
        if _maybe(check):
            with _when(m, check):
                m.d.comb += n.dec_flag.eq(0)

    # ---- 6. the CNP's flags ---------------------------------------------------------------
    periodic = _not(on_cnp)
    if _maybe(periodic):
        with m.If(_and(cnp, periodic)):
            with m.If(first):
                timers.restart(m, "a", "K")
                m.d.comb += n.alpha_flag.eq(0)
            with m.Else():
                m.d.comb += n.alpha_flag.eq(1)
    if _maybe(check):
        with m.If(_and(cnp, check)):
            m.d.comb += n.dec_flag.eq(1)
            with m.If(first):
                timers.restart(m, "d", "P1")


class _CounterTimers:
    """The single flow's timers: down-counters in the state (``a_cnt``, ``t_cnt``, ``d_cnt``);
    a counter at 1 expires (-> 0), any other non-zero one counts down."""

    def __init__(self, s, n, r):
        self.s, self.n, self.r = s, n, r
        self.due = {k: s[k + "_cnt"] == 1 for k in "atd"}
        self.d_quiet = s.d_cnt <= 1

    def defaults(self, m):
        for k in "atd":
            src = self.s[k + "_cnt"]
            m.d.comb += self.n[k + "_cnt"].eq(Mux(src != 0, src - 1, 0))

    def restart(self, m, k, period):
        r = self.r
        value = {"K": r.k_cycles, "T": r.t_cycles, "P": r.p_cycles, "P1": r.p_cycles + 1}
        m.d.comb += self.n[k + "_cnt"].eq(value[period])

    def reload(self, m, k, value):
        m.d.comb += self.n[k + "_cnt"].eq(value)


class RpDatapath:
    """One cycle of one flow: ``next_state = f(state, event)`` (combinational; elaboratable on
    its own through :meth:`elaborate`, or added to the storage's module with :meth:`build`).

    Inputs: ``state`` (:func:`rp_state_layout`), ``ev_valid``, ``ev`` (:func:`rp_event_layout`);
    pass existing values to use the datapath inside another module (:meth:`build`), or leave
    them out to get fresh signals.  Output: ``next_state``.  The knobs are elaboration-time
    constants from the configuration; intermediate results are expressions, not named signals,
    so that the settings a profile does not use fold away cleanly.  The update is
    :func:`build_rp_update` (shared with the multi-flow engine's
    :class:`hw.nic.dcqcn_engine.DcqcnDatapath`) with the timers as down-counters.
    """

    def __init__(self, cfg: DcqcnRpConfig, state=None, ev_valid=None, ev=None):
        self.cfg = cfg
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
        cfg, r = self.cfg, self.cfg.registers()
        s, n = self.state, self.next_state
        cnp = named_wire(m, "cnp", self.ev_valid & (self.ev.kind == RpEventKind.CNP))
        tx = self.ev_valid & (self.ev.kind == RpEventKind.TX)
        # Default: every field keeps its value; the steps override in order.
        m.d.comb += n.eq(s)
        build_rp_update(m, s=s, n=n, r=r, rate_width=cfg.rate_width, cnp=cnp, tx=tx,
                        tx_bytes=self.ev.bytes, timers=_CounterTimers(s, n, r))


class DcqcnRp(wiring.Component):
    """DCQCN reaction point for one flow (state in registers, :class:`RpDatapath` update).

    Parameters
    ----------
    config : DcqcnRpConfig
        The ConnectX knobs and profile settings (elaboration-time constants).

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
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        # ---- state (storage: one flow in registers, the ``state`` port) -----------------------
        state = self.state
        # ---- handshake: always ready ---------------------------------------------------------
        m.d.comb += self.event.ready.eq(1)
        # ---- update: the datapath, then the state register --------------------------------------
        dp = RpDatapath(cfg, state=state, ev_valid=self.event.valid, ev=self.event.payload)
        dp.build(m)
        m.d.sync += state.eq(dp.next_state)
        m.d.comb += self.rate.eq(state.rc)
        return m
