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

from copy import copy
from dataclasses import dataclass
from dataclasses import fields as dc_fields
from types import SimpleNamespace

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import data

from ..lib.arith import delayed, named_wire, umax
from ..params import BlockConfig, ConfigError, check_bool, check_int
from .dcqcn_config import ALPHA_FRAC, STAGE_BITS, DcqcnRpConfig
from .dcqcn_rp import RP_CUTS, StagePipe, build_rp_update
from .flow_datapath import DatapathOut, DatapathTop, EventKind, FlowDatapath, time_le
from .flow_engine_config import FlowEngineConfig, check_engine_pair

__all__ = ["DcqcnDatapath", "DcqcnEngineConfig", "flow_state_layout", "register_widths",
           "dcqcn_engine", "state_bits", "timer_outputs", "late_terms", "DcqcnDatapathTop"]

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
    """Width of each run-time register (the fields of :class:`DcqcnRpRegisters`; declared in
    :meth:`DcqcnRpConfig.register_widths`, shared with the single flow)."""
    return cfg.register_widths()


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
    order (:func:`register_widths`); rate field ``rc``.  ``pre`` computes the four restart
    deadlines (``t`` + period) a stage early.
    pipelined : bool
        False (default): combinational, ``latency`` 1 (the products in multiplier blocks).
        True: the same function over ``latency`` = 12 clock cycles, a feed-forward pipeline
        (no loop, no enable): the 10 cuts of :data:`hw.nic.dcqcn_rp.RP_CUTS` in
        :func:`build_rp_update` (products as carry-save trees in logic, each stage at most one
        carry chain or about four LUT levels), then one register before the wake-up compares;
        ``late`` has its own short pipeline.  A value crosses a cut only if a later stage
        reads it (:meth:`hw.nic.dcqcn_rp.StagePipe.cut`: no dead flip-flops; the export is
        lint-clean, ``tests/test_engine_lint.py``).  Same outputs as the combinational form
        for every state, event, ``t`` and register value (``tests/test_dcqcn_pipe.py``).
    """

    name = "dcqcn"

    def __init__(self, config: DcqcnRpConfig, time_width: int = 26, *,
                 pipelined: bool = False):
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
        #: the pipeline registers of the update (:data:`hw.nic.dcqcn_rp.RP_CUTS`, then one
        #: before the wake-up compares; none: one combinational cycle)
        self.pipelined = pipelined
        self.cuts = RP_CUTS if pipelined else ()
        self.latency = 1 + len(self.cuts) + (1 if pipelined else 0)

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
        pipe = StagePipe(m, self.cuts + (("out",) if self.pipelined else ()), prefix="dcqcn_")

        def wire(name, expr):
            return named_wire(m, "dcqcn_" + name, expr)

        cnp = wire("cnp", kind == EventKind.CN)
        tx = wire("tx", kind == EventKind.TX)
        due = {k: wire(k + "_due", s[k + "_on"] & time_le(s[k + "_dl"], t, W)) for k in TIMERS}
        c = build_rp_update(m, s=s, n=n, r=regs, rate_width=self.config.rate_width, cnp=cnp,
                            tx=tx, tx_bytes=tx_bytes, timers=_DeadlineTimers(s, n, due, pre, W),
                            prefix="dcqcn_", gated=False, any_state=True, pipe=pipe)
        s_out, due_out = c.timers.s, c.timers.due
        if self.pipelined:
            # one more register: the next state, then the wake-up compares on it (not the
            # state: timer_outputs reads it only for ``late``, which has its own pipeline)
            c = pipe.cut("out", SimpleNamespace(n=n, due=due_out))
            n, due_out = c.n, c.due
        assert pipe.latency == self.latency
        late = None
        if self.latency > 1:
            # late = max(t - deadline over the due timers), in its own short pipeline
            lk = late_terms(due, t, s, W, TIMERS)
            late, depth = lk[0], 0
            for term in lk[1:]:
                late, term = delayed(m, late, 1, "dcqcn_late"), delayed(m, term, depth + 1,
                                                                         "dcqcn_late_t")
                late, depth = umax(late, term), depth + 1
            late = delayed(m, late, self.latency - 1 - depth, "dcqcn_late_out")
        out = timer_outputs(m, "dcqcn", n, s_out, due_out, t, W, TIMERS, late)
        pipe.finish()               # (after the last read of a cut's value)
        return out


class _DeadlineTimers:
    """The engine's timers for :func:`build_rp_update`: an armed bit and a deadline each.  A
    due timer that no rule reloads stops (the counter form's 1 -> 0); a restart arms it at
    ``t`` + period (``pre``), a reload moves its deadline on by the period (no drift: old
    deadline + period, added in :meth:`prepare`, a section before the update uses it)."""

    def __init__(self, s, n, due, pre, W):
        self.n, self.W = n, W
        # the values (``staged`` passes them through a pipeline cut)
        self.v = SimpleNamespace(s=s, due=due, pre=pre, d_quiet=~s.d_on | due["d"],
                                 reloaded={})

    s = property(lambda self: self.v.s)
    due = property(lambda self: self.v.due)
    pre = property(lambda self: self.v.pre)
    d_quiet = property(lambda self: self.v.d_quiet)
    reloaded = property(lambda self: self.v.reloaded)

    def staged(self, fn):
        new = copy(self)
        new.v = fn(self.v)
        return new

    def prepare(self, m, reloads):
        self.v.reloaded = {k: named_wire(m, f"dcqcn_{k}_reload",
                                         (self.s[k + "_dl"] + value)[:self.W])
                           for k, value in reloads.items()}

    def defaults(self, m):
        for k in TIMERS:
            m.d.comb += self.n[k + "_on"].eq(self.s[k + "_on"] & ~self.due[k])

    def restart(self, m, k, period):
        m.d.comb += [self.n[k + "_on"].eq(1), self.n[k + "_dl"].eq(self.pre["t_" + period])]

    def reload(self, m, k):
        m.d.comb += [self.n[k + "_on"].eq(1), self.n[k + "_dl"].eq(self.reloaded[k])]


def late_terms(due, t, s, W, timers):
    """``t - deadline`` of each due timer (0 for the others): :func:`timer_outputs`' ``late``
    is their maximum."""
    return [Mux(due[k], (t - s[k + "_dl"])[:W], 0) for k in timers]


def timer_outputs(m, prefix, n, s, due, t, W, timers, late=None) -> DatapathOut:
    """The protocol's outputs from the timers: ``wake`` = the earliest armed deadline of the
    next state (pairwise wrap-safe compares in order, the first wins a tie; the compares of
    every pair are made side by side and the order applied after them), ``expired`` = a timer
    was due, ``late`` = the largest ``t - deadline`` over the due timers (``late``: that value
    computed by the caller); ``wake_terms``: each timer's deadline with its one-hot select, so
    that the engine compares the deadlines side by side with the choice."""
    on = {k: n[k + "_on"] for k in timers}
    dl = {k: n[k + "_dl"] for k in timers}
    le = {(a, b): time_le(dl[a], dl[b], W) for i, a in enumerate(timers)
          for b in timers[i + 1:]}
    wake_valid, wake, src = on[timers[0]], dl[timers[0]], {timers[0]: Const(1)}
    for j, k in enumerate(timers[1:], 1):
        # time_le(wake, dl[k]) with wake the deadline of the timer chosen so far
        le_k = Const(0)
        for a in timers[:j]:
            le_k = le_k | (src[a] & le[a, k])
        take = on[k] & (~wake_valid | ~le_k)
        src = {a: src[a] & ~take for a in src} | {k: take}
        wake = Mux(take, dl[k], wake)
        wake_valid = wake_valid | on[k]
    if late is None:
        late = None
        for lk in late_terms(due, t, s, W, timers):
            late = lk if late is None else umax(late, lk)
    expired = 0
    for k in timers:
        expired = expired | due[k]
    return DatapathOut(next_state=n,
                       wake_valid=named_wire(m, prefix + "_wake_valid", wake_valid),
                       wake=named_wire(m, prefix + "_wake", wake, W),
                       expired=named_wire(m, prefix + "_expired", expired),
                       late=named_wire(m, prefix + "_late", late, W),
                       wake_terms=[(src[k], dl[k]) for k in timers])


@dataclass(frozen=True)
class DcqcnEngineConfig(BlockConfig):
    """A DCQCN engine top: the engine's sizing (:class:`FlowEngineConfig`: flows, W, wheel) and
    the algorithm's configuration (:class:`DcqcnRpConfig`: structural widths and the registers'
    reset values; any profile's knobs can be written at run time).  The two clocks must agree.
    """

    engine: FlowEngineConfig = FlowEngineConfig()
    rp: DcqcnRpConfig = DcqcnRpConfig(clk_hz=156_250_000)
    #: the datapath's form: pipelined over 12 modify cycles (112.5 MHz alone) or the one-cycle
    #: reference (back-to-back events of one flow, 19 MHz)
    pipelined: bool = True

    def __post_init__(self):
        check_engine_pair(self, "rp", DcqcnRpConfig)
        check_bool(self, "pipelined", self.pipelined)
        DcqcnDatapath(self.rp, self.engine.time_width)       # validates the widths

    def register_map(self, name: str = "dcqcn_engine"):
        """The engine's register map (:func:`hw.nic.engine_regs.engine_register_map`): the
        datapath's registers (reset: ``rp``'s values), the engine's counters, the header."""
        from .dcqcn_config import RP_REGISTER_DESC
        from .engine_regs import engine_register_map
        return engine_register_map(
            name, DcqcnDatapath(self.rp, self.engine.time_width, pipelined=self.pipelined),
            "DCQE", f"DCQCN reaction point engine, {self.engine.n_flows} flows",
            RP_REGISTER_DESC, flows=self.engine.n_flows, timer=self.engine.timer)

    @classmethod
    def for_flows(cls, n_flows: int, *, timer: str = "wheel", **rp) -> DcqcnEngineConfig:
        """``n_flows`` flows, the engine's defaults (``timer``: its timer service), the
        ConnectX profile at 156.25 MHz (with ``rp`` overrides) as the reset values."""
        engine = FlowEngineConfig(n_flows=n_flows, timer=timer)
        return cls(engine=engine, rp=DcqcnRpConfig.profile("connectx", clk_hz=engine.clk_hz,
                                                           **rp))


def dcqcn_engine(config: DcqcnEngineConfig | None = None):
    """The engine top: :class:`FlowEngine` around a :class:`DcqcnDatapath`, with the
    register map's identification header (:class:`hw.nic.engine_regs.EngineRegs`)."""
    from .engine_regs import EngineRegs
    from .flow_engine import FlowEngine
    cfg = DcqcnEngineConfig() if config is None else config
    return EngineRegs(FlowEngine(cfg.engine, DcqcnDatapath(cfg.rp, cfg.engine.time_width,
                                                           pipelined=cfg.pipelined)),
                      cfg.register_map())


def DcqcnDatapathTop(config: DcqcnRpConfig, time_width: int = 26, pipelined: bool = True):
    """:class:`DcqcnDatapath` alone between flip-flops (``dcqcn_datapath_pipe``):
    :class:`DatapathTop` around it."""
    return DatapathTop(DcqcnDatapath(config, time_width, pipelined=pipelined), time_width)

