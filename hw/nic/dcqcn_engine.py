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

The update logic is the single flow's, :func:`hw.nic.dcqcn_rp.build_rp_update`, given the
registers as run-time values (the single flow gives it constants) and the timers in deadline
form.  The bit-exact model is :func:`sim.models.dcqcn.dcqcn_deadline_update` (the same per-flow
update function, :func:`sim.models.dcqcn.rp_update`, as the single-flow model's).

:func:`dcqcn_engine` builds the engine top (:class:`hw.nic.flow_engine.FlowEngine` around the
datapath).
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import fields as dc_fields

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data

from ..lib.arith import named_wire, umax
from ..params import BlockConfig, ConfigError, check_int
from .dcqcn_config import ALPHA_FRAC, G_FRAC, MDF_FRAC, STAGE_BITS, DcqcnRpConfig
from .dcqcn_rp import build_rp_update
from .flow_datapath import DatapathOut, EventKind, FlowDatapath, time_le
from .flow_engine_config import FlowEngineConfig

__all__ = ["DcqcnDatapath", "DcqcnEngineConfig", "flow_state_layout", "register_widths",
           "dcqcn_engine", "state_bits", "timer_outputs"]

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
        # the single flow's update (hw.nic.dcqcn_rp.build_rp_update) on run-time registers,
        # with the timers as deadlines
        W = self.time_width
        s = state
        n = Signal(self.state_layout, name="dcqcn_next")
        m.d.comb += n.eq(s)

        def wire(name, expr):
            return named_wire(m, "dcqcn_" + name, expr)

        cnp = wire("cnp", kind == EventKind.CN)
        tx = wire("tx", kind == EventKind.TX)
        due = {k: wire(k + "_due", s[k + "_on"] & time_le(s[k + "_dl"], t, W)) for k in TIMERS}
        build_rp_update(m, s=s, n=n, r=regs, rate_width=self.config.rate_width, cnp=cnp, tx=tx,
                        tx_bytes=tx_bytes, timers=_DeadlineTimers(s, n, due, pre, W),
                        prefix="dcqcn_", gated=False, any_state=True)
        return timer_outputs(m, "dcqcn", n, s, due, t, W, TIMERS)


class _DeadlineTimers:
    """The engine's timers for :func:`build_rp_update`: an armed bit and a deadline each.  A
    due timer that no rule reloads stops (the counter form's 1 -> 0); a restart arms it at
    ``t`` + period (``pre``), a reload moves its deadline on by the period (no drift)."""

    def __init__(self, s, n, due, pre, W):
        self.s, self.n, self.due, self.pre, self.W = s, n, due, pre, W
        self.d_quiet = ~s.d_on | due["d"]

    def defaults(self, m):
        for k in TIMERS:
            m.d.comb += self.n[k + "_on"].eq(self.s[k + "_on"] & ~self.due[k])

    def restart(self, m, k, period):
        m.d.comb += [self.n[k + "_on"].eq(1), self.n[k + "_dl"].eq(self.pre["t_" + period])]

    def reload(self, m, k, value):
        m.d.comb += [self.n[k + "_on"].eq(1),
                     self.n[k + "_dl"].eq((self.s[k + "_dl"] + value)[:self.W])]


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
