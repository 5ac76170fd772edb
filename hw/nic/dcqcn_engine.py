"""DCQCN reaction point as a datapath of the multi-flow engine (:mod:`hw.nic.flow_engine`).

:class:`DcqcnDatapath` is the per-flow update of :class:`hw.nic.dcqcn_rp.RpDatapath` in the
engine's form (``docs/dcqcn.md``, "Multi-flow engine"):

- the three timers (alpha K, rate increase T, cut check / holdoff P) are stored deadlines (W-bit
  cycle stamps, wrap-safe compares) with an armed bit each, instead of down-counters: an update
  at time ``t`` applies every armed timer whose deadline is ``<= t``, together with the event,
  reloading it from its old deadline (no drift) - with the deadline equal to ``t`` this is
  exactly one cycle of the counter form;
- every knob and every profile switch (alpha mode, cut mode, increase rule, HAI step, clamp rule,
  the ns3-rdma flags) is a run-time register, so ONE build runs the four profiles (``paper``,
  ``ns3-rdma``, ``hpcc-mlx``, ``connectx``): set the registers of
  :meth:`DcqcnRpConfig.registers` of the profile.

The bit-exact model is :func:`sim.models.dcqcn.dcqcn_deadline_update` (the same per-flow update
function, :func:`sim.models.dcqcn.rp_update`, as the single-flow model's).

:func:`dcqcn_engine` builds the engine top (:class:`hw.nic.flow_engine.FlowEngine` around the
datapath).
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import fields as dc_fields

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data

from ..lib.arith import named_wire, umax, umin
from ..params import BlockConfig, ConfigError, check_int
from .dcqcn_config import (
    ALPHA_FRAC,
    ALPHA_ONE,
    G_FRAC,
    MDF_FRAC,
    STAGE_BITS,
    STAGE_MAX,
    DcqcnRpConfig,
)
from .flow_datapath import DatapathOut, EventKind, FlowDatapath, time_le
from .flow_engine_config import FlowEngineConfig

__all__ = ["DcqcnDatapath", "DcqcnEngineConfig", "flow_state_layout", "register_widths",
           "dcqcn_engine", "state_bits", "timer_outputs"]

# hardware codes of the profile switches (DcqcnRpRegisters; docs/dcqcn.md, "Profiles")
_FR, _AI, _HAI = 0, 1, 2
_CUT_EVERY, _CUT_CHECK, _CUT_HOLD = 0, 1, 2
_INC_NS3, _INC_HPCC = 1, 2
_HAI_LIN1, _HAI_CONST = 1, 2
_CLAMP_ALWAYS, _CLAMP_BYTE, _CLAMP_TIME = 0, 1, 2
TIMERS = ("a", "t", "d")


def flow_state_layout(cfg: DcqcnRpConfig, time_width: int) -> data.StructLayout:
    """Per-flow state of the engine form: the single-flow state without its counters, plus an
    armed bit and a W-bit deadline per timer."""
    return data.StructLayout({
        "rc": cfg.rate_width,          # current rate, UQ.10 Mb/s (the rate streamed out)
        "rt": cfg.rate_width,          # target rate
        "alpha": ALPHA_FRAC + 1,       # UQ1.24
        "t_stage": STAGE_BITS,
        "b_stage": STAGE_BITS,
        "mode": 2,                     # FR 0 / AI 1 / HAI 2
        "bc": cfg.byte_width,          # bytes left before the next byte event
        "active": 1,                   # a CNP has been received
        "alpha_flag": 1,               # periodic alpha: a CNP in this alpha period
        "dec_flag": 1,                 # periodic check: a CNP since the last check
        "a_on": 1, "a_dl": time_width,     # alpha timer (K)
        "t_on": 1, "t_dl": time_width,     # rate-increase timer (T, T/2)
        "d_on": 1, "d_dl": time_width,     # cut-check / holdoff timer (P, P + 1)
    })


def state_bits(cfg: DcqcnRpConfig, time_width: int) -> int:
    """Bits of the datapath's per-flow state (the engine adds its own fields)."""
    return flow_state_layout(cfg, time_width).size


def register_widths(cfg: DcqcnRpConfig) -> dict[str, int]:
    """Width of each run-time register (the fields of :class:`DcqcnRpRegisters`)."""
    RW, TW, BW = cfg.rate_width, cfg.timer_width, cfg.byte_width
    return {
        "t_cycles": TW, "t_half_cycles": TW, "k_cycles": TW, "p_cycles": TW,
        "byte_reset": BW, "byte_half": BW, "threshold": STAGE_BITS,
        "ai_rate": RW, "hai_rate": RW, "gd_shift": 5, "min_dec_fac": MDF_FRAC + 1,
        "min_rate": RW, "max_rate": RW, "first_rate": RW,
        "g": G_FRAC + 1, "alpha_init": ALPHA_FRAC + 1,
        "alpha_mode": 1, "cut_mode": 2, "increase_rule": 2, "hai_step": 2, "clamp_rule": 2,
        "alpha_before_cut": 1, "bc_reload_on_clamp_only": 1, "halve_in_hyper": 1, "rt_guard": 1,
    }


class DcqcnDatapath(FlowDatapath):
    """DCQCN reaction point, per-flow update of the multi-flow engine.

    Parameters
    ----------
    config : DcqcnRpConfig
        Structural widths (``line_rate_mbps`` sets the rate width, ``timer_width`` the period
        registers, ``byte_width`` the byte counter and TX lengths) and the registers' reset
        values (``config.registers()``: the profile the engine starts with).
    time_width : int
        W, bits of every deadline (>= timer_width + 2, so that every period stays below
        2**(W-2) as the wrap-safe compare needs).

    Interface (the :mod:`hw.nic.flow_datapath` protocol): state :func:`flow_state_layout`
    (:func:`state_bits` = 205 bits at the defaults, W = 26); CN payload one dummy bit (a CNP);
    TX payload ``byte_width`` bits; registers: the fields of :class:`DcqcnRpRegisters` in
    order (:func:`register_widths`); rate field ``rc``.  Combinational, one update per clock;
    ``pre`` computes the four restart deadlines (``t`` + period) a stage early.
    """

    name = "dcqcn"

    def __init__(self, config: DcqcnRpConfig, time_width: int = 26):
        if not isinstance(config, DcqcnRpConfig):
            raise TypeError(f"DcqcnDatapath needs a DcqcnRpConfig, not {config!r}")
        check_int(self, "time_width", time_width, config.timer_width + 2, 40,
                  lo_name=f"timer_width + 2 (timer_width {config.timer_width})")
        self.config = config
        self.time_width = time_width
        self.state_layout = flow_state_layout(config, time_width)
        self.cn_layout = data.StructLayout({"cnp": 1})
        self.tx_bytes_width = config.byte_width
        self.rate_field = "rc"
        r = config.registers()
        widths = register_widths(config)
        self.regs = [(f.name, widths[f.name], getattr(r, f.name)) for f in dc_fields(r)]
        for name, width, reset in self.regs:
            if reset >= 1 << width:
                raise ConfigError(self, name, reset, f"a value below 2**{width}")

    # -- protocol ----------------------------------------------------------------------------
    def init_state(self, regs) -> dict:
        return {"rc": regs.max_rate, "rt": regs.max_rate, "alpha": regs.alpha_init,
                "bc": regs.byte_reset}

    def pre(self, m, *, kind, tx_bytes, cn, t, regs) -> dict:
        # restart deadlines depend only on the event's stamp and the registers
        W = self.time_width
        return {"t_T": (t + regs.t_cycles)[:W], "t_K": (t + regs.k_cycles)[:W],
                "t_P": (t + regs.p_cycles)[:W], "t_P1": (t + regs.p_cycles + 1)[:W]}

    def build(self, m: Module, *, state, kind, tx_bytes, cn, t, regs, pre,
              valid=None) -> DatapathOut:
        W, RW = self.time_width, self.config.rate_width
        s, r = state, regs
        n = Signal(self.state_layout, name="dcqcn_next")
        m.d.comb += n.eq(s)

        def wire(name, expr, width=None, cond=None):
            return named_wire(m, "dcqcn_" + name, expr, width, cond)

        cnp = wire("cnp", kind == EventKind.CN)
        tx = wire("tx", kind == EventKind.TX)
        due = {k: wire(k + "_due", s[k + "_on"] & time_le(s[k + "_dl"], t, W)) for k in TIMERS}
        a_due, t_due, d_due = due["a"], due["t"], due["d"]
        # a due timer that no rule reloads stops (the counter form's 1 -> 0)
        for k in TIMERS:
            m.d.comb += n[k + "_on"].eq(s[k + "_on"] & ~due[k])

        def restart(k, dl):
            m.d.comb += [n[k + "_on"].eq(1), n[k + "_dl"].eq(dl)]

        def reload(k, period):
            m.d.comb += [n[k + "_on"].eq(1), n[k + "_dl"].eq((s[k + "_dl"] + period)[:W])]

        on_cnp = r.alpha_mode == 0
        cm_every, cm_check, cm_hold = (r.cut_mode == c for c in (_CUT_EVERY, _CUT_CHECK,
                                                                 _CUT_HOLD))
        m.d.comb += n.active.eq(s.active | cnp)

        # ---- 2. cut decision -------------------------------------------------------------
        first = wire("first", cnp & ~s.active)
        cut = Mux(cm_every, cnp, Mux(cm_hold, cnp & (~s.d_on | d_due), d_due & s.dec_flag))
        first_set = wire("first_set", first & (r.first_rate != 0))
        action = wire("action", cut | first_set)

        # ---- 3. alpha ----------------------------------------------------------------------
        AW = ALPHA_FRAC + 1
        decayed = wire("decayed", s.alpha - ((s.alpha * r.g) >> G_FRAC), AW)
        raised = wire("raised", umin(decayed + (r.g << (ALPHA_FRAC - G_FRAC)), ALPHA_ONE), AW)
        decayed1 = umin(decayed, ALPHA_ONE)
        alpha_per = Mux(s.alpha_flag, raised, decayed1)
        with m.If(on_cnp):
            with m.If(cnp):
                m.d.comb += n.alpha.eq(raised)
                restart("a", pre["t_K"])
            with m.Elif(a_due):
                m.d.comb += n.alpha.eq(decayed1)
                reload("a", r.k_cycles)
        with m.Elif(a_due):
            m.d.comb += [n.alpha.eq(alpha_per), n.alpha_flag.eq(0)]
            reload("a", r.k_cycles)
        alpha_cut = wire("alpha_cut", Mux(on_cnp, Mux(r.alpha_before_cut, raised, s.alpha),
                                          Mux(a_due, alpha_per, s.alpha)), AW)

        # ---- 4. byte counter and rate increase ------------------------------------------------
        byte_on = r.byte_reset != 0
        was_hai = s.mode == _HAI
        halve = r.halve_in_hyper & was_hai
        txa = tx & s.active & byte_on
        b_fire = wire("b_fire", txa & (tx_bytes >= s.bc))
        with m.If(txa):
            m.d.comb += n.bc.eq(Mux(b_fire, Mux(halve, r.byte_half, r.byte_reset),
                                    s.bc - tx_bytes))
        t_ev = wire("t_ev", t_due & ~action)
        b_ev = wire("b_ev", b_fire & ~action)
        inc_ev = t_ev | b_ev
        ts = wire("ts", Mux(t_ev & (s.t_stage != STAGE_MAX), s.t_stage + 1, s.t_stage),
                  STAGE_BITS)
        bs = wire("bs", Mux(b_ev & (s.b_stage != STAGE_MAX), s.b_stage + 1, s.b_stage),
                  STAGE_BITS)
        F = r.threshold
        hi = wire("hi", Mux(byte_on, umax(ts, bs), ts), STAGE_BITS)
        lo = wire("lo", Mux(byte_on, umin(ts, bs), ts), STAGE_BITS)
        this = Mux(t_ev, ts, bs)
        select = Mux((bs < F) | (ts < F), _AI, _HAI)
        cls_ns3 = Mux(s.mode == _FR, Mux(this < F, _FR, select),
                      Mux(s.mode == _AI, Mux(t_ev, select, _AI), _HAI))
        fe = F + (r.increase_rule == _INC_HPCC)
        cls_std = Mux(hi < fe, _FR, Mux(lo > fe, _HAI, _AI))
        cls = wire("cls", Mux(r.increase_rule == _INC_NS3, cls_ns3, cls_std), 2)
        lin = lo + (r.hai_step == _HAI_LIN1)
        mult = wire("mult", Mux(r.hai_step == _HAI_CONST, 1,
                                Mux(lin > F, umin(lin - F, STAGE_MAX), 0)), STAGE_BITS)
        inc = Mux(cls == _FR, 0, Mux(cls == _AI, r.ai_rate, r.hai_rate * mult))
        guard = r.rt_guard & ((ts == 1) | (bs == 1)) & (s.rt > s.rc * 10)
        rt_inc = wire("rt_inc", Mux(guard, s.rt >> 3, umin(s.rt + inc, r.max_rate)), RW)
        rc_avg = (rt_inc + s.rc) >> 1
        with m.If(inc_ev):
            m.d.comb += [
                n.rt.eq(rt_inc),
                n.rc.eq(umin(umax(rc_avg, r.min_rate), r.max_rate)),
                n.t_stage.eq(ts), n.b_stage.eq(bs), n.mode.eq(cls),
            ]
            with m.If(t_ev):
                reload("t", Mux(halve, r.t_half_cycles, r.t_cycles))

        # ---- 5. the cut -------------------------------------------------------------------------
        with m.If(cm_check & d_due):
            reload("d", r.p_cycles)
        clamp = Mux(r.clamp_rule == _CLAMP_ALWAYS, 1,
                    Mux(r.clamp_rule == _CLAMP_BYTE, s.b_stage != 0,
                        Mux(r.clamp_rule == _CLAMP_TIME, s.t_stage != 0,
                            (s.b_stage != 0) | (s.t_stage != 0))))
        clamp = wire("clamp", clamp)
        dec = wire("dec", (s.rc * alpha_cut) >> r.gd_shift)
        cut_rc = Mux(dec < s.rc, s.rc - dec, 0)[:RW]
        floor = ((s.rc * r.min_dec_fac + ((1 << MDF_FRAC) - 1)) >> MDF_FRAC)[:RW]
        new_rc = wire("new_rc", umax(umax(cut_rc, floor), r.min_rate), RW)
        with m.If(action):
            with m.If(first_set):
                m.d.comb += [n.rc.eq(r.first_rate), n.rt.eq(r.first_rate)]
            with m.Else():
                m.d.comb += [n.rc.eq(new_rc), n.rt.eq(Mux(clamp, s.rc, s.rt))]
            m.d.comb += [n.t_stage.eq(0), n.b_stage.eq(0), n.mode.eq(_FR)]
            restart("t", pre["t_T"])
            with m.If(byte_on & (clamp | first_set | ~r.bc_reload_on_clamp_only)):
                m.d.comb += n.bc.eq(r.byte_reset)
            with m.If(cm_hold):
                restart("d", pre["t_P"])
            with m.If(cm_check):
                m.d.comb += n.dec_flag.eq(0)

        # ---- 6. the CNP's flags ---------------------------------------------------------------
        with m.If(cnp & ~on_cnp):
            with m.If(first):
                m.d.comb += n.alpha_flag.eq(0)
                restart("a", pre["t_K"])
            with m.Else():
                m.d.comb += n.alpha_flag.eq(1)
        with m.If(cnp & cm_check):
            m.d.comb += n.dec_flag.eq(1)
            with m.If(first):
                restart("d", pre["t_P1"])

        return timer_outputs(m, "dcqcn", n, s, due, t, W, TIMERS)


def timer_outputs(m, prefix, n, s, due, t, W, timers) -> DatapathOut:
    """The protocol's outputs from the timers: ``wake`` = the earliest armed deadline of the
    next state (pairwise wrap-safe compares, the first wins a tie), ``expired`` = a timer was
    due, ``late`` = the largest ``t - deadline`` over the due timers."""
    wake_valid, wake = n[timers[0] + "_on"], n[timers[0] + "_dl"]
    for k in timers[1:]:
        take = n[k + "_on"] & (~wake_valid | ~time_le(wake, n[k + "_dl"], W))
        wake = Mux(take, n[k + "_dl"], wake)
        wake_valid = wake_valid | n[k + "_on"]
    late = None
    for k in timers:
        lk = Mux(due[k], (t - s[k + "_dl"])[:W], 0)
        late = lk if late is None else umax(late, lk)
    expired = 0
    for k in timers:
        expired = expired | due[k]
    return DatapathOut(next_state=n,
                       wake_valid=named_wire(m, prefix + "_wake_valid", wake_valid),
                       wake=named_wire(m, prefix + "_wake", wake, W),
                       expired=named_wire(m, prefix + "_expired", expired),
                       late=named_wire(m, prefix + "_late", late, W))


@dataclass(frozen=True)
class DcqcnEngineConfig(BlockConfig):
    """A DCQCN engine top: the engine's sizing (:class:`FlowEngineConfig`: flows, W, wheel) and
    the algorithm's configuration (:class:`DcqcnRpConfig`: structural widths and the registers'
    reset values; any profile's knobs can be written at run time).  The two clocks must agree.
    """

    engine: FlowEngineConfig = FlowEngineConfig()
    rp: DcqcnRpConfig = DcqcnRpConfig(clk_hz=156_250_000)

    def __post_init__(self):
        if not isinstance(self.engine, FlowEngineConfig):
            raise ConfigError(self, "engine", self.engine, "a FlowEngineConfig")
        if not isinstance(self.rp, DcqcnRpConfig):
            raise ConfigError(self, "rp", self.rp, "a DcqcnRpConfig")
        if self.rp.clk_hz != self.engine.clk_hz:
            raise ConfigError(self, "rp.clk_hz", self.rp.clk_hz,
                              f"the engine's clk_hz ({self.engine.clk_hz})")
        DcqcnDatapath(self.rp, self.engine.time_width)       # validates the widths

    @classmethod
    def for_flows(cls, n_flows: int, **rp) -> DcqcnEngineConfig:
        """``n_flows`` flows, the engine's defaults, the ConnectX profile at 156.25 MHz (with
        ``rp`` overrides) as the reset values."""
        engine = FlowEngineConfig(n_flows=n_flows)
        return cls(engine=engine, rp=DcqcnRpConfig.profile("connectx", clk_hz=engine.clk_hz,
                                                           **rp))


def dcqcn_engine(config: DcqcnEngineConfig | None = None):
    """The engine top: :class:`FlowEngine` around a :class:`DcqcnDatapath`."""
    from .flow_engine import FlowEngine
    cfg = DcqcnEngineConfig() if config is None else config
    return FlowEngine(cfg.engine, DcqcnDatapath(cfg.rp, cfg.engine.time_width))
