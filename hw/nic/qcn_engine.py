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

import operator
from dataclasses import dataclass
from functools import reduce
from types import SimpleNamespace

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import data

from ..lib.arith import at_most_one, named_wire, umin
from ..lib.csa import compress, fit
from ..lib.pipeline import Stages
from ..params import BlockConfig, ConfigError, check_int
from .flow_datapath import DatapathOut, DatapathTop, EventKind, FlowDatapath, time_le
from .flow_engine_config import FlowEngineConfig, check_engine_pair
from .qcn_rp_config import MDF_FRAC, STAGE_MAX, QcnRpConfig

__all__ = ["QcnDatapath", "QcnEngineConfig", "qcn_flow_state_layout", "qcn_register_list",
           "qcn_engine", "QcnDatapathTop", "QCN_PIPE_LATENCY"]

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
    latency : int
        1 (default): the update is combinational.  2 ... 7: the same function (every
        :class:`DatapathOut` field, every state, event and register value) in that many
        clock cycles, a feed-forward pipeline (the engine's ``latency > 1`` contract, see
        :mod:`hw.nic.flow_datapath`); :data:`QCN_PIPE_LATENCY` (6) is the build for
        156.25 MHz on ECP5 speed 6 (stages S1 | S2 | S3 | S4 | S5 | S6 + S7, see
        :meth:`_update`).

    Interface (the :mod:`hw.nic.flow_datapath` protocol): state :func:`qcn_flow_state_layout`
    (117 bits at the defaults, W = 26); CN payload ``fb`` (6 bits); TX payload ``byte_width``
    bits; registers :func:`qcn_register_list`; rate field ``cr``.  One update per clock.  The
    LFSR register lives here: ``build(..., valid=...)`` advances it when the update is applied
    and draws (a CNM, a byte cycle or a timer cycle): its own one-cycle loop, in the modify
    cycle of S2 (the second when S1 is registered, ``lfsr_lag``), which the updates pass one
    per cycle in the order the engine applies them, so the draws are in the same order at
    every latency; the draw is carried to the reloads.
    """

    name = "qcn"

    def __init__(self, config: QcnRpConfig, time_width: int = 26, *, latency: int = 1):
        if not isinstance(config, QcnRpConfig):
            raise TypeError(f"QcnDatapath needs a QcnRpConfig, not {config!r}")
        if latency not in _CUTS:
            raise ConfigError(self, "latency", latency, f"one of {sorted(_CUTS)}")
        self.latency = latency
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
        stage = Stages(m, prefix="qcn_", cuts=_CUTS[self.latency])
        out = self._update(m, stage, state=state, kind=kind, tx_bytes=tx_bytes, cn=cn, t=t,
                           regs=regs, pre=pre, valid=Const(0) if valid is None else valid)
        stage.finish()
        return out

    def _update(self, m: Module, stage, *, state, kind, tx_bytes, cn, t, regs, pre,
                valid) -> DatapathOut:
        """The update, written once.  ``v = stage(v)`` at each cut point registers every live
        value (the namespace ``v``) in a pipelined build and is the identity in the
        combinational one.  A product is a list of rows (:func:`_product`: one ``a * b`` when
        combinational, else the shifted copies of ``a`` its bits select), reduced to two rows
        by carry-save adders (:func:`_csa`, nothing when combinational) and added up
        (:func:`_sum`) at a later stage.  The run-time registers are read in any stage
        (constant while updates are in flight).  Each cycle of the 6-cycle build is at most
        a carry chain and two LUT levels, or about four LUT levels (3:2 compressors); a
        compare is the sign of a difference (:func:`_gt`)."""
        cfg, W, RW, D = self.config, self.time_width, self.config.rate_width, self.config.draw_bits
        BW, TW = cfg.byte_width, len(regs.time_lo)
        s, r, F = state, regs, regs.threshold
        split = stage.pipelined
        WA = RW + STAGE_BITS + 3        # TR0 + AI + i HAI (+ CR, - 2 line_rate), signed

        def wire(name, expr, width=None):
            return named_wire(m, "qcn_" + name, expr, width)

        def csa(rows, width, levels=None):
            return compress(rows, width, levels) if split else rows

        # ---- S1: the event's and the state's compares; the products' first rows ------------
        v = SimpleNamespace(s=s, t=t, t_1=pre["t_1"], valid=valid)
        v.cnm = wire("cnm", kind == EventKind.CN)
        v.tx = wire("tx", (kind == EventKind.TX) & s.active)
        v.due = wire("due", s.t_on & time_le(s.t_dl, t, W))
        v.byte_cycle = wire("byte_cycle", v.tx & ~_gt(s.bc, tx_bytes))    # bytes >= BC
        v.bc_left = (s.bc - tx_bytes)[:len(s.bc)]      # the next BC (used when bytes < BC)
        v.t_base = Mux(v.cnm, t, s.t_dl)              # the timer restarts from t or reloads

        # the stages against F before and after a step (a stage at 255 holds: no wrap)
        sb, st = s.b_stage, s.t_stage
        v.b_open, v.t_open = sb != STAGE_MAX, st != STAGE_MAX
        v.b_next, v.t_next = (sb + 1)[:STAGE_BITS], (st + 1)[:STAGE_BITS]
        v.b_ge, v.b_gt, v.b_ge1 = sb >= F, sb > F, sb + 1 >= F
        v.t_ge, v.t_gt, v.t_ge1 = st >= F, st > F, st + 1 >= F
        # i = min(stages after the step) - F, used when both are above F, is i0 + 0 or 1
        v.b_lt, v.t_lt = sb < st, st < sb
        v.b_f, v.t_f = (sb - F)[:STAGE_BITS], (st - F)[:STAGE_BITS]
        v.cr10 = (s.cr << 3) + (s.cr << 1)
        v.fg = s.fresh & r.tr_guard
        v.cr_line2 = (s.cr + r.line_rate) >> 1
        v.cr_min = s.cr - r.min_rate
        v.neg_line = fit(-r.line_rate, WA)
        v.cr_neg_line2 = fit(s.cr - (r.line_rate << 1), WA)
        v.cut_p = csa(_product(s.cr, cn.fb, split), RW + 6, 2)
        # (a factor above 1.0 reads as 1.0: the floor never exceeds Cr)
        v.floor_p = csa(_product(s.cr, at_most_one(r.min_dec_fac, MDF_FRAC), split),
                        RW + MDF_FRAC + 1, 2)
        v = stage(v)

        # ---- S2: which update; the jitter draw; the stages after it; i0 HAI; the guard ----
        s = v.s
        # the engine-wide LFSR draws here, one update per cycle in the order the engine applies
        # them (a draw: a CNM, a byte cycle or a timer cycle); its loop is this one cycle
        lfsr = Signal(cfg.lfsr.width, init=cfg.lfsr.seed, name="qcn_lfsr")
        self.lfsr = lfsr                              # (the last build's, for the tests)
        self.lfsr_lag = stage.k                       # cycles after the first modify cycle
        lfsr_next = cfg.lfsr.next_state(lfsr, D)
        v.rnd = lfsr_next[:D]
        with m.If(v.valid & (v.cnm | v.byte_cycle | v.due)):
            m.d.sync += lfsr.eq(lfsr_next)
        v.late = wire("late", (v.t - s.t_dl)[:W])
        v.timer_cycle = wire("timer_cycle", v.due & ~v.cnm & ~v.byte_cycle)
        v.expired = wire("expired", v.due & ~v.byte_cycle)
        db, dt = v.byte_cycle & v.b_open, v.timer_cycle & v.t_open
        v.b_stage = wire("b_stage", Mux(db, v.b_next, s.b_stage))
        v.t_stage = wire("t_stage", Mux(dt, v.t_next, s.t_stage))
        v.b_hi, v.t_hi = Mux(db, v.b_ge, v.b_gt), Mux(dt, v.t_ge, v.t_gt)
        # which reload a draw gives: a CNM the full ones, a byte / timer cycle the half one
        # once its stage is at F or above (a stage at 255 is at F or above either way)
        v.half_b = ~v.cnm & Mux(v.byte_cycle, v.b_ge1, v.b_ge)
        v.half_t = ~v.cnm & Mux(v.timer_cycle, v.t_ge1, v.t_ge)
        v.inc_i = (db & v.b_lt) | (dt & v.t_lt)
        v.step_p = csa(_product(r.hai_rate, Mux(v.b_lt, v.b_f, v.t_f), split), WA, 2)
        v.gt10 = _gt(s.tr, v.cr10)                    # TR > 10 CR
        v.cut_prod = _sum(csa(v.cut_p, RW + 6), RW + 6)
        v.floor_p = csa(v.floor_p, RW + MDF_FRAC + 1)
        v.cr_line = umin(v.cr_line2, r.line_rate)
        v = stage(v)

        # ---- S3: TR + AI'; the reloads' products; the cut's shift ----------------------------
        s = v.s
        # step = Mux(both_hi, i * HAI, Mux(any_hi, AI, 0)) = (i0 HAI + inc HAI if both_hi) + AI'
        both_hi = v.b_hi & v.t_hi
        ai = Mux(v.b_hi ^ v.t_hi, r.ai_rate, 0)
        v.tr_ai, v.tr8_ai = s.tr + ai, (s.tr >> 3) + ai
        v.step_p = [Mux(both_hi, p, 0) for p in
                    csa([*v.step_p, Mux(v.inc_i, r.hai_rate, 0)], WA)]     # i HAI if both_hi
        # a reload: lo + (span rnd >> D) = (lo 2**D + span rnd) >> D, mod 2**width
        v.reload_b_p = csa(_product(Mux(v.half_b, r.byte_span_half, r.byte_span), v.rnd, split,
                                    plus=[Mux(v.half_b, r.byte_lo_half, r.byte_lo) << D]),
                           BW + D + 1, 2)
        v.reload_t_p = csa(_product(Mux(v.half_t, r.time_span_half, r.time_span), v.rnd, split,
                                    plus=[Mux(v.half_t, r.time_lo_half, r.time_lo) << D]),
                           TW + D + 1, 2)
        v.cut_sub = v.cut_prod >> r.gd_shift
        v.floor0 = _sum(v.floor_p, RW + MDF_FRAC + 1) >> MDF_FRAC
        v = stage(v)

        # ---- S4: TR0 + step, with CR, against the line rate (rows); the floors ---------------
        s = v.s
        tr_step = Mux(v.fg & v.gt10, v.tr8_ai, v.tr_ai)      # TR0 + AI'
        step = [tr_step, *v.step_p]
        v.a_p = csa(step, WA)                                  # A = TR0 + step
        v.a_low_p = csa([*step, v.neg_line], WA)               # A - line
        v.b_p = csa([*step, s.cr], WA)                         # B = CR + A
        v.b_low_p = csa([*step, v.cr_neg_line2], WA)           # B - 2 line
        v.floor_hi = _gt(v.floor0, r.min_rate)
        v.cr_floor0 = s.cr - v.floor0
        v.cut = s.cr - v.cut_sub
        v.min_wins = _gt(v.cr_min, v.cut_sub)                  # CR - min_rate > cut_sub
        v.reload_b_p = csa(v.reload_b_p, BW + D + 1)
        v.reload_t_p = csa(v.reload_t_p, TW + D + 1)
        v = stage(v)

        # ---- S5: the sums; the cut against its floor; the reloads --------------------------
        s = v.s
        v.tr_step = _sum(v.a_p, WA)
        v.below = _sum(v.a_low_p, WA)[WA - 1]                # TR0 + step < line_rate
        v.cr_step2 = _sum(v.b_p, WA) >> 1
        v.cr_below = _sum(v.b_low_p, WA)[WA - 1]             # (CR + TR0 + step) / 2 < line
        # max(CR - cut_sub, floor), floor = max(floor0, min_rate): CR - floor > cut_sub?
        v.cut_wins = Mux(v.floor_hi, _gt(v.cr_floor0, v.cut_sub), v.min_wins)
        v.floor = Mux(v.floor_hi, v.floor0, r.min_rate)
        v.reload_b = wire("reload_b", _sum(v.reload_b_p, BW + D + 1) >> D, BW)
        v.reload_t = wire("reload_t", _sum(v.reload_t_p, TW + D + 1) >> D, TW)
        v = stage(v)

        # ---- S6: TR and CR after an increase or a cut; the timer's reload -------------------
        v.tr_inc = wire("tr_inc", Mux(v.below, v.tr_step, r.line_rate), RW)
        v.cr_inc = wire("cr_inc", Mux(v.below, Mux(v.cr_below, v.cr_step2, r.line_rate),
                                      v.cr_line), RW)
        v.cr_cut = wire("cr_cut", Mux(v.cut_wins, v.cut, v.floor), RW)
        v.t_reload = v.t_base + v.reload_t
        v = stage(v)

        # ---- S7: the next state ---------------------------------------------------------------
        s = v.s

        n = Signal(self.state_layout, name="qcn_next")
        m.d.comb += n.eq(s)
        with m.If(v.cnm):
            m.d.comb += [
                n.tr.eq(s.cr), n.cr.eq(v.cr_cut), n.b_stage.eq(0), n.t_stage.eq(0),
                n.bc.eq(v.reload_b), n.active.eq(1), n.fresh.eq(1),
                n.t_on.eq(1), n.t_dl.eq(v.t_reload),
            ]
        with m.Elif(v.byte_cycle | v.timer_cycle):
            m.d.comb += [n.tr.eq(v.tr_inc), n.cr.eq(v.cr_inc), n.fresh.eq(0),
                         n.b_stage.eq(v.b_stage), n.t_stage.eq(v.t_stage)]
            with m.If(v.byte_cycle):
                m.d.comb += n.bc.eq(v.reload_b)
                with m.If(v.due):                 # held: fires on the next cycle
                    m.d.comb += n.t_dl.eq(v.t_1)
            with m.Else():
                m.d.comb += n.t_dl.eq(v.t_reload)
                with m.If(v.tx):
                    m.d.comb += n.bc.eq(v.bc_left)
        with m.Elif(v.tx):
            m.d.comb += n.bc.eq(v.bc_left)

        return DatapathOut(next_state=n, wake_valid=n.t_on, wake=n.t_dl, expired=v.expired,
                           late=v.late)


#: the cut points (numbered from 1: after S1 ... S6) registered at each latency
_CUTS = {1: (), 2: (3,), 3: (2, 4), 4: (1, 3, 5), 5: (1, 2, 3, 5), 6: (1, 2, 3, 4, 5),
         7: (1, 2, 3, 4, 5, 6)}
#: the latency of the build for 156.25 MHz on ECP5 speed 6
QCN_PIPE_LATENCY = 6


def _product(a, b, split: bool, plus=()) -> list:
    """``plus + a * b`` as rows to add up: the values of ``plus`` and the copies of ``a``
    shifted and selected by ``b``'s bits; one row with the product ``a * b`` unless
    ``split``."""
    if not split:
        return [reduce(operator.add, [*plus, a * b])]
    return [*plus, *(Mux(b[j], a << j, 0) for j in range(len(b)))]


def _gt(a, b):
    """``a > b`` as the sign of ``b - a`` (exact width): one carry chain on ECP5, where
    Yosys maps a wide compare to a chain and a tree of multiplexers."""
    return (b - a)[-1]


def _sum(parts, width: int | None = None):
    """The sum of rows, truncated to ``width`` bits (the exact product's width, so the split
    and the one-row forms have the same shape)."""
    total = reduce(operator.add, parts)         # at most three rows
    return total if width is None else total[:width]


@dataclass(frozen=True)
class QcnEngineConfig(BlockConfig):
    """A QCN engine top: the engine's sizing (:class:`FlowEngineConfig`) and the algorithm's
    configuration (:class:`QcnRpConfig`: widths, LFSR, the registers' reset values)."""

    engine: FlowEngineConfig = FlowEngineConfig()
    rp: QcnRpConfig = QcnRpConfig(clk_hz=156_250_000)
    #: modify cycles of the datapath: QCN_PIPE_LATENCY (6) closes 156.25 MHz; 1 is the
    #: one-cycle reference form (back-to-back events of one flow, ~29 MHz)
    latency: int = QCN_PIPE_LATENCY

    def __post_init__(self):
        check_engine_pair(self, "rp", QcnRpConfig)
        QcnDatapath(self.rp, self.engine.time_width, latency=self.latency)  # validates

    def register_map(self, name: str = "qcn_engine"):
        """The engine's register map (:func:`hw.nic.engine_regs.engine_register_map`): the
        datapath's registers (reset: ``rp``'s values), the engine's counters, the header."""
        from .engine_regs import engine_register_map
        desc = {n.lower(): d for n, _, _, d in QcnRpConfig.REGISTERS}
        return engine_register_map(
            name, QcnDatapath(self.rp, self.engine.time_width, latency=self.latency), "QCNE",
            f"QCN reaction point engine, {self.engine.n_flows} flows", desc,
            flows=self.engine.n_flows, timer=self.engine.timer)

    @classmethod
    def for_flows(cls, n_flows: int, *, timer: str = "wheel", **rp) -> QcnEngineConfig:
        """``n_flows`` flows, the engine's defaults (``timer``: its timer service), the IEEE
        802.1Q MIB values at 156.25 MHz (with ``rp`` overrides) as the reset values."""
        engine = FlowEngineConfig(n_flows=n_flows, timer=timer)
        return cls(engine=engine, rp=QcnRpConfig(clk_hz=engine.clk_hz, **rp))


def qcn_engine(config: QcnEngineConfig | None = None):
    """The engine top: :class:`FlowEngine` around a :class:`QcnDatapath`, with the register
    map's identification header (:class:`hw.nic.engine_regs.EngineRegs`)."""
    from .engine_regs import EngineRegs
    from .flow_engine import FlowEngine
    cfg = QcnEngineConfig() if config is None else config
    return EngineRegs(FlowEngine(cfg.engine, QcnDatapath(cfg.rp, cfg.engine.time_width,
                                                         latency=cfg.latency)),
                      cfg.register_map())


def QcnDatapathTop(config: QcnRpConfig, time_width: int = 26, latency: int = 1):
    """:class:`QcnDatapath` alone between flip-flops (``qcn_datapath_pipe``):
    :class:`DatapathTop` around it."""
    return DatapathTop(QcnDatapath(config, time_width, latency=latency), time_width)

