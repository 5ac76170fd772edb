"""DCQCN reaction point: the per-flow rate state machine of the four reference behaviours.

See ``docs/dcqcn.md`` for the algorithm, the profiles and the figures, and
:mod:`sim.models.dcqcn` for the bit-exact golden model the RTL is verified against.

Two parts, as the project's conventions ask for per-flow engines:

- :class:`RpDatapath`: a purely combinational update ``(state, event) -> next state`` for one
  clock cycle, including the timers (per-flow down-counters), with the knobs as constants;
- :class:`DcqcnRp`: the storage (one flow held in registers) around it, with an event stream.
"""

from __future__ import annotations

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
    STAGE_MAX,
    AlphaMode,
    ClampRule,
    CutMode,
    DcqcnRpConfig,
    HaiStep,
    IncreaseRule,
)

__all__ = ["RpDatapath", "DcqcnRp"]


class RpDatapath:
    """One cycle of one flow: ``next_state = f(state, event)`` (combinational; elaboratable on
    its own through :meth:`elaborate`, or added to the storage's module with :meth:`build`).

    Inputs: ``state`` (:func:`rp_state_layout`), ``ev_valid``, ``ev`` (:func:`rp_event_layout`);
    pass existing values to use the datapath inside another module (:meth:`build`), or leave
    them out to get fresh signals.  Output: ``next_state``.  The knobs are elaboration-time
    constants from the configuration; intermediate results are expressions, not named signals,
    so that the settings a profile does not use fold away cleanly.
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
        RW = cfg.rate_width
        on_cnp = r.alpha_mode == AlphaMode.ALL.index(AlphaMode.ON_CNP)
        cut_mode = CutMode.ALL[r.cut_mode]
        rule = IncreaseRule.ALL[r.increase_rule]
        hai_step = HaiStep.ALL[r.hai_step]
        clamp_rule = ClampRule.ALL[r.clamp_rule]
        byte_on = r.byte_reset != 0

        def wire(name, expr):
            return named_wire(m, name, expr)

        def cond_wire(name, cond, expr, width):
            # only meaningful (else 0) when ``cond``, truncated to ``width`` bits
            return named_wire(m, name, expr, width, cond)

        cnp = wire("cnp", self.ev_valid & (self.ev.kind == RpEventKind.CNP))
        tx = self.ev_valid & (self.ev.kind == RpEventKind.TX)

        # Default: every field keeps its value; the steps below override in order.
        m.d.comb += n.eq(s)
        m.d.comb += n.active.eq(s.active | cnp)

        # ---- 1. timers: a counter at 1 expires (-> 0), any other non-zero one counts down ----
        a_due, t_due, d_due = s.a_cnt == 1, s.t_cnt == 1, s.d_cnt == 1
        for dst, src in ((n.a_cnt, s.a_cnt), (n.t_cnt, s.t_cnt), (n.d_cnt, s.d_cnt)):
            m.d.comb += dst.eq(Mux(src != 0, src - 1, 0))

        # ---- 2. cut decision --------------------------------------------------------------
        first = cnp & ~s.active
        if cut_mode == CutMode.EVERY_CNP:
            cut = cnp
        elif cut_mode == CutMode.HOLDOFF:
            cut = cnp & (s.d_cnt <= 1)
        else:
            cut = d_due & s.dec_flag
        first_set = (first & (r.first_rate != 0)) if r.first_rate else Const(0)
        action = wire("action", cut | first_set)

        # ---- 3. alpha -----------------------------------------------------------------------
        AW = ALPHA_FRAC + 1
        decayed = cond_wire("decayed", a_due | cnp, s.alpha - ((s.alpha * r.g) >> G_FRAC), AW)
        plus_g = decayed + (r.g << (ALPHA_FRAC - G_FRAC))
        raised = cond_wire("raised", a_due | cnp, umin(plus_g, ALPHA_ONE), AW)  # (1-g)a + g
        if on_cnp:
            with m.If(cnp):
                m.d.comb += [n.alpha.eq(raised), n.a_cnt.eq(r.k_cycles)]
            with m.Elif(a_due):
                m.d.comb += [n.alpha.eq(decayed), n.a_cnt.eq(r.k_cycles)]
            alpha_cut = raised if r.alpha_before_cut else s.alpha
        else:
            alpha_cut = wire("alpha_cut", Mux(a_due, Mux(s.alpha_flag, raised, decayed), s.alpha))
            with m.If(a_due):
                m.d.comb += [n.alpha.eq(alpha_cut), n.alpha_flag.eq(0), n.a_cnt.eq(r.k_cycles)]

        # ---- 4. byte counter and rate increase ------------------------------------------------
        was_hai = s.mode == RpMode.HAI
        if byte_on:
            b_fire = tx & s.active & (self.ev.bytes >= s.bc)
            reload_b = (Mux(was_hai, r.byte_half, r.byte_reset) if r.halve_in_hyper
                        else r.byte_reset)
            with m.If(tx & s.active):
                m.d.comb += n.bc.eq(Mux(b_fire, reload_b, s.bc - self.ev.bytes))
        else:
            b_fire = Const(0)
        t_ev = wire("t_ev", t_due & ~action)
        b_ev = wire("b_ev", b_fire & ~action) if byte_on else Const(0)

        inc_ev = t_ev | b_ev
        ts = cond_wire("ts", inc_ev,
                       Mux(t_ev & (s.t_stage != STAGE_MAX), s.t_stage + 1, s.t_stage), 8)
        bs = (cond_wire("bs", inc_ev,
                        Mux(b_ev & (s.b_stage != STAGE_MAX), s.b_stage + 1, s.b_stage), 8)
              if byte_on else s.b_stage)
        F = r.threshold
        hi, lo = (umax(ts, bs), umin(ts, bs)) if byte_on else (ts, ts)
        if rule == IncreaseRule.NS3:
            this = Mux(t_ev, ts, bs)
            select = Mux((bs < F) | (ts < F), RpMode.AI, RpMode.HAI)
            cls = Mux(s.mode == RpMode.FR, Mux(this < F, RpMode.FR, select),
                      Mux(s.mode == RpMode.AI, Mux(t_ev, select, RpMode.AI), RpMode.HAI))
        else:
            fe = F + (1 if rule == IncreaseRule.HPCC else 0)
            cls = Mux(hi < fe, RpMode.FR, Mux(lo > fe, RpMode.HAI, RpMode.AI))
        cls = wire("cls", cls)
        if hai_step == HaiStep.CONST:
            hai_inc = Const(r.hai_rate)
        else:
            off = 1 if hai_step == HaiStep.LINEAR1 else 0
            mult = Mux(lo + off > F, lo + off - F, 0)[:8]
            hai_inc = mult * r.hai_rate
        inc = Mux(cls == RpMode.AI, r.ai_rate, Mux(cls == RpMode.HAI, hai_inc, 0))
        rt_sum = s.rt + inc
        rt_inc = umin(rt_sum, r.max_rate)
        if r.rt_guard:
            guard = ((ts == 1) | (bs == 1)) & (s.rt > s.rc * 10)
            rt_inc = Mux(guard, s.rt >> 3, rt_inc)
        rt_inc = cond_wire("rt_inc", inc_ev, rt_inc, RW)
        rc_avg = cond_wire("rc_avg", inc_ev, (rt_inc + s.rc) >> 1, RW)
        with m.If(inc_ev):
            m.d.comb += [
                n.rt.eq(rt_inc),
                n.rc.eq(umin(umax(rc_avg, r.min_rate), r.max_rate)),
                n.t_stage.eq(ts), n.b_stage.eq(bs), n.mode.eq(cls),
            ]
            with m.If(t_ev):
                if r.halve_in_hyper:
                    m.d.comb += n.t_cnt.eq(Mux(was_hai, r.t_half_cycles, r.t_cycles))
                else:
                    m.d.comb += n.t_cnt.eq(r.t_cycles)

        # ---- 5. the cut -------------------------------------------------------------------------
        if cut_mode == CutMode.PERIODIC_CHECK:
            with m.If(d_due):
                m.d.comb += n.d_cnt.eq(r.p_cycles)
        clamp = {
            ClampRule.ALWAYS: Const(1),
            ClampRule.BYTE_STAGE: s.b_stage != 0,
            ClampRule.TIME_STAGE: s.t_stage != 0,
            ClampRule.ANY_STAGE: (s.b_stage != 0) | (s.t_stage != 0),
        }[clamp_rule]
        dec = wire("dec", (s.rc * alpha_cut) >> r.gd_shift)
        cut_rc = cond_wire("cut_rc", action, Mux(dec < s.rc, s.rc - dec, 0), RW)
        new_rc = umax(cut_rc, r.min_rate)
        if r.min_dec_fac:
            floor = cond_wire("floor", action,
                              (s.rc * r.min_dec_fac + ((1 << MDF_FRAC) - 1)) >> MDF_FRAC, RW)
            new_rc = umax(umax(cut_rc, floor), r.min_rate)
        new_rc = wire("new_rc", new_rc)
        with m.If(action):
            m.d.comb += [n.rc.eq(new_rc), n.rt.eq(Mux(clamp, s.rc, s.rt))]
            if r.first_rate:
                with m.If(first_set):
                    m.d.comb += [n.rc.eq(r.first_rate), n.rt.eq(r.first_rate)]
            m.d.comb += [n.t_stage.eq(0), n.b_stage.eq(0), n.mode.eq(RpMode.FR),
                         n.t_cnt.eq(r.t_cycles)]
            if byte_on:
                if r.bc_reload_on_clamp_only:
                    with m.If(clamp | first_set):
                        m.d.comb += n.bc.eq(r.byte_reset)
                else:
                    m.d.comb += n.bc.eq(r.byte_reset)
            if cut_mode == CutMode.HOLDOFF:
                m.d.comb += n.d_cnt.eq(r.p_cycles)
            if cut_mode == CutMode.PERIODIC_CHECK:
                m.d.comb += n.dec_flag.eq(0)

        # ---- 6. the CNP's flags ---------------------------------------------------------------
        if not on_cnp:
            with m.If(cnp):
                with m.If(first):
                    m.d.comb += [n.a_cnt.eq(r.k_cycles), n.alpha_flag.eq(0)]
                with m.Else():
                    m.d.comb += n.alpha_flag.eq(1)
        if cut_mode == CutMode.PERIODIC_CHECK:
            with m.If(cnp):
                m.d.comb += n.dec_flag.eq(1)
                with m.If(first):
                    m.d.comb += n.d_cnt.eq(r.p_cycles + 1)


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
