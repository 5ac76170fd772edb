"""TIMELY's rate computation as a datapath of the multi-flow engine (:mod:`hw.nic.flow_engine`).

:class:`TimelyDatapath` is the per-completion update of :mod:`sim.models.timely` (Mittal et
al., SIGCOMM 2015) in the engine's form (``docs/timely.md``, "Hardware"): one flow's state in a
block-RAM word, a completion = a ``cn`` event whose payload carries the segment's two NIC
timestamps, its size and the application's bytes and cycles since the previous completion;
every knob a run-time register.  No timer: TIMELY is clocked by completions (``tx`` and timer
events leave the state as it is).  The bit-exact model is
:class:`sim.models.timely.TimelyDatapathModel` (the single-flow update function
:func:`sim.models.timely.timely_update`).

The update is a feed-forward pipeline (:data:`TIMELY_PIPE_LATENCY` cycles; alone on ECP5-85
speed 6 it reaches 131.6 MHz, not yet the 156.25 MHz target: docs/timely.md, "Hardware")
or, ``latency = 1``, the same function in one combinational cycle.
Products are carry-save rows in logic, ``T_high / RTT`` an exact radix-4 restoring division
(:class:`hw.lib.pipeline.Divider`, 8 steps, one per stage, started as soon as the RTT is known,
in parallel with the EWMA and the gradient).

:func:`timely_engine` builds the engine top, :class:`TimelyDatapathTop` the datapath alone
between flip-flops (out-of-context timing).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data

from ..lib.csa import fit
from ..lib.pipeline import Divider, Stages, lt, mul_rows, reduce_rows, split_hi, split_lo
from ..params import BlockConfig, ConfigError, check_bool
from .flow_datapath import DatapathOut, DatapathTop, EventKind, FlowDatapath
from .flow_engine_config import FlowEngineConfig, check_engine_pair, min_out_fifo_depth
from .timely_config import (
    APP_FRAC,
    DIFF_FRAC,
    FRAC16,
    GRAD_FRAC,
    GRAD_MAX,
    INV_FRAC,
    ONE16,
    SER_FRAC,
    TS_BITS,
    TimelyConfig,
)

__all__ = ["TimelyDatapath", "TimelyEngineConfig", "timely_engine", "TimelyDatapathTop",
           "timely_state_layout", "timely_cn_layout", "timely_register_list",
           "TIMELY_PIPE_LATENCY"]

SEG_BITS = 17           #: segment bytes in a completion (16-64 KB)
APP_BITS = 32           #: application bytes / cycles since the previous completion
APPK_BITS = 28          #: app_k <= 2**27 (100 %, 1 MHz)
GSHIFT = DIFF_FRAC + INV_FRAC - GRAD_FRAC        # 24


def timely_state_layout(cfg: TimelyConfig) -> data.StructLayout:
    """Per-flow state: the fields of :class:`sim.models.timely.TimelyState` (``rtt_diff`` as
    its two's-complement bits)."""
    return data.StructLayout({
        "rate": cfg.rate_width,                     # UQ.10 Mb/s (the rate streamed out)
        "prev_rtt": cfg.rtt_width,                  # cycles
        "rtt_diff": cfg.rtt_width + DIFF_FRAC + 1,  # signed, cycles x 2**8
        "neg": 8,                                   # completions with gradient <= 0
        "valid": 1,                                 # a first RTT was seen
    })


def timely_cn_layout() -> data.StructLayout:
    """A completion (the ``cn`` payload): :class:`sim.models.timely.TimelyCompletion`."""
    return data.StructLayout({"t_send": TS_BITS, "t_comp": TS_BITS, "seg_bytes": SEG_BITS,
                              "app_bytes": APP_BITS, "app_cycles": APP_BITS})


def timely_register_list(cfg: TimelyConfig) -> list[tuple[str, int, int]]:
    """``(name, width, reset)`` of every run-time register (the order is the address map)."""
    r = cfg.registers()
    RW, RT = cfg.rate_width, cfg.rtt_width
    return [("t_low", RT, r.t_low), ("t_high", RT, r.t_high),
            ("inv_min_rtt", 32, r.inv_min_rtt), ("alpha", FRAC16 + 1, r.alpha),
            ("beta", FRAC16 + 1, r.beta), ("delta", RW, r.delta),
            ("hai_thresh", 8, r.hai_thresh), ("hai_mult", 8, r.hai_mult),
            ("min_rate", RW, r.min_rate), ("max_rate", RW, r.max_rate),
            ("init_rate", RW, r.init_rate), ("ser_per_byte", 32, r.ser_per_byte),
            ("app_k", APPK_BITS, r.app_k)]


#: the latency of the pipelined build (131.6 MHz alone on ECP5 speed 6; target 156.25 MHz)
TIMELY_PIPE_LATENCY = 29


class TimelyDatapath(FlowDatapath):
    """TIMELY's per-flow rate update on the multi-flow engine.

    Parameters
    ----------
    config : TimelyConfig
        Structural widths (``rtt_width``, the rate width from ``line_rate_mbps``) and the
        registers' reset values.
    time_width : int
        W of the engine (unused by TIMELY: no timer).
    pipelined : bool
        True: :data:`TIMELY_PIPE_LATENCY` modify cycles (feed-forward, no enable); False: one
        combinational cycle.

    Interface (the :mod:`hw.nic.flow_datapath` protocol): state :func:`timely_state_layout`
    (93 bits at 100 Gb/s, rtt_width 24); ``cn`` payload :func:`timely_cn_layout` (145 bits);
    ``tx`` 1 dummy bit (ignored); registers :func:`timely_register_list`; rate field ``rate``
    (streamed on every change: it drives the rate limiter or the pacer).  One completion per
    clock (of different flows; one flow's next completion issues ``latency`` cycles later).
    """

    name = "timely"

    def __init__(self, config: TimelyConfig, time_width: int = 26, *, pipelined: bool = True):
        if not isinstance(config, TimelyConfig):
            raise TypeError(f"TimelyDatapath needs a TimelyConfig, not {config!r}")
        check_bool(self, "pipelined", pipelined)
        self.config = config
        self.time_width = time_width
        self.pipelined = pipelined
        self.state_layout = timely_state_layout(config)
        self.cn_layout = timely_cn_layout()
        self.tx_bytes_width = 1
        self.rate_field = "rate"
        self.regs = timely_register_list(config)
        for name, width, reset in self.regs:
            if reset >= 1 << width:
                raise ConfigError(self, name, reset,
                                  f"a value below 2**{width} (the register's width)")
        self.latency = TIMELY_PIPE_LATENCY if pipelined else 1

    def init_state(self, regs) -> dict:
        return {"rate": regs.init_rate}

    def build(self, m: Module, *, state, kind, tx_bytes, cn, t, regs, pre,
              valid=None) -> DatapathOut:
        st = Stages(m, self.pipelined, "tl_")
        nxt = self._update(m, st, state, kind, cn, regs)
        st.finish()         # the registers of the values the update read after each cut
        assert 1 + st.k == self.latency, (st.k, self.latency)
        return DatapathOut(next_state=nxt, wake_valid=Const(0), wake=Const(0, self.time_width),
                           expired=Const(0), late=Const(0, self.time_width))

    def _update(self, m, st: Stages, s, kind, cn, r):
        """The update, written once for both forms (``v = st(v)``: a cut)."""
        cfg = self.config
        RT, RW = cfg.rtt_width, cfg.rate_width
        DW = RT + DIFF_FRAC + 1
        rtt_max = (1 << RT) - 1
        diff_max = (1 << (RT + DIFF_FRAC)) - 1
        red = st.reduce

        # ---- 1: the completion's elapsed time; the products that need only the event -------
        v = SimpleNamespace(s=s, cmp=kind == EventKind.CN)
        v.elapsed = (cn.t_comp - cn.t_send)[:TS_BITS]
        v.ser = red(mul_rows(r.ser_per_byte, cn.seg_bytes, 32 + SEG_BITS), 32 + SEG_BITS, 2)
        v.cyc = Mux(cn.app_cycles[RT:] != 0, rtt_max, cn.app_cycles[:RT])
        v.app_b = cn.app_bytes
        v.dn = red(mul_rows(r.delta, r.hai_mult, RW + 8), RW + 8, 2)
        v = st(v)
        # ---- 2
        v.ser = red(v.ser, 32 + SEG_BITS)
        PW1 = RT + APPK_BITS
        v.p1 = red(mul_rows(r.app_k, v.cyc, PW1), PW1, 2)
        del v.cyc
        v.dn = red(v.dn, RW + 8)
        v = st(v)
        # ---- 3: serialization summed
        v.ser = reduce_rows(v.ser, 32 + SEG_BITS)[SER_FRAC:]
        v.p1 = red(v.p1, PW1)
        v.dn = reduce_rows(v.dn, RW + 8)
        v = st(v)
        # ---- 4: elapsed - serialization
        v.d = (fit(v.elapsed, TS_BITS + 2) - fit(v.ser, TS_BITS + 2))[:TS_BITS + 2].as_signed()
        del v.elapsed, v.ser
        v.p1 = red(v.p1, PW1)
        v = st(v)
        # ---- 5: RTT = clamp(elapsed - ser, 0, rtt_max); P1 = cycles x app_k summed
        neg, over = v.d < 0, v.d[RT:TS_BITS + 1] != 0
        v.rtt = Mux(neg, 0, Mux(over, rtt_max, v.d[:RT]))
        del v.d
        v.p1 = reduce_rows(v.p1, PW1)
        v = st(v)
        # ---- 6: regions; new_diff; the division T_high 2**16 / RTT starts; app product rows
        s = v.s
        v.low = lt(v.rtt, r.t_low)
        v.high = lt(r.t_high, v.rtt)
        v.nd = ((v.rtt - s.prev_rtt).as_signed() << DIFF_FRAC)     # RT + 9 bits signed
        div = Divider(RT, FRAC16)
        # in the T_high region RTT > T_high, so the quotient fits: no overflow check
        v.div = div.start(Cat(Const(0, FRAC16), r.t_high), v.rtt, check=False)
        PW = PW1 + RW + 1
        v.p = red(mul_rows(v.p1, s.rate, PW), PW, 2)
        del v.p1
        v = st(v)
        # ---- 7: e = new_diff - rtt_diff
        s = v.s
        rd = s.rtt_diff.as_signed()
        v.e = (v.nd - rd)[:DW + 1].as_signed()
        del v.nd
        v.div = div.step(v.div)
        v.p = red(v.p, PW)
        v = st(v)
        # ---- 8: rtt_diff 2**16 + e alpha, as rows
        s = v.s
        XW = RT + DIFF_FRAC + 2 + FRAC16 + 2
        v.ew = red(mul_rows(v.e, r.alpha, XW) + [fit(s.rtt_diff.as_signed() << FRAC16, XW)],
                   XW, 3)
        del v.e
        v.div = div.step(v.div)
        v.p = red(v.p, PW)
        v = st(v)
        # ---- 9
        v.ew = red(v.ew, XW)
        v.div = div.step(v.div)
        # the application-limited compare: app_bytes 2**40 - P as rows, reduced to two, in
        # signed AW bits: app_bytes 2**40 < 2**72 and P < 2**(PW - 1) (its rows' width keeps
        # a bit to spare), so the wider of the two plus the sign (PW + 1 alone truncated
        # app_bytes 2**40 when rtt_width < 16: the rule then read a fast application as slow)
        AW = max(PW, APP_BITS + APP_FRAC) + 1
        v.ac = red([fit(v.app_b << APP_FRAC, AW)] + [~fit(x, AW) for x in v.p]
                   + [Const(len(v.p), AW)], AW)
        del v.p, v.app_b
        v = st(v)
        # ---- 10: the EWMA summed (>> 16: floor)
        v.ew = reduce_rows(v.ew, XW)[FRAC16:].as_signed()
        v.div = div.step(v.div)
        v.ac = red(v.ac, AW)
        v = st(v)
        # ---- 11: the clamp's compares to +-diff_max; the app compare's low half
        v.ew_hi = v.ew > diff_max
        v.ew_lo = v.ew < -diff_max
        v.div = div.step(v.div)
        h = AW // 2
        v.ac_lo, v.ac_hi = split_lo(v.ac, h, h)        # the compare reads the sign: the carry
        del v.ac
        v = st(v)
        # ---- 12: the clamp's select; the app compare's high half
        s = v.s
        clamped = Mux(v.ew_hi, diff_max, Mux(v.ew_lo, -diff_max, v.ew))
        v.rd = Mux(s.valid, clamped, s.rtt_diff.as_signed())[:DW].as_signed()
        del v.ew, v.ew_hi, v.ew_lo
        v.div = div.step(v.div)
        v.ok = ~split_hi(v.ac_lo, v.ac_hi, h, AW, h)[AW - 1] | (r.app_k == 0)
        del v.ac_lo, v.ac_hi
        v = st(v)
        # ---- 13: gradient rows rtt_diff x inv_min_rtt
        GW = DW + 32 + 1
        v.g = red(mul_rows(v.rd, r.inv_min_rtt, GW), GW, 3)
        v.div = div.step(v.div)
        v = st(v)
        # ---- 14
        v.g = red(v.g, GW)
        v.div = div.step(v.div)
        v = st(v)
        # ---- 15
        v.g = red(v.g, GW)
        assert div.done
        v.q = div.quotient(v.div)
        del v.div
        v = st(v)
        # ---- 16: the gradient's product summed, low half; 2**16 - q
        hg = GW // 2
        v.g_lo, v.g_hi = split_lo(v.g, hg, GSHIFT)     # (>> GSHIFT: the low bits unread)
        del v.g
        v.omq = (ONE16 - v.q)[:FRAC16 + 1]
        del v.q
        v = st(v)
        # ---- 17: the high half (the gradient before saturation); the HAI counter's next
        #          value if the gradient is not positive (the state and a register only)
        s = v.s
        v.g0 = split_hi(v.g_lo, v.g_hi, hg, GW, GSHIFT)[GSHIFT:].as_signed()
        del v.g_lo, v.g_hi
        n1 = s.neg + 1
        v.n1 = Mux(lt(n1, r.hai_thresh), n1, r.hai_thresh)[:8]
        v = st(v)
        # ---- 18: the saturation's compares, the gradient's sign (no select yet)
        g0 = v.g0
        v.g_over = g0 > GRAD_MAX
        v.gpos = g0 > 0
        v.g0 = g0[:GRAD_FRAC + 4]          # the gradient when positive and not saturated
        v = st(v)
        # ---- 19: the gradient, saturated (used when positive); which rule; the counter
        v.g = Mux(v.g_over, GRAD_MAX, v.g0)[:GRAD_FRAC + 4]
        v.neg = Mux(v.gpos, 0, v.n1)[:8]
        v.inc_rule = v.low | (~v.high & ~v.gpos)
        del v.g0, v.g_over, v.n1
        v = st(v)
        # ---- 20: beta x (2**16 - q) or beta x g, rows
        v.hai = ~lt(v.neg, r.hai_thresh)
        x = Mux(v.high, v.omq, v.g)
        FW_ = FRAC16 + 1 + GRAD_FRAC + 5
        v.bx = red(mul_rows(x, r.beta, FW_), FW_, 2)
        del v.omq, v.g
        v = st(v)
        # ---- 21
        v.bx = red(v.bx, FW_)
        v.inc = Mux(v.hai & ~v.low, v.dn, r.delta)     # HAI in the gradient region only
        del v.dn, v.hai
        v = st(v)
        # ---- 22: p = beta x >> 16; rate + increase
        s = v.s
        v.p = reduce_rows(v.bx, FW_)[FRAC16:]
        del v.bx
        v.rinc = s.rate + v.inc
        del v.inc
        v = st(v)
        # ---- 23: the factor 2**16 - p (at least 0 in the gradient rule)
        f = (ONE16 - fit(v.p, FW_ - FRAC16 + 1)).as_signed()
        v.f = Mux(~v.high & (f < 0), 0, f)[:FW_ - FRAC16 + 2].as_signed()
        del v.p
        v = st(v)
        # ---- 24, 25: rate x factor rows
        s = v.s
        MW = RW + FW_ - FRAC16 + 3
        v.rf = red(mul_rows(v.f, s.rate, MW), MW, 3)
        del v.f
        v = st(v)
        v.rf = red(v.rf, MW, 3)
        v = st(v)
        # ---- 26, 27: rate x factor >> 16 (floor), over two cycles
        hm = MW // 2
        v.rf_lo, v.rf_hi = split_lo(v.rf, hm, FRAC16)  # (>> 16: the low bits unread)
        del v.rf
        v = st(v)
        s = v.s
        dec = split_hi(v.rf_lo, v.rf_hi, hm, MW, FRAC16)[FRAC16:].as_signed()
        del v.rf_lo, v.rf_hi
        rate = Mux(v.inc_rule, Mux(v.ok, v.rinc, s.rate), dec)
        v.x = fit(rate, MW - FRAC16 + 1).as_signed()
        del v.rinc, v.ok, v.inc_rule
        v = st(v)
        # ---- 28: the clamp's compares
        x = v.x
        v.below = x < r.min_rate
        v.above = x > r.max_rate
        v.x = x[:RW]
        v.lo_val = Mux(lt(r.max_rate, r.min_rate), r.max_rate, r.min_rate)   # registers only
        v = st(v)
        # ---- 29: clamp [min_rate, max_rate]; the next state
        s = v.s
        rate = Mux(v.below, v.lo_val, Mux(v.above, r.max_rate, v.x))
        n = Signal(self.state_layout, name="tl_next")
        m.d.comb += n.eq(s)
        with m.If(v.cmp):
            m.d.comb += [n.rate.eq(rate), n.prev_rtt.eq(v.rtt), n.rtt_diff.eq(v.rd),
                         n.neg.eq(v.neg), n.valid.eq(1)]
        return n


@dataclass(frozen=True)
class TimelyEngineConfig(BlockConfig):
    """A TIMELY engine top: the engine's sizing and TIMELY's configuration (the registers'
    reset values); ``pipelined``: the datapath's form."""

    engine: FlowEngineConfig = FlowEngineConfig()
    timely: TimelyConfig = TimelyConfig()
    pipelined: bool = True

    def __post_init__(self):
        check_engine_pair(self, "timely", TimelyConfig)
        check_bool(self, "pipelined", self.pipelined)
        TimelyDatapath(self.timely, self.engine.time_width)      # validates the registers

    def register_map(self, name: str = "timely_engine"):
        """The engine's register map (:func:`hw.nic.engine_regs.engine_register_map`): the
        datapath's registers (reset: ``timely``'s values), the engine's counters, the header
        and the per-flow windows (``rtt_diff``, 33 bits at rtt_width 24, is two words)."""
        from .engine_regs import engine_register_map
        return engine_register_map(
            name, TimelyDatapath(self.timely, self.engine.time_width, pipelined=self.pipelined),
            "TMLE", f"TIMELY rate engine, {self.engine.n_flows} flows",
            flows=self.engine.n_flows, timer=self.engine.timer)

    @classmethod
    def for_flows(cls, n_flows: int, **timely) -> TimelyEngineConfig:
        lat = TIMELY_PIPE_LATENCY
        engine = FlowEngineConfig(n_flows=n_flows, out_fifo_depth=min_out_fifo_depth(lat))
        return cls(engine=engine, timely=TimelyConfig(clk_hz=engine.clk_hz, **timely))


def timely_engine(config: TimelyEngineConfig | None = None):
    """The engine top: :class:`FlowEngine` around a :class:`TimelyDatapath`, with the register
    map's header and per-flow windows (:class:`hw.nic.engine_regs.EngineRegs`)."""
    from .engine_regs import EngineRegs
    from .flow_engine import FlowEngine
    cfg = TimelyEngineConfig.for_flows(1024) if config is None else config
    return EngineRegs(FlowEngine(cfg.engine, TimelyDatapath(cfg.timely, cfg.engine.time_width,
                                                            pipelined=cfg.pipelined)),
                      cfg.register_map())


def TimelyDatapathTop(config: TimelyConfig, time_width: int = 26, pipelined: bool = True):
    """:class:`TimelyDatapath` alone between flip-flops (``timely_datapath_pipe``):
    :class:`DatapathTop` around it."""
    return DatapathTop(TimelyDatapath(config, time_width, pipelined=pipelined), time_width)

