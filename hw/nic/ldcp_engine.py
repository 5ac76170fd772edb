"""LDCP for many flows: the PAWA window update and the sub-one-packet release timer as a
datapath of the multi-flow engine (:mod:`hw.nic.flow_engine`).

:class:`LdcpDatapath` keeps, per flow, the window ``cw`` (UQ16.16), a release counter and the
sub-one-packet release timer as a stored deadline.  An ACK is the engine's ``cn`` event with
the payload ``{n_marked, n_unmarked}`` (an ACK with ECN-Echo confirming ``n`` packets is
``{n, 0}``, without ``{0, n}``; a coalesced one both, applied marked part first, exactly as the
one-flow datapath :class:`hw.nic.ldcp_window.LdcpWindowUpdate` takes it).  The window update
is that datapath's logic (:class:`hw.nic.ldcp_window.LdcpWindowDatapath`, the same 12 stages),
so it is bit-exact with :func:`sim.models.ldcp_window.update` by construction; the model
(:mod:`sim.models.ldcp_engine`) calls that function.  ``docs/ldcp-window.md``, "Many flows",
has the state layout, the timer rules, the latency and the lateness bound.

The release timer is the one-flow phase accumulator (``phase += cw`` every cycle while
``cw < 1``, a release when it reaches ``P = RTT 2**16``) turned into a deadline: the flow
stores the cycle ``dl`` at which the phase reaches ``P`` and the overshoot ``ovr`` (the phase
left just after that release).  At any update at time ``t`` (the engine's contract: the due
timer first, as of its deadline, then the event):

1. release: if ``on`` and ``dl <= t``: one release (``rel`` += 1), the phase is ``ovr`` at
   ``dl``;
2. the window: an ACK applies ``update(cw, n_marked, n_unmarked)`` (no change otherwise);
3. the deadline, from the phase the flow has at ``t`` under the old window ``c`` and the
   new window ``c'``: if ``c' >= 1`` the timer is off; else the phase still needed is
   ``need = (dl - t) c - ovr + (P if released)`` if the flow was already in the sub-one regime
   (``on`` and ``c < 1``), else ``need = P`` (a full period from ``t``), and
   ``j = ceil(need / c')``, ``dl := t + j``, ``ovr := j c' - need``.  For an unchanged window
   this is ``dl + ceil((P - ovr) / c)`` after a release, and ``dl`` itself otherwise: the
   reload is from the old deadline, never from when it was serviced (no drift).

``j`` is a restoring division of ``need - 1`` by the 16-bit ``c'`` spread over the pipeline
(``div_steps`` quotient bits per cycle); it saturates at ``2**(W-3)`` cycles (with
``ovr := 0``), and ``need <= 0`` (a second release already due, only when a release is late by
more than a whole interval) gives ``j = 0``, ``ovr := 0`` (the excess phase is dropped).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace

from amaranth.hdl import Cat, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..lib.arith import delayed, named_wire
from ..lib.pipemul import pipelined_product
from ..params import BlockConfig, ConfigError, check_int
from .flow_datapath import DatapathOut, EventKind, FlowDatapath, time_le
from .flow_engine_config import FlowEngineConfig, min_out_fifo_depth
from .ldcp_window import LdcpWindowDatapath
from .ldcp_window_config import (
    CW_WIDTH,
    FRAC_BITS,
    PARAM_WIDTH,
    RTT_WIDTH,
    UPDATE_LATENCY,
    LdcpWindowConfig,
)

__all__ = ["LdcpEngineConfig", "LdcpDatapath", "ldcp_engine", "ldcp_state_layout",
           "ldcp_register_list", "LdcpAckMerge", "ack_layout", "MUL_AT", "DIV_AT"]

#: modify cycle (1 = the cycle the datapath's inputs are valid) at which the product
#: ``|dl - t| c`` enters the pipelined multiplier (its operands registered once)
MUL_AT = 2
#: modify cycle of the window update's result (the one-flow datapath's 12 stages after cycle 1)
WIN_AT = 1 + UPDATE_LATENCY
#: first modify cycle of the division (the new window and ``need - 1`` registered)
DIV_AT = WIN_AT + 1


# -- the configuration checks the three LDCP engine tops share (this one, the sender
#    hw.nic.ldcp_tx_engine and the receiver hw.nic.ldcp_rx_engine); one ConfigError line each

def check_parts(owner, name: str, part_type: type) -> None:
    """The first checks: ``owner.engine`` a :class:`FlowEngineConfig`, ``owner.<name>`` (the
    LDCP part) a ``part_type``."""
    if not isinstance(owner.engine, FlowEngineConfig):
        raise ConfigError(owner, "engine", owner.engine, "a FlowEngineConfig")
    part = getattr(owner, name)
    if not isinstance(part, part_type):
        raise ConfigError(owner, name, part, f"a {part_type.__name__}")


def check_out_fifo(owner) -> None:
    """The output FIFOs hold the datapath's latency + 5 entries (:func:`min_out_fifo_depth`;
    after the checks of the fields ``owner.latency`` depends on)."""
    depth, need = owner.engine.out_fifo_depth, min_out_fifo_depth(owner.latency)
    if depth < need:
        raise ConfigError(owner, "engine.out_fifo_depth", depth,
                          f">= the datapath latency + {need - owner.latency} = {need}")


def check_window_engine(owner, name: str, part_type: type) -> None:
    """Every check of a top with the PAWA window part (:class:`LdcpEngineConfig` and the
    sender's), in this order: :func:`check_parts`; ``div_steps`` 1 ... 8; ``rel_width``
    2 ... 16; the engine's ``time_width`` >= 12; :func:`check_out_fifo`."""
    check_parts(owner, name, part_type)
    check_int(owner, "div_steps", owner.div_steps, 1, 8)
    check_int(owner, "rel_width", owner.rel_width, 2, 16)
    if owner.engine.time_width < 12:
        raise ConfigError(owner, "engine.time_width", owner.engine.time_width, ">= 12")
    check_out_fifo(owner)


def check_deadline(owner, field: str, value, cycles: int, width: int, what: str) -> None:
    """A time kept as a deadline of the engine's timer service: ``cycles`` (``field`` =
    ``value`` in its own unit) in 1 ... 2**width - 1 (``what`` names it in the message)."""
    if not 1 <= cycles < (1 << width):
        raise ConfigError(owner, field, value,
                          f"1 ... 2**(time_width - 2) - 1 = {(1 << width) - 1} cycles ({what} "
                          "is a deadline of the timer service)")


@dataclass(frozen=True)
class LdcpEngineConfig(BlockConfig):
    """The multi-flow LDCP window engine.

    engine: the multi-flow engine (flows, ``time_width`` W, wheel, output FIFOs; the FIFOs must
      hold the datapath's latency + 5);
    window: the one-flow configuration (the registers' reset values: alpha, beta, gamma,
      cw_max, cw_init, RTT; and ``m``, which sizes the ACK payload's counts, ``12 m`` at most);
    div_steps: quotient bits of the release division per clock cycle (1 ... 8): the datapath's
      latency is ``14 + ceil((W - 3) / div_steps)`` cycles (:attr:`latency`);
    rel_width: bits of the per-flow release counter (2 ... 16), streamed with the window.
    """

    engine: FlowEngineConfig = FlowEngineConfig(out_fifo_depth=32)
    window: LdcpWindowConfig = LdcpWindowConfig()
    div_steps: int = 2
    rel_width: int = 8

    def __post_init__(self):
        check_window_engine(self, "window", LdcpWindowConfig)

    @property
    def quot_bits(self) -> int:
        """Bits of the release interval ``j`` (cycles): W - 3, so ``dl = t + j`` stays within
        ``2**(W-3)`` cycles of now."""
        return self.engine.time_width - 3

    @property
    def j_max(self) -> int:
        """The longest release interval, cycles (a longer one saturates)."""
        return 1 << self.quot_bits

    @property
    def latency(self) -> int:
        """Clock cycles of the datapath's modify stage."""
        return DIV_AT + math.ceil(self.quot_bits / self.div_steps)

    @property
    def need_width(self) -> int:
        """Bits (signed) of ``need``: ``(dl - t) c`` (W + 16 bits signed), ``ovr`` and ``P``."""
        return max(self.engine.time_width + FRAC_BITS, RTT_WIDTH + FRAC_BITS + 1) + 2

    def state_bits(self) -> int:
        """Bits of the LDCP per-flow state (the engine adds its own 8 + W)."""
        return CW_WIDTH + self.rel_width + 1 + self.engine.time_width + FRAC_BITS

    def register_map(self, name: str = "ldcp_engine"):
        """The engine's register map (:func:`hw.nic.engine_regs.engine_register_map`): the
        datapath's registers, the engine's counters, the header and the per-flow windows
        (``wr``, cw and the release counter, is two words)."""
        from .engine_regs import engine_register_map
        return engine_register_map(name, LdcpDatapath(self), "LDCE",
                                   f"LDCP window engine, {self.engine.n_flows} flows",
                                   flows=self.engine.n_flows,
                                   timer=self.engine.timer)


def ldcp_state_layout(cfg: LdcpEngineConfig) -> data.StructLayout:
    """Per-flow state: ``wr`` {``cw`` UQ16.16, ``rel`` release counter} (the streamed field),
    ``on`` (the release timer is armed), ``dl`` (its deadline, W bits), ``ovr`` (the phase
    just after the release at ``dl``, UQ0.16 packets, below the window)."""
    return data.StructLayout({
        "wr": CW_WIDTH + cfg.rel_width,     # cw [31:0], rel above (one field: the engine
                                            # compares and streams it as one value)
        "on": 1,
        "dl": cfg.engine.time_width,
        "ovr": FRAC_BITS,
    })


def ldcp_register_list(cfg: LdcpEngineConfig) -> list[tuple[str, int, int]]:
    """``(name, width, reset)`` of every run-time register (the order is the address map)."""
    r = cfg.window.registers()
    return [("alpha", PARAM_WIDTH, r.alpha), ("beta", PARAM_WIDTH, r.beta),
            ("gamma", PARAM_WIDTH, r.gamma), ("cw_max", CW_WIDTH, r.cw_max),
            ("rtt", RTT_WIDTH, r.rtt), ("cw_init", CW_WIDTH, r.cw_init)]


class LdcpDatapath(FlowDatapath):
    """The LDCP window engine's per-flow update (module docstring), ``latency`` =
    ``14 + ceil((W - 3) / div_steps)`` cycles (26 at W = 26 and 2 steps per cycle).

    Interface (the :mod:`hw.nic.flow_datapath` protocol): state :func:`ldcp_state_layout`;
    CN payload ``{n_marked, n_unmarked}`` (``window.event_n_width`` bits each); TX events carry
    nothing for this datapath (they only apply a due release); registers
    :func:`ldcp_register_list`; rate field ``wr`` ({cw, rel}: a record on every window change
    and every release).

    Modify cycles (1 = the inputs' cycle): 1 the window datapath takes ``cw`` and the counts,
    the deadline compare, ``dl - t``; 2 ... 3 ``|dl - t| c`` from registered operands
    (:func:`hw.lib.pipemul.pipelined_product`, two adder levels); 4 its sign and ``- ovr``;
    5 ``+ P`` after a release, ``need - 1``; 13 the new window (the one-flow datapath's output)
    selects ``need - 1`` (or ``P - 1`` on entry) and the divisor; 14 ... L - 1 ``div_steps``
    restoring steps per cycle (the overflow check in 14); L ``j``, ``ovr``, the new deadline
    ``t + j`` and the state word.  Throughput: one update per clock (the engine keeps two
    updates of one flow at least L cycles apart); :class:`LdcpAckMerge` merges a hot flow's
    ACKs meanwhile.
    """

    name = "ldcp"

    def __init__(self, config: LdcpEngineConfig | None = None):
        cfg = LdcpEngineConfig() if config is None else config
        if not isinstance(cfg, LdcpEngineConfig):
            raise TypeError(f"LdcpDatapath needs a LdcpEngineConfig, not {cfg!r}")
        self.config = cfg
        self.time_width = cfg.engine.time_width
        self.latency = cfg.latency
        self.state_layout = ldcp_state_layout(cfg)
        NW = cfg.window.event_n_width
        self.cn_layout = data.StructLayout({"n_marked": NW, "n_unmarked": NW})
        self.tx_bytes_width = 1
        self.rate_field = "wr"
        self.regs = ldcp_register_list(cfg)

    def init_state(self, regs) -> dict:
        # the release timer of a flow started below one packet arms at its first event
        return {"wr": regs.cw_init}           # cw := cw_init, rel := 0

    def build(self, m: Module, *, state, kind, tx_bytes, cn, t, regs, pre,
              valid=None) -> DatapathOut:
        W = self.time_width
        s = state
        is_cn = kind == EventKind.CN
        w = self.window_part(m, wr=s.wr, on=s.on, dl=s.dl, ovr=s.ovr,
                             n_marked=Mux(is_cn, cn.n_marked, 0),
                             n_unmarked=Mux(is_cn, cn.n_unmarked, 0), t=t, regs=regs,
                             valid=valid)
        nxt = Signal(self.state_layout, name="ld_next")
        m.d.comb += [nxt.wr.eq(w.wr), nxt.on.eq(w.sub1), nxt.dl.eq(w.dl), nxt.ovr.eq(w.ovr)]
        late = delayed(m, (t - s.dl)[:W], self.latency - 1, "ld_late")
        return DatapathOut(next_state=nxt, wake_valid=nxt.on, wake=nxt.dl, expired=w.due,
                           late=late)

    def window_part(self, m: Module, *, wr, on, dl, ovr, n_marked, n_unmarked, t, regs,
                    valid=None, off: int = 0, load=None, load_value=None, enable=None):
        """The window update and the release deadline (the module docstring's rules 1 - 3),
        shared by this datapath and the transport sender's
        (:class:`hw.nic.ldcp_tx_engine.LdcpTxDatapath`).

        Inputs valid in modify cycle ``1 + off``: the flow's ``wr`` ({cw, rel}; ``cw`` the
        window the update starts from), ``on``, ``dl``, ``ovr``, the counts, ``t``, ``valid``;
        ``load`` / ``load_value`` (optional): the new window is ``load_value`` instead of the
        update's result (a window load, already clamped); ``enable`` (optional, valid in cycle
        ``L``): the release timer may stay or become armed.  Returns, valid in cycle
        ``L = self.latency``: ``wr``, ``sub1`` (armed next), ``dl``, ``ovr``, ``due`` (a
        release was applied), ``new`` (the new window), ``t``; and ``win_at`` (the cycle at
        which ``new_w``, the new window, is first valid)."""
        cfg = self.config
        W, L, QB = self.time_width, self.latency, cfg.quot_bits
        NB = cfg.need_width
        A = 1 + off                                   # the inputs' cycle
        MUL, WIN, DIV = MUL_AT + off, WIN_AT + off, DIV_AT + off

        def wire(name, expr, width=None):
            return named_wire(m, "ld_" + name, expr, width)

        def at(x, frm, to, name):
            """``x`` (valid in modify cycle ``frm``) carried to cycle ``to``."""
            return delayed(m, x, to - frm, "ld_" + name)

        # ---- cycle A: the release due, the window datapath takes the event -----------------
        cw0 = wr[:CW_WIDTH]
        due = wire("due", on & time_le(dl, t, W))
        old_sub1 = wire("old_sub1", on & (cw0[FRAC_BITS:] == 0))
        upd = LdcpWindowDatapath(
            cfg.window, Signal() if valid is None else valid,
            SimpleNamespace(cw=cw0, n_marked=n_marked, n_unmarked=n_unmarked),
            regs)
        upd.build(m)
        d = wire("d", (dl - t)[:W], W)

        # ---- cycles A + 1 ... A + 3: (dl - t) c - ovr (+ P), with the old window -------------
        d2 = at(d, A, MUL, "d")
        c2 = at(cw0[:FRAC_BITS], A, MUL, "c_old")
        neg2 = d2[W - 1]
        dabs = wire("dabs", Mux(neg2, -d2, d2)[:W], W)
        prod, plat = pipelined_product(m, dabs, c2, name="ld_mul")
        P = regs.rtt << FRAC_BITS                     # constant while updates are in flight
        k = MUL + plat                                # the product's cycle
        neg_k = at(neg2, MUL, k, "neg")
        sprod = Mux(neg_k, -prod, prod)
        need_c = wire("need_c", sprod.as_signed() - at(ovr, A, k, "ovr"),
                      signed(NB))
        need_c = at(need_c, k, k + 1, "need_c")
        need = wire("need_cont", Mux(at(due, A, k + 1, "due_k"), need_c + P, need_c),
                    signed(NB))
        n1_cont = at(wire("n1_cont", need - 1, signed(NB)), k + 1, k + 2, "n1_cont")
        assert k + 2 <= WIN

        # ---- cycle WIN: the new window; which need -------------------------------------------
        new = upd.o.cw
        if load is not None:
            new = wire("new_w", Mux(at(load, A, WIN, "load"), at(load_value, A, WIN, "load_v"),
                                    new), CW_WIDTH)
        cont = at(old_sub1, A, WIN, "cont")
        n1 = wire("n1", Mux(cont, at(n1_cont, k + 2, WIN, "n1c"), P - 1), signed(NB))
        sub1 = wire("new_sub1", new[FRAC_BITS:] == 0)
        dv_n1 = at(n1, WIN, DIV, "n1")
        dv_c = at(new[:FRAC_BITS], WIN, DIV, "c")
        dv_new = at(new, WIN, DIV, "new")
        dv_sub1 = at(sub1, WIN, DIV, "sub1")

        # ---- cycles DIV ... L - 1: the restoring division of need - 1 by c' ------------------
        # a negative need - 1 (need <= 0) gives j = 0; a quotient of QB bits or more saturates
        nonpos = dv_n1[NB - 1]
        num = dv_n1.as_unsigned()
        ovf = wire("ovf", ~nonpos & ((num >> QB) >= dv_c))
        rem = (num >> QB)[:FRAC_BITS + 1]
        quot = []
        low = num[:QB]                                  # dividend bits still to bring down
        flags = SimpleNamespace(nonpos=nonpos, ovf=ovf)
        cyc = DIV
        i = QB - 1
        steps = 0
        while i >= 0:
            r2 = (rem << 1) | low[i]
            ge = r2 >= dv_c
            rem = Mux(ge, r2 - dv_c, r2)[:FRAC_BITS + 1]
            quot.append(ge)
            i -= 1
            steps += 1
            if steps == cfg.div_steps and i >= 0:
                # cut: register the remainder, the quotient so far and everything carried
                steps = 0
                rem = at(wire(f"rem{cyc}", rem, FRAC_BITS + 1), cyc, cyc + 1, f"rem{cyc}")
                quot = [at(q, cyc, cyc + 1, f"q{cyc}_{j}") for j, q in enumerate(quot)]
                low = at(low[:i + 1], cyc, cyc + 1, f"low{cyc}")    # bits still to come
                dv_c = at(dv_c, cyc, cyc + 1, f"c{cyc}")
                flags = SimpleNamespace(**{n: at(v, cyc, cyc + 1, f"{n}{cyc}")
                                           for n, v in vars(flags).items()})
                cyc += 1
        # the last steps' cycle registers their result for cycle L
        q_bits = wire("q", Cat(*reversed(quot)), QB)       # quot[0] is the top bit
        q_l = at(q_bits, cyc, cyc + 1, "q")
        rem_l = at(wire("rem", rem, FRAC_BITS + 1), cyc, cyc + 1, "rem")
        c_l = at(dv_c, cyc, cyc + 1, "c_l")
        nonpos_l = at(flags.nonpos, cyc, cyc + 1, "nonpos")
        ovf_l = at(flags.ovf, cyc, cyc + 1, "ovf")
        assert cyc + 1 == L, (cyc, L)

        # ---- cycle L: the new deadline and the window word ----------------------------------
        rel = at(wr[CW_WIDTH:], A, L, "rel")
        dl_l = at(dl, A, L, "dl")
        t_l = at(t, A, L, "t")
        due_l = at(due, A, L, "due")
        new_l = at(dv_new, DIV, L, "new")
        sub1_l = at(dv_sub1, DIV, L, "sub1")
        if enable is not None:
            sub1_l = wire("armed", sub1_l & enable)
        j = wire("j", Mux(nonpos_l, 0, Mux(ovf_l, cfg.j_max, q_l + 1)), QB + 1)
        ovr_new = wire("ovr", Mux(nonpos_l | ovf_l, 0, c_l - 1 - rem_l), FRAC_BITS)
        rmax = (1 << cfg.rel_width) - 1
        wr_next = wire("wr_next", Cat(new_l, Mux(due_l, Mux(rel == rmax, 1, rel + 1), rel)),
                       CW_WIDTH + cfg.rel_width)
        return SimpleNamespace(
            wr=wr_next, sub1=sub1_l, dl=wire("dl_next", Mux(sub1_l, (t_l + j)[:W], dl_l), W),
            ovr=wire("ovr_next", Mux(sub1_l, ovr_new, 0), FRAC_BITS), due=due_l, new=new_l,
            t=t_l, new_w=new, win_at=WIN)


def ldcp_engine(config: LdcpEngineConfig | None = None):
    """The top: :class:`~hw.nic.flow_engine.FlowEngine` around an :class:`LdcpDatapath`, with
    the register map's header and per-flow windows (:class:`hw.nic.engine_regs.EngineRegs`)."""
    from .engine_regs import EngineRegs
    from .flow_engine import FlowEngine
    cfg = LdcpEngineConfig() if config is None else config
    return EngineRegs(FlowEngine(cfg.engine, LdcpDatapath(cfg)), cfg.register_map())


def ack_layout(cfg: LdcpEngineConfig) -> data.StructLayout:
    """One ACK of one flow: ECN-Echo and the packets it confirms (``n``, up to ``m``)."""
    return data.StructLayout({"flow": cfg.engine.flow_width, "ece": 1,
                              "n": cfg.window.n_width})


class LdcpAckMerge(wiring.Component):
    """ACK coalescing in front of the engine: one merge register between an ACK stream and
    the engine's ``cn`` input.

    The engine holds a flow's next event while its update is in the modify stage (L cycles),
    and pops go first; the one-flow wrapper instead merges the ACKs that arrive meanwhile.
    This register does the same for the ACK at the head of the stream: an ACK of the flow
    whose event waits in the register (not taken this cycle) merges into it with the one-flow
    rule (unmarked: ``n_unmarked += n``; marked: ``n_marked += n_unmarked + n``,
    ``n_unmarked := 0``) as long as the counts fit their ``event_n_width`` bits; an ACK of
    another flow, or one that would not fit, waits (back-pressure).  ``n`` is saturated at
    ``m`` (the one-flow rule 7), ``n = 0`` is taken and dropped.

    Ports: ``ack`` (in stream, :func:`ack_layout`); ``cn`` (out stream, the engine's ``cn``
    layout ``{flow, cn: {n_marked, n_unmarked}}``).  Latency 1 (an ACK taken at ``c`` is
    offered from ``c + 1``); one ACK per clock while the engine takes them.  Model:
    :class:`sim.models.ldcp_engine.LdcpAckMergeModel`.
    """

    def __init__(self, config: LdcpEngineConfig):
        from .flow_engine import engine_layouts
        self.config = config
        self._cn_lay = engine_layouts(config.engine, LdcpDatapath(config))["cn"]
        super().__init__({
            "ack": In(stream.Signature(ack_layout(config))),
            "cn": Out(stream.Signature(self._cn_lay)),
        })

    def elaborate(self, platform):
        cfg = self.config
        m = Module()
        NW = cfg.window.event_n_width
        top = (1 << NW) - 1
        mm = cfg.window.m
        h_valid = Signal()
        h = Signal(self._cn_lay)
        a = self.ack.payload
        n = Signal(NW, name="am_n")
        m.d.comb += n.eq(Mux(a.n > mm, mm, a.n))
        leave = self.cn.valid & self.cn.ready
        m.d.comb += [self.cn.valid.eq(h_valid), self.cn.payload.eq(h)]
        nm, nu = h.cn.n_marked, h.cn.n_unmarked
        sum_m = nm + nu + n                      # a marked ACK absorbs the pending unmarked
        sum_u = nu + n
        fits = Mux(a.ece, sum_m <= top, sum_u <= top)
        merge = h_valid & ~leave & (a.flow == h.flow) & fits
        load = ~h_valid | leave
        m.d.comb += self.ack.ready.eq(merge | load | (n == 0))
        with m.If(leave):
            m.d.sync += h_valid.eq(0)
        with m.If(self.ack.valid & (n != 0)):
            with m.If(merge):
                with m.If(a.ece):
                    m.d.sync += [nm.eq(sum_m), nu.eq(0)]
                with m.Else():
                    m.d.sync += nu.eq(sum_u)
            with m.Elif(load):
                m.d.sync += [h_valid.eq(1), h.flow.eq(a.flow),
                             h.cn.n_marked.eq(Mux(a.ece, n, 0)),
                             h.cn.n_unmarked.eq(Mux(a.ece, 0, n))]
        return m
