"""Swift's window update as a datapath of the multi-flow engine (:mod:`hw.nic.flow_engine`).

:class:`SwiftDatapath` is the per-event update of :mod:`sim.models.swift` (Kumar et al.,
SIGCOMM 2020) in the engine's form (``docs/swift.md``, "Hardware"): one flow's state in a
block-RAM word; an ACK, a retransmission timeout or a fast recovery is a ``cn`` event whose
payload names the event (``op``) and carries the NIC's receive stamp, the fabric and endpoint
delays, the hop count and the packets acknowledged; every knob is a run-time register except
the flow-scaling ROM (512 delays, filled from the configuration at build time).  No timer: the
retransmission timeout is detected by the transport and arrives as an event, as in the model.

The streamed "rate" is ``pace``, the gap between two packets of a window below one packet (0:
the window is at least one packet, no pacing): a NIC feeds each record to the multi-flow
pacer's ``cn`` stream (:mod:`hw.nic.pacer`, a new interval: ``pace << frac_bits``) and its
``tx`` with the packets waiting, so the pacer releases one packet every ``pace`` cycles while
the window is below one packet; at one packet or more the transport sends ``floor(cwnd)``
packets in flight (``cwnd`` is in the state, READ).

The bit-exact model is :class:`sim.models.swift.SwiftDatapathModel` (the single-flow update
functions :func:`sim.models.swift.swift_on_ack`, ``swift_on_timeout``,
``swift_on_fast_recovery``).  The update is a feed-forward pipeline of
:data:`SWIFT_PIPE_LATENCY` cycles (or, ``pipelined=False``, one combinational cycle): the three
quotients are exact radix-4 restoring divisions (:class:`hw.lib.pipeline.Divider`), each
window's increase and cut sharing one 32-bit divider, the pacing delay a second divider after
the new window is known.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data

from ..lib.csa import fit
from ..lib.pipeline import Divider, Stages, lt, mul_rows, reduce_rows
from ..params import BlockConfig, ConfigError, check_bool
from .flow_datapath import DatapathOut, DatapathTop, EventKind, FlowDatapath
from .flow_engine_config import FlowEngineConfig, check_engine_pair, min_out_fifo_depth
from .swift_config import (
    CW_BITS,
    CW_FRAC,
    FRAC16,
    FS_ENTRIES,
    FS_MANT,
    ONE16,
    PACE_BITS,
    TS_BITS,
    SwiftConfig,
)

__all__ = ["SwiftDatapath", "SwiftEngineConfig", "swift_engine", "SwiftDatapathTop",
           "swift_state_layout", "swift_cn_layout", "swift_register_list", "SwiftOp",
           "SWIFT_PIPE_LATENCY"]

AI_BITS = 24            #: ai, UQ8.16
N_BITS = 8              #: packets acknowledged by one ACK
HOP_BITS = 8


class SwiftOp:
    """The ``op`` field of a ``cn`` event."""
    ACK, TIMEOUT, FAST_RECOVERY, NONE = 0, 1, 2, 3


def swift_state_layout(cfg: SwiftConfig) -> data.StructLayout:
    """Per-flow state: the fields of :class:`sim.models.swift.SwiftState`."""
    D = cfg.delay_width
    return data.StructLayout({
        "pace": PACE_BITS,          # cycles between packets below one packet (streamed out)
        "fcwnd": CW_BITS,           # UQ16.16 packets
        "ecwnd": CW_BITS,
        "rtt": D,                   # cycles: the last RTT sample
        "t_last": TS_BITS,          # the last decrease's stamp
        "decreased": 1,
        "retx": 8,
        "target": D,                # the fabric target of the last ACK
    })


def swift_cn_layout(cfg: SwiftConfig) -> data.StructLayout:
    """An event (the ``cn`` payload): ``op`` (:class:`SwiftOp`), the receive stamp ``now``,
    the delays (cycles, saturated to the delay width by the datapath), hops, packets acked."""
    return data.StructLayout({"op": 2, "now": TS_BITS, "fabric": 32, "endpoint": 32,
                              "hops": HOP_BITS, "num_acked": N_BITS})


def swift_register_list(cfg: SwiftConfig) -> list[tuple[str, int, int]]:
    """``(name, width, reset)`` of every run-time register (the order is the address map)."""
    r = cfg.registers()
    D = cfg.delay_width
    return [("base_target", D, r.base_target), ("hop_scale", D, r.hop_scale),
            ("endpoint_target", D, r.endpoint_target), ("ai", AI_BITS, r.ai),
            ("beta", FRAC16 + 1, r.beta), ("mdf_floor", FRAC16 + 1, r.mdf_floor),
            ("min_cwnd", CW_BITS, r.min_cwnd), ("max_cwnd", CW_BITS, r.max_cwnd),
            ("init_cwnd", CW_BITS, r.init_cwnd), ("retx_reset", 8, r.retx_reset),
            ("max_hops", HOP_BITS, r.max_hops)]


#: the latency of the pipelined build (target 156.25 MHz; at latency 50 it measured 107.3 MHz)
SWIFT_PIPE_LATENCY = 54


def _lead(x):
    """(any bit set, position of the leading one) of ``x`` (a power-of-two width), a
    log-depth tree of 2:1 selects."""
    n = len(x)
    if n == 1:
        return x[0], Const(0, 0)
    h = n // 2
    a_hi, p_hi = _lead(x[h:])
    a_lo, p_lo = _lead(x[:h])
    if h == 1:              # two bits: the position is a_hi (no select of empty positions)
        return a_hi | a_lo, a_hi
    return a_hi | a_lo, Cat(Mux(a_hi, p_hi, p_lo), a_hi)


class SwiftDatapath(FlowDatapath):
    """Swift's per-flow window update on the multi-flow engine.

    Parameters
    ----------
    config : SwiftConfig
        ``delay_width`` and the registers' reset values; the flow-scaling ROM's contents.
    time_width : int
        W of the engine (unused by Swift: no timer).
    pipelined : bool
        True: :data:`SWIFT_PIPE_LATENCY` modify cycles (feed-forward, no enable); False: one
        combinational cycle.

    Interface (the :mod:`hw.nic.flow_datapath` protocol): state :func:`swift_state_layout`
    (185 bits at delay_width 24); ``cn`` payload :func:`swift_cn_layout` (114 bits); ``tx`` 1
    dummy bit (ignored); registers :func:`swift_register_list`; rate field ``pace``.
    """

    name = "swift"

    def __init__(self, config: SwiftConfig, time_width: int = 26, *, pipelined: bool = True):
        if not isinstance(config, SwiftConfig):
            raise TypeError(f"SwiftDatapath needs a SwiftConfig, not {config!r}")
        check_bool(self, "pipelined", pipelined)
        self.config = config
        self.time_width = time_width
        self.pipelined = pipelined
        self.state_layout = swift_state_layout(config)
        self.cn_layout = swift_cn_layout(config)
        self.tx_bytes_width = 1
        self.rate_field = "pace"
        self.regs = swift_register_list(config)
        for name, width, reset in self.regs:
            if reset >= 1 << width:
                raise ConfigError(self, name, reset,
                                  f"a value below 2**{width} (the register's width)")
        self.fs_rom = config.registers().fs_rom
        assert len(self.fs_rom) == FS_ENTRIES       # every 9-bit index has its entry
        self.latency = SWIFT_PIPE_LATENCY if pipelined else 1

    def init_state(self, regs) -> dict:
        return {"fcwnd": regs.init_cwnd, "ecwnd": regs.init_cwnd}

    def build(self, m: Module, *, state, kind, tx_bytes, cn, t, regs, pre,
              valid=None) -> DatapathOut:
        st = Stages(m, self.pipelined, "sw_")
        nxt = self._update(m, st, state, kind, cn, regs)
        st.finish()         # the registers of the values the update read after each cut
        assert 1 + st.k == self.latency, (st.k, self.latency)
        return DatapathOut(next_state=nxt, wake_valid=Const(0), wake=Const(0, self.time_width),
                           expired=Const(0), late=Const(0, self.time_width))

    def _update(self, m, st: Stages, s, kind, cn, r):
        cfg = self.config
        D = cfg.delay_width
        dmax = (1 << D) - 1
        red = st.reduce

        def sat_d(x):                    # min(x, dmax) of an unsigned value
            return Mux(x[D:] != 0, dmax, x[:D])

        # ---- 1: decode, saturate the delays, the leading one of fcwnd, products' rows ------
        is_cn = kind == EventKind.CN
        v = SimpleNamespace(s=s, now=cn.now)
        v.ack = is_cn & (cn.op == SwiftOp.ACK)
        v.to = is_cn & (cn.op == SwiftOp.TIMEOUT)
        v.fr = is_cn & (cn.op == SwiftOp.FAST_RECOVERY)
        v.fab, v.ep = sat_d(cn.fabric), sat_d(cn.endpoint)
        v.hops = Mux(lt(r.max_hops, cn.hops), r.max_hops, cn.hops)
        v.fany, v.fe = _lead(s.fcwnd)
        v.ain = red(mul_rows(r.ai, cn.num_acked, AI_BITS + N_BITS), AI_BITS + N_BITS, 2)
        v.prev = Mux(lt(s.ecwnd, s.fcwnd), s.ecwnd, s.fcwnd)
        v.dt = (cn.now - s.t_last)[:TS_BITS]
        r1 = s.retx + 1
        v.retx_to = Mux(lt(r1, r.retx_reset), r1, r.retx_reset)[:8]
        v.thr = (ONE16 - fit(r.mdf_floor, FRAC16 + 3)).as_signed()     # max_mdf, signed
        v.lo_val = Mux(lt(r.max_cwnd, r.min_cwnd), r.max_cwnd, r.min_cwnd)
        v = st(v)
        # ---- 2: RTT of an ACK; the flow-scaling index
        s = v.s
        v.rtt_ack = sat_d(v.fab + v.ep)
        # the FS_MANT bits below the leading one (zero-filled); fcwnd = 0 indexes entry
        # 31 * 2**FS_MANT (Python's index -16 of the model's table)
        norm = (s.fcwnd << (~v.fe)[:5])[:CW_BITS]          # 31 - e
        mant = norm[CW_BITS - 1 - FS_MANT:CW_BITS - 1]
        v.idx = Mux(v.fany, Cat(mant, v.fe), (CW_BITS - 1) << FS_MANT)
        v.hs = red(mul_rows(r.hop_scale, v.hops, D + HOP_BITS), D + HOP_BITS, 3)
        v.ain = red(v.ain, AI_BITS + N_BITS)
        v.reset_to = ~lt(v.retx_to, r.retx_reset)
        del v.fany, v.fe, v.hops
        v = st(v)
        # ---- 3: the flow-scaling ROM read, as logic from the registered index (a block
        #         RAM's read data comes 5.6 ns after the clock on ECP5 speed 6 without its
        #         output register, which Yosys does not infer: no time left in the cycle);
        #         the RTT of this event
        rom = Signal(D, name=f"sw_fs_rom_{st.n}")
        cases: dict[int, list[int]] = {}
        for i, val in enumerate(self.fs_rom):
            cases.setdefault(val, []).append(i)
        with m.Switch(v.idx):
            for val, idxs in cases.items():
                with m.Case(*idxs):
                    m.d.comb += rom.eq(val)
        v.rom = rom
        del v.idx
        s = v.s
        v.rtt = Mux(v.ack, v.rtt_ack, s.rtt)
        del v.rtt_ack
        v.hs = red(v.hs, D + HOP_BITS + 2)
        v.ain = reduce_rows(v.ain, AI_BITS + N_BITS)
        v = st(v)
        # ---- 4: the once-per-RTT guard
        s = v.s
        v.can = ~s.decreased | ~lt(v.dt, v.rtt)
        del v.dt
        v = st(v)
        # ---- 5: the target's rows
        TW = D + HOP_BITS + 2            # base + hops x h + fs before the saturation
        v.tsum = red([fit(r.base_target, TW), fit(v.rom, TW)] + [fit(x, TW) for x in v.hs],
                     TW, 3)
        del v.rom, v.hs
        v = st(v)
        # ---- 6: the target's sum
        v.tsum = reduce_rows(v.tsum, TW)
        v = st(v)
        # ---- 7: the target, saturated; whether each window is at least one packet
        s = v.s
        v.target = sat_d(v.tsum)
        del v.tsum
        v.f_ge1 = s.fcwnd[CW_FRAC:] != 0
        v.e_ge1 = s.ecwnd[CW_FRAC:] != 0
        v = st(v)
        # ---- 8: each window's delay against its target
        v.fd = (fit(v.fab, D + 1) - fit(v.target, D + 1))[:D + 1]
        v.ed = (fit(v.ep, D + 1) - fit(r.endpoint_target, D + 1))[:D + 1]
        v.f_t0 = v.target == 0
        v.e_t0 = r.endpoint_target == 0
        v = st(v)
        # ---- 9: the dividers start: ai n 2**16 / w (an increase at >= 1 packet) or
        #          (delay - target) 2**32 / delay (a cut's ratio, in 2**-32)
        s = v.s
        wins = (("f", s.fcwnd, v.fab), ("e", s.ecwnd, v.ep))
        divs = {}
        for k, w, delay in wins:
            d = getattr(v, k + "d")
            below = d[D]
            ge1 = getattr(v, k + "_ge1")
            setattr(v, k + "_lt", below)
            inc = below & ge1
            num = Mux(inc, fit(v.ain, 64) << CW_FRAC, Cat(Const(0, 32), d[:D]))
            den = Mux(inc, w, delay)
            divs[k] = div = Divider(CW_BITS, 32)
            # no overflow: ai n 2**16 < 2**48 <= w 2**32 when w >= 1 packet; (delay - target)
            # < delay when target > 0 (a zero target saturates the ratio, below)
            setattr(v, k + "_div", div.start(num, den, check=False))
            delattr(v, k + "d")
        del v.fab, v.ep
        v = st(v)
        # ---- 10 ... 25: 16 radix-4 steps each
        for _ in range(16):
            for k in ("f", "e"):
                setattr(v, k + "_div", divs[k].step(getattr(v, k + "_div")))
            v = st(v)
        # ---- 26: the quotients; beta x ratio rows; the increased window
        s = v.s
        for k, w in (("f", s.fcwnd), ("e", s.ecwnd)):
            q = divs[k].quotient(getattr(v, k + "_div"))
            delattr(v, k + "_div")
            ratio = Mux(getattr(v, k + "_t0"), (1 << FRAC16) - 1, q[FRAC16:32])
            setattr(v, k + "_bw", red(mul_rows(r.beta, ratio, 2 * FRAC16 + 1),
                                      2 * FRAC16 + 1, 3))
            setattr(v, k + "_inc", w + Mux(getattr(v, k + "_ge1"), q, v.ain))
        del v.ain
        v = st(v)
        # ---- 27
        for k in ("f", "e"):
            setattr(v, k + "_bw", red(getattr(v, k + "_bw"), 2 * FRAC16 + 1))
        v = st(v)
        # ---- 28: p = beta ratio >> 16
        for k in ("f", "e"):
            setattr(v, k + "_p", reduce_rows(getattr(v, k + "_bw"), 2 * FRAC16 + 1)[FRAC16:])
            delattr(v, k + "_bw")
        v = st(v)
        # ---- 29: the cut's factor max(2**16 - p, mdf_floor) (an ACK) or mdf_floor
        for k in ("f", "e"):
            p = getattr(v, k + "_p")
            f = Mux(lt(v.thr, p), r.mdf_floor, ONE16 - p)
            setattr(v, k + "_f", Mux(v.ack, f, r.mdf_floor)[:FRAC16 + 1])
            delattr(v, k + "_p")
        del v.thr
        v = st(v)
        # ---- 30, 31: w x f rows
        s = v.s
        MW = CW_BITS + FRAC16 + 1
        for k, w in (("f", s.fcwnd), ("e", s.ecwnd)):
            setattr(v, k + "_wf", red(mul_rows(w, getattr(v, k + "_f"), MW), MW, 3))
            delattr(v, k + "_f")
        v = st(v)
        for k in ("f", "e"):
            setattr(v, k + "_wf", red(getattr(v, k + "_wf"), MW))
        v = st(v)
        # ---- 32: the cut window
        for k in ("f", "e"):
            setattr(v, k + "_cut", reduce_rows(getattr(v, k + "_wf"), MW)[FRAC16:])
            delattr(v, k + "_wf")
        v = st(v)
        # ---- 33: which value, and whether it is clamped (an ACK always; a cut always)
        s = v.s
        ack_cut = v.ack & v.can
        fr_cut = (v.to & ~v.reset_to | v.fr) & v.can
        for k, w in (("f", s.fcwnd), ("e", s.ecwnd)):
            below = getattr(v, k + "_lt")
            x = Mux(v.ack & below, getattr(v, k + "_inc"),
                    Mux(ack_cut & ~below | fr_cut, getattr(v, k + "_cut"), w))
            setattr(v, k + "_x", x[:CW_BITS + 1])
            for name in ("_inc", "_cut", "_lt", "_ge1", "_t0"):
                delattr(v, k + name)
        v.clamp = v.ack | fr_cut
        v.to_min = v.to & v.reset_to
        v = st(v)
        # ---- 34, 35: the clamp [min_cwnd, max_cwnd]: the compares, then the selects
        for k in ("f", "e"):
            x = getattr(v, k + "_x")
            setattr(v, k + "_below", lt(x, r.min_cwnd))
            setattr(v, k + "_above", lt(r.max_cwnd, x))
        v = st(v)
        for k in ("f", "e"):
            x = getattr(v, k + "_x")
            below, above = getattr(v, k + "_below"), getattr(v, k + "_above")
            c = Mux(below, v.lo_val, Mux(above, r.max_cwnd, x))
            w = Mux(v.to_min, r.min_cwnd, Mux(v.clamp, c, x))
            setattr(v, k + "_w", w[:CW_BITS])
            for name in ("_x", "_below", "_above"):
                delattr(v, k + name)
        del v.lo_val, v.clamp, v.to_min
        v = st(v)
        # ---- 36: the effective window; a decrease stamps the time
        v.cwnd = Mux(lt(v.e_w, v.f_w), v.e_w, v.f_w)
        v.dec = lt(v.f_w, v.prev) | lt(v.e_w, v.prev)
        del v.prev
        v = st(v)
        # ---- 37: the pacing delay RTT 2**16 / cwnd starts (below one packet only)
        v.pacing = v.cwnd[CW_FRAC:] == 0
        pdiv = Divider(CW_FRAC, PACE_BITS)
        v.pdiv = pdiv.start(Cat(Const(0, CW_FRAC), v.rtt), v.cwnd[:CW_FRAC])
        v = st(v)
        # ---- 38 ... 53
        for _ in range(16):
            v.pdiv = pdiv.step(v.pdiv)
            v = st(v)
        # ---- 54: the next state
        s = v.s
        n = Signal(self.state_layout, name="sw_next")
        m.d.comb += n.eq(s)
        with m.If(v.ack | v.to | v.fr):
            m.d.comb += [
                n.fcwnd.eq(v.f_w), n.ecwnd.eq(v.e_w), n.rtt.eq(v.rtt),
                n.pace.eq(Mux(v.pacing, pdiv.quotient(v.pdiv), 0)),
                n.t_last.eq(Mux(v.dec, v.now, s.t_last)), n.decreased.eq(s.decreased | v.dec),
                n.retx.eq(Mux(v.to, v.retx_to, 0)),
            ]
            with m.If(v.ack):
                m.d.comb += n.target.eq(v.target)
        return n


@dataclass(frozen=True)
class SwiftEngineConfig(BlockConfig):
    """A Swift engine top: the engine's sizing and Swift's configuration (reset values, the
    flow-scaling ROM); ``pipelined``: the datapath's form."""

    engine: FlowEngineConfig = FlowEngineConfig(
        out_fifo_depth=min_out_fifo_depth(SWIFT_PIPE_LATENCY))
    swift: SwiftConfig = SwiftConfig()
    pipelined: bool = True

    def __post_init__(self):
        check_engine_pair(self, "swift", SwiftConfig)
        check_bool(self, "pipelined", self.pipelined)
        SwiftDatapath(self.swift, self.engine.time_width)       # validates the registers

    def register_map(self, name: str = "swift_engine"):
        """The engine's register map (:func:`hw.nic.engine_regs.engine_register_map`): the
        datapath's registers (reset: ``swift``'s values), the engine's counters, the header
        and the per-flow windows."""
        from .engine_regs import engine_register_map
        return engine_register_map(
            name, SwiftDatapath(self.swift, self.engine.time_width, pipelined=self.pipelined),
            "SWFE", f"Swift window engine, {self.engine.n_flows} flows",
            flows=self.engine.n_flows, timer=self.engine.timer)

    @classmethod
    def for_flows(cls, n_flows: int, **swift) -> SwiftEngineConfig:
        engine = FlowEngineConfig(n_flows=n_flows,
                                  out_fifo_depth=min_out_fifo_depth(SWIFT_PIPE_LATENCY))
        return cls(engine=engine, swift=SwiftConfig(clk_hz=engine.clk_hz, **swift))


def swift_engine(config: SwiftEngineConfig | None = None):
    """The engine top: :class:`FlowEngine` around a :class:`SwiftDatapath`, with the register
    map's header and per-flow windows (:class:`hw.nic.engine_regs.EngineRegs`)."""
    from .engine_regs import EngineRegs
    from .flow_engine import FlowEngine
    cfg = SwiftEngineConfig() if config is None else config
    return EngineRegs(FlowEngine(cfg.engine, SwiftDatapath(cfg.swift, cfg.engine.time_width,
                                                           pipelined=cfg.pipelined)),
                      cfg.register_map())


def SwiftDatapathTop(config: SwiftConfig, time_width: int = 26, pipelined: bool = True):
    """:class:`SwiftDatapath` alone between flip-flops (``swift_datapath_pipe``):
    :class:`DatapathTop` around it."""
    return DatapathTop(SwiftDatapath(config, time_width, pipelined=pipelined), time_width)

