"""QCN reaction point as a datapath of the multi-flow engine (:mod:`hw.nic.flow_engine`).

:class:`QcnDatapath` is the per-flow update of :class:`hw.nic.qcn_rp.QcnRp` in the engine's
form (``docs/qcn.md``, "Multi-flow engine"): the timer is a stored deadline (W-bit cycle stamp,
wrap-safe compare) with an armed bit; every knob is a run-time register (the (full, half) reload
pairs as two registers each); the jitter draws come from ONE engine-wide LFSR that advances once
per reload draw, in the order the engine applies events.  The bit-exact model is
:func:`sim.models.qcn.qcn_deadline_update` (the same per-flow update function,
:func:`sim.models.qcn.qcn_update`, as the single-flow model's).

:func:`qcn_engine` builds the engine top (:class:`hw.nic.flow_engine.FlowEngine` around it).
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import data

from ..lib.arith import named_wire, umax, umin
from ..params import BlockConfig, ConfigError, check_int
from .flow_datapath import DatapathOut, EventKind, FlowDatapath, time_le
from .flow_engine_config import FlowEngineConfig
from .qcn_rp_config import MDF_FRAC, STAGE_MAX, QcnRpConfig

__all__ = ["QcnDatapath", "QcnEngineConfig", "qcn_flow_state_layout", "qcn_register_list",
           "qcn_engine"]

STAGE_BITS = 8


def qcn_flow_state_layout(cfg: QcnRpConfig, time_width: int) -> data.StructLayout:
    """Per-flow state of the engine form: the single-flow state with the timer counter replaced
    by an armed bit and a W-bit deadline."""
    return data.StructLayout({
        "cr": cfg.rate_width,          # current rate, UQ.10 Mb/s (the rate streamed out)
        "tr": cfg.rate_width,          # target rate
        "bc": cfg.byte_width,          # bytes left before the next byte cycle
        "b_stage": STAGE_BITS,
        "t_stage": STAGE_BITS,
        "active": 1,                   # a CNM has been received
        "fresh": 1,                    # no increase since the last cut (TR guard)
        "t_on": 1, "t_dl": time_width,     # the timer
    })


def qcn_register_list(cfg: QcnRpConfig) -> list[tuple[str, int, int]]:
    """``(name, width, reset)`` of every run-time register (the order is the address map)."""
    RW, BW, TW = cfg.rate_width, cfg.byte_width, cfg.timer_width
    r = cfg.registers()
    regs = [("line_rate", RW, r.line_rate), ("min_rate", RW, r.min_rate),
            ("ai_rate", RW, r.ai_rate), ("hai_rate", RW, r.hai_rate),
            ("gd_shift", 4, r.gd_shift), ("min_dec_fac", MDF_FRAC + 1, r.min_dec_fac),
            ("threshold", STAGE_BITS, r.threshold)]
    for name, width in (("byte_lo", BW), ("byte_span", BW), ("time_lo", TW),
                        ("time_span", TW)):
        full, half = getattr(r, name)
        regs += [(name, width, full), (name + "_half", width, half)]
    regs.append(("tr_guard", 1, r.tr_guard))
    return regs


class QcnDatapath(FlowDatapath):
    """QCN reaction point, per-flow update of the multi-flow engine.

    Parameters
    ----------
    config : QcnRpConfig
        Structural widths (rates from ``line_rate_mbps``, ``byte_width``, the timer width of
        the configured period, ``draw_bits``, the LFSR) and the registers' reset values.
    time_width : int
        W, bits of the deadline (>= the timer width + 2).

    Interface (the :mod:`hw.nic.flow_datapath` protocol): state :func:`qcn_flow_state_layout`
    (117 bits at the defaults, W = 26); CN payload ``fb`` (6 bits); TX payload ``byte_width``
    bits; registers :func:`qcn_register_list`; rate field ``cr``.  One update per clock.  The
    LFSR register lives here: ``build(..., valid=...)`` advances it when the update is applied
    and draws (a CNM, a byte cycle or a timer cycle); the reload values depend only on the
    LFSR and the registers, so their multipliers are outside the per-flow state loop.
    """

    name = "qcn"

    def __init__(self, config: QcnRpConfig, time_width: int = 26):
        if not isinstance(config, QcnRpConfig):
            raise TypeError(f"QcnDatapath needs a QcnRpConfig, not {config!r}")
        check_int(self, "time_width", time_width, config.timer_width + 2, 40,
                  lo_name=f"the timer width + 2 ({config.timer_width} + 2)")
        self.config = config
        self.time_width = time_width
        self.state_layout = qcn_flow_state_layout(config, time_width)
        self.cn_layout = data.StructLayout({"fb": 6})
        self.tx_bytes_width = config.byte_width
        self.rate_field = "cr"
        self.regs = qcn_register_list(config)
        for name, width, reset in self.regs:
            if reset >= 1 << width:
                raise ConfigError(self, name, reset, f"a value below 2**{width}")

    def init_state(self, regs) -> dict:
        return {"cr": regs.line_rate, "tr": regs.line_rate}

    def pre(self, m, *, kind, tx_bytes, cn, t, regs) -> dict:
        return {"t_1": (t + 1)[:self.time_width]}

    def build(self, m: Module, *, state, kind, tx_bytes, cn, t, regs, pre,
              valid=None) -> DatapathOut:
        cfg, W, RW = self.config, self.time_width, self.config.rate_width
        D = cfg.draw_bits
        s, r = state, regs
        n = Signal(self.state_layout, name="qcn_next")
        m.d.comb += n.eq(s)

        def wire(name, expr, width=None):
            return named_wire(m, "qcn_" + name, expr, width)

        # ---- the engine-wide LFSR: the next draw, and the reloads it gives -----------------------
        lfsr = Signal(cfg.lfsr.width, init=cfg.lfsr.seed, name="qcn_lfsr")
        lfsr_next = cfg.lfsr.next_state(lfsr, D)
        rnd = lfsr_next[:D]

        def reload(lo, span, width):
            return wire(lo, r[lo] + ((r[span] * rnd) >> D), width)

        BW, TW = cfg.byte_width, len(r.time_lo)
        byte_full = reload("byte_lo", "byte_span", BW)
        byte_half = reload("byte_lo_half", "byte_span_half", BW)
        time_full = reload("time_lo", "time_span", TW)
        time_half = reload("time_lo_half", "time_span_half", TW)

        # ---- which update -----------------------------------------------------------------
        cnm = wire("cnm", kind == EventKind.CN)
        tx = wire("tx", (kind == EventKind.TX) & s.active)
        due = wire("due", s.t_on & time_le(s.t_dl, t, W))
        byte_cycle = wire("byte_cycle", tx & (tx_bytes >= s.bc))
        timer_cycle = wire("timer_cycle", due & ~cnm & ~byte_cycle)
        F = r.threshold
        b_stage = wire("b_stage", Mux(byte_cycle & (s.b_stage != STAGE_MAX), s.b_stage + 1,
                                      s.b_stage), STAGE_BITS)
        t_stage = wire("t_stage", Mux(timer_cycle & (s.t_stage != STAGE_MAX), s.t_stage + 1,
                                      s.t_stage), STAGE_BITS)

        # ---- increase ---------------------------------------------------------------------------
        guard = s.fresh & r.tr_guard & (s.tr > s.cr * 10)
        tr0 = Mux(guard, s.tr >> 3, s.tr)
        both_hi = (b_stage > F) & (t_stage > F)
        any_hi = (b_stage > F) | (t_stage > F)
        i = (umin(b_stage, t_stage) - F)[:STAGE_BITS]
        step = Mux(both_hi, i * r.hai_rate, Mux(any_hi, r.ai_rate, 0))
        tr_inc = wire("tr_inc", umin(tr0 + step, r.line_rate), RW)
        cr_inc = umin((s.cr + tr_inc) >> 1, r.line_rate)[:RW]

        # ---- cut --------------------------------------------------------------------------------
        cut = s.cr - ((s.cr * cn.fb) >> r.gd_shift)
        floor = umax((s.cr * r.min_dec_fac) >> MDF_FRAC, r.min_rate)
        cr_cut = wire("cr_cut", umax(cut, floor), RW)

        with m.If(cnm):
            m.d.comb += [
                n.tr.eq(s.cr), n.cr.eq(cr_cut), n.b_stage.eq(0), n.t_stage.eq(0),
                n.bc.eq(byte_full), n.active.eq(1), n.fresh.eq(1),
                n.t_on.eq(1), n.t_dl.eq((t + time_full)[:W]),
            ]
        with m.Elif(byte_cycle | timer_cycle):
            m.d.comb += [n.tr.eq(tr_inc), n.cr.eq(cr_inc), n.fresh.eq(0),
                         n.b_stage.eq(b_stage), n.t_stage.eq(t_stage)]
            with m.If(byte_cycle):
                m.d.comb += n.bc.eq(Mux(b_stage >= F, byte_half, byte_full))
                with m.If(due):                 # held: fires on the next cycle
                    m.d.comb += n.t_dl.eq(pre["t_1"])
            with m.Else():
                m.d.comb += n.t_dl.eq((s.t_dl + Mux(t_stage >= F, time_half, time_full))[:W])
                with m.If(tx):
                    m.d.comb += n.bc.eq(s.bc - tx_bytes)
        with m.Elif(tx):
            m.d.comb += n.bc.eq(s.bc - tx_bytes)

        # ---- the LFSR advances once per draw of an applied update ------------------------------
        draws = cnm | byte_cycle | timer_cycle
        with m.If((Const(0) if valid is None else valid) & draws):
            m.d.sync += lfsr.eq(lfsr_next)

        expired = wire("expired", due & ~byte_cycle)
        return DatapathOut(next_state=n, wake_valid=n.t_on, wake=n.t_dl, expired=expired,
                           late=wire("late", (t - s.t_dl)[:W]))


@dataclass(frozen=True)
class QcnEngineConfig(BlockConfig):
    """A QCN engine top: the engine's sizing (:class:`FlowEngineConfig`) and the algorithm's
    configuration (:class:`QcnRpConfig`: widths, LFSR, the registers' reset values)."""

    engine: FlowEngineConfig = FlowEngineConfig()
    rp: QcnRpConfig = QcnRpConfig(clk_hz=156_250_000)

    def __post_init__(self):
        if not isinstance(self.engine, FlowEngineConfig):
            raise ConfigError(self, "engine", self.engine, "a FlowEngineConfig")
        if not isinstance(self.rp, QcnRpConfig):
            raise ConfigError(self, "rp", self.rp, "a QcnRpConfig")
        if self.rp.clk_hz != self.engine.clk_hz:
            raise ConfigError(self, "rp.clk_hz", self.rp.clk_hz,
                              f"the engine's clk_hz ({self.engine.clk_hz})")
        QcnDatapath(self.rp, self.engine.time_width)          # validates the widths

    @classmethod
    def for_flows(cls, n_flows: int, **rp) -> QcnEngineConfig:
        """``n_flows`` flows, the engine's defaults, the IEEE 802.1Q MIB values at 156.25 MHz
        (with ``rp`` overrides) as the reset values."""
        engine = FlowEngineConfig(n_flows=n_flows)
        return cls(engine=engine, rp=QcnRpConfig(clk_hz=engine.clk_hz, **rp))


def qcn_engine(config: QcnEngineConfig | None = None):
    """The engine top: :class:`FlowEngine` around a :class:`QcnDatapath`."""
    from .flow_engine import FlowEngine
    cfg = QcnEngineConfig() if config is None else config
    return FlowEngine(cfg.engine, QcnDatapath(cfg.rp, cfg.engine.time_width))
