"""The multi-flow engine tops on the register layer (:mod:`hw.lib.csr`), with per-flow windows.

:func:`engine_register_map` declares the register file of a :class:`hw.nic.flow_engine.FlowEngine`
around a datapath as a :class:`hw.lib.csr.RegisterMap` (so that it gets SystemRDL, the PeakRDL C
header, HTML, IP-XACT and the docs table like every other block): the datapath's run-time
registers at words ``0 ... len(dp.regs) - 1`` (read-write; a write waits until the pipeline is
empty, the engine's rule), the engine's read-only counters, lateness histogram and wheel
statistics from ``COUNTER_BASE`` (0x80), the identification header above them (word 0x100),
and, with ``flows``, a window per flow (:func:`flow_window_registers`): flow ``f``'s register
``r`` at word ``flow_base + (f << k | r)``, one word per field of the datapath's state (in the
order of its ``state_layout``; a field wider than 32 bits takes ``ceil(width / 32)`` words
``NAME_W0``, ``NAME_W1``, ..., low word first) and a ``CTRL`` word (START / STOP / RESET, and
the flow's ``en`` bit).  The addresses below 0x100 are the engine's own, unchanged.

Wide fields are accessed atomically (:mod:`hw.lib.csr`, "Wide fields"): reading ``W0`` is the
engine READ and snapshots the whole field, reading a higher word answers at once from that
snapshot; writing a higher word stages it (no engine operation), writing ``W0`` is the one
``ctl`` WRITE of the whole field (``W0``'s data and the staged words).  One snapshot and one
set of staged words per field, shared by the flows.

:class:`EngineRegs` wraps the engine and turns window accesses into the engine's control
operations: a window write is a ``CtlOp.WRITE`` (a ``CTRL`` write START / STOP / RESET), a
window read a ``CtlOp.READ`` whose answer, a pipeline later on ``rd``, the wrapper takes and
selects the field from; its register port has the read handshake of :mod:`hw.lib.csr_port`
(``csr_rstb`` / ``csr_rack``) for that wait, which :class:`hw.lib.axi_lite.AxiLiteRegs` turns
into a held ``RVALID``.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.fifo import SyncFIFO

from ..lib.csr import Field, Register, RegisterMap, wide_registers
from ..lib.csr_port import csr_ports
from ..params import ConfigError
from .flow_datapath import CtlOp
from .flow_engine import pipe_depth
from .flow_engine_config import COUNTER_BASE, CSR_ADDR_WIDTH

__all__ = ["engine_register_map", "flow_window_registers", "window_words", "EngineRegs",
           "COUNTER_DESC",
           "CTRL_START", "CTRL_STOP", "CTRL_RESET", "CTRL_EN_BIT"]

#: descriptions of the engine's read-only registers (docs/flow-engine.md, "Counters")
COUNTER_DESC = {
    "ev_tx": "TX events taken", "ev_cn": "CN events taken", "ev_timer": "timer pops taken",
    "ev_ctl": "control operations taken", "expiries": "updates in which a timer was due",
    "late_sum": "sum of the lateness of every expiry, cycles",
    "late_max": "largest lateness of an expiry, cycles",
    "disabled": "events dropped for a stopped flow", "stale_pops": "stale wheel entries popped",
    "wheel_ins": "wheel inserts", "occupancy": "wheel entries now",
    "max_occupancy": "largest wheel occupancy", "max_displacement": "largest wheel displacement",
    "overflow": "the wheel overflowed (sticky)", "overflow_count": "wheel overflows",
}
#: the same statistics addresses with the calendar timer service (timer="calendar")
CALENDAR_STATS_DESC = {
    "occupancy": "calendar entries now", "max_occupancy": "largest calendar occupancy",
    "max_lateness": "largest calendar lateness (pop after its deadline), cycles",
    "overflow": "reads 0 (the calendar cannot overflow)",
    "overflow_count": "reads 0 (the calendar cannot overflow)",
}

#: the per-flow CTRL word: command bits (write 1; with several set the lowest one is applied)
#: and the flow's enable bit (read)
CTRL_START, CTRL_STOP, CTRL_RESET = 1 << 0, 1 << 1, 1 << 2
CTRL_EN_BIT = 8
_CTRL_OPS = ((0, CtlOp.START), (1, CtlOp.STOP), (2, CtlOp.RESET))


def window_words(dp) -> list[tuple[int, str, int, int]]:
    """A flow window's state words in address order: ``(field index, field name, word,
    words)`` (``words`` 1 for a field of at most 32 bits, else its 32-bit words, low first)."""
    out = []
    for i, (name, f) in enumerate(data.Layout.cast(dp.state_layout)):
        words = -(-f.width // 32)
        out += [(i, name, j, words) for j in range(words)]
    return out


def flow_window_registers(dp, field_desc: dict[str, str] | None = None) -> tuple[Register, ...]:
    """One flow's window: a read-write word per state field of datapath ``dp`` (in the order
    of its ``state_layout``; a field wider than 32 bits: its words ``NAME_W0``..., low word
    first, with the atomic rules of :mod:`hw.lib.csr`), then ``CTRL``.  The fields named in
    the datapath's optional ``window_readonly`` are read-only words (a write is taken and
    ignored: no operation), for a field whose WRITE would be unsafe (the pacer's grant count,
    whose every change is streamed on ``rate`` as a grant)."""
    field_desc = field_desc or {}
    readonly = set(getattr(dp, "window_readonly", ()))
    regs = []
    for name, f in data.Layout.cast(dp.state_layout):
        if name.upper() == "CTRL":
            raise ConfigError(dp, "state field", name, "a name other than ctrl (the window's "
                              "control word)")
        ro = name in readonly
        regs += wide_registers(name, f.width, access="ro" if ro else "rw", desc=field_desc.get(
            name, f"state field {name}" + (" (a write is a ctl WRITE)" if f.width <= 32
                                           and not ro else "")))
    regs.append(Register("CTRL", (
        Field("start", 1, "wo", desc="1: START (state := init, en := 1)"),
        Field("stop", 1, "wo", desc="1: STOP (en := 0, state kept)"),
        Field("reset", 1, "wo", desc="1: RESET (state := init, en kept)"),
        Field("en", 1, "ro", offset=CTRL_EN_BIT, desc="the flow is enabled"),
    ), "per-flow control: write one command bit (several: the lowest); read en"))
    return tuple(regs)


def engine_register_map(name: str, dp, block_type: str, desc: str = "",
                        reg_desc: dict[str, str] | None = None, flows: int = 0,
                        field_desc: dict[str, str] | None = None,
                        timer: str = "wheel") -> RegisterMap:
    """The register map of an engine around datapath ``dp`` (its ``regs``: ``(name, width,
    reset)``); ``reg_desc``: descriptions by register name (lower case); ``flows``: the
    engine's flow count, for the per-flow windows (0: none); ``field_desc``: the window
    words' descriptions by state field name; ``timer``: the engine's timer service (the
    statistics after the histogram keep their addresses; their names and descriptions follow
    the service)."""
    from .flow_engine import CALENDAR_STATS, COUNTERS, LATE_BUCKETS, WHEEL_STATS
    if timer == "calendar":
        stats = [n or w for n, w in zip(CALENDAR_STATS, WHEEL_STATS, strict=True)]
        stat_desc = CALENDAR_STATS_DESC
    else:
        stats, stat_desc = list(WHEEL_STATS), COUNTER_DESC
    reg_desc = reg_desc or {}
    regs = [Register.single(n.upper(), w, reset, desc=reg_desc.get(n, ""))
            for n, w, reset in dp.regs]
    names = list(COUNTERS) + [f"late_h{i}" for i in range(len(LATE_BUCKETS))] + \
        stats
    for i, n in enumerate(names):
        if n.startswith("late_h"):
            lo, hi = LATE_BUCKETS[int(n[6:])]
            span = f"{lo} or more" if hi is None else f"{lo}" if hi == lo else f"{lo}..{hi}"
            text = f"expiries {span} cycles late"
        elif n in stats:
            text = stat_desc[n]
        else:
            text = COUNTER_DESC[n]
        if n not in stats and n != "late_max":
            text += " (saturating)"
        regs.append(Register(n.upper(), (Field(n, 32, "ro", desc=text),), text,
                             COUNTER_BASE + i))
    window = flow_window_registers(dp, field_desc) if flows else ()
    regmap = RegisterMap(name, tuple(regs), block_type, version=(1, 1 if flows else 0),
                         desc=desc, flows=flows, flow_registers=window)
    assert regmap.header_offset == 1 << CSR_ADDR_WIDTH, "the header sits above the engine's map"
    return regmap


class EngineRegs(wiring.Component):
    """A :class:`FlowEngine` with the register map of :func:`engine_register_map`: the
    identification header and the per-flow windows.

    Parameters: ``engine`` (the :class:`FlowEngine`), ``regmap`` (its map; with windows its
    ``flows`` must be the engine's ``n_flows``).

    Ports: the engine's (``tx``, ``cn``, ``ctl``, ``rate``, ``rd``, ``ready``, ``now``) and the
    register port of the map, ``csr_w`` / ``csr_raddr`` / ``csr_rdata`` (``regmap.addr_width``
    address bits), with the read handshake ``csr_rstb`` / ``csr_rack`` (:mod:`hw.lib.csr_port`)
    when the map has windows.

    Global words (below ``flow_base``): words below 0x100 go to the engine (a write waits for
    its ``csr_w.ready``: the pipeline empty); the header reads its constants; both read one
    cycle after the address (``csr_rack`` the cycle after ``csr_rstb``), unmapped words read 0
    and take writes at once, ignoring them.

    Window words: a write of field ``i`` of flow ``f`` is the control operation ``{f, WRITE,
    i, data}``, a ``CTRL`` write with a command bit ``{f, START | STOP | RESET}`` (no bit: no
    operation); ``csr_w.ready`` rises in the cycle the engine takes the operation, so a write
    is in the engine's order before any later access.  A read (``csr_rstb``) issues ``{f,
    READ}`` and raises ``csr_rack`` with the field (``CTRL``: ``en`` at bit 8) the cycle after
    it takes the engine's ``rd`` answer: the state after every event taken before the READ.
    Without ``csr_rstb`` a window word reads 0.  A read-only word (the datapath's
    ``window_readonly`` fields) reads like any other and takes a write at once, ignoring it.

    Wide fields (``NAME_W0``, ``NAME_W1``, ...; :mod:`hw.lib.csr`, "Wide fields"): a write of
    a high word is taken at once (``csr_w.ready``) into the field's staged word, no
    operation; a write of ``W0`` is the WRITE of the whole field (``W0``'s data, the staged
    words above).  A read of ``W0`` is a READ as above and keeps the field's high words as its
    snapshot; a read of a high word answers (``csr_rack``) the cycle after ``csr_rstb`` with
    the snapshot's word, no operation.  The wrapper's operations go to the engine's
    ``ctl`` before the outer ``ctl`` stream's (which waits meanwhile), one at a time.

    ``rd``: every READ's origin (window or the outer ``ctl``) is queued in issue order (the
    engine answers READs in that order); a window answer is taken by the wrapper and never
    appears on the outer ``rd``, an outer answer goes out unchanged.  A window read whose
    answer is queued behind outer answers waits until the outer ``rd`` consumer takes them.

    Latency: window write, ``csr_w.ready`` one cycle after ``csr_w.valid`` at the earliest
    (the operation is registered before the engine's arbiter); window read, ``csr_rack``
    ``pipe_depth(latency) + 4`` cycles after ``csr_rstb`` when nothing is queued ahead (the
    READ registered, issued, the pipeline, the ``rd`` FIFO, the answer registered; 20 for
    the pipelined DCQCN datapath, whose ``pipe_depth`` is 16).
    Throughput: the engine's, one window access at a time.

    Attributes ``engine``, ``config``, ``dp``, ``layouts``: the wrapped engine's.
    """

    def __init__(self, engine, regmap: RegisterMap):
        self.engine, self.regmap = engine, regmap
        engine._MustUse__silence = True     # (used by this wrapper's elaborate; it warns itself)
        self.config, self.dp, self.layouts = engine.config, engine.dp, engine.layouts
        if regmap.flows and regmap.flows != engine.config.n_flows:
            raise ConfigError(regmap, "flows", regmap.flows,
                              f"the engine's n_flows ({engine.config.n_flows})")
        members = {n: m for n, m in engine.signature.members.items()
                   if n not in ("csr_w", "csr_raddr", "csr_rdata")}
        super().__init__({**members, **csr_ports(regmap, wait=bool(regmap.flows))})

    def elaborate(self, platform):
        m = Module()
        m.submodules.engine = engine = self.engine
        regmap = self.regmap
        windows = bool(regmap.flows)
        for path, member, outer in self.signature.flatten(self):
            if path[0].startswith("csr_") or (windows and path[0] in ("ctl", "rd")):
                continue
            inner = engine
            for part in path:
                inner = getattr(inner, part) if isinstance(part, str) else inner[part]
            m.d.comb += inner.eq(outer) if member.flow == wiring.In else outer.eq(inner)

        low = CSR_ADDR_WIDTH                    # the engine's own address bits
        AW = regmap.addr_width
        w = self.csr_w
        waddr, raddr = w.payload.addr, self.csr_raddr
        # the engine's words: every address bit above its own 8 is 0
        w_engine = waddr[low:] == 0
        m.d.comb += [
            engine.csr_w.valid.eq(w.valid & w_engine),
            engine.csr_w.payload.addr.eq(waddr[:low]),
            engine.csr_w.payload.data.eq(w.payload.data),
            engine.csr_raddr.eq(raddr[:low]),
        ]
        upper_q = Signal(name="csr_upper_q")
        header_q = Signal(regmap.data_width, name="csr_header_q")
        m.d.sync += upper_q.eq(raddr[low:] != 0)
        with m.Switch(raddr):
            for r in regmap.header:
                with m.Case(r.addr):
                    m.d.sync += header_q.eq(r.fields[0].reset)
            with m.Default():
                m.d.sync += header_q.eq(0)
        global_rdata = Mux(upper_q, header_q, engine.csr_rdata)
        if not windows:
            m.d.comb += [w.ready.eq(~w_engine | engine.csr_w.ready),
                         self.csr_rdata.eq(global_rdata)]
            return m

        # ---- per-flow windows ---------------------------------------------------------------
        cfg, lay = self.config, self.layouts
        words = window_words(self.dp)           # (field index, name, word, words) by address
        n_words = len(words)                    # CTRL is word n_words of a window
        widths = {name: f.width for name, f in data.Layout.cast(self.dp.state_layout)}
        # wide fields: the staged high words (written before W0) and the snapshot of the high
        # words (taken when W0 is read), one set per field, shared by the flows
        staged, snap = {}, {}
        for _, name, j, _nw in words:
            if j:
                width = min(32, widths[name] - 32 * j)
                staged[name, j] = Signal(width, name=f"win_stage_{name}_w{j}")
                snap[name, j] = Signal(width, name=f"win_snap_{name}_w{j}")
        k = regmap.flow_shift
        top = AW - 1                            # 1: a window word
        FW = cfg.flow_width
        ctl_lay = lay["ctl"]

        def flow_of(addr):
            return addr[k:top] if cfg.n_flows > 1 else Const(0, 1)

        def flow_ok(addr):
            """The window's flow number exists (the windows may span more flows than there
            are, when the header's half is the larger)."""
            return addr[k:top] < cfg.n_flows

        # the wrapper's control operation, registered in front of the engine's arbiter
        req_valid = Signal(name="win_req_valid")
        req = Signal(ctl_lay, name="win_req")
        req_write = Signal(name="win_req_write")   # the operation is csr_w's (ack on take)
        # the origin of every READ between issue and the rd handshake (1: the window's): the
        # engine holds at most out_fifo_depth answers and pipe_depth operations, so this depth
        # (and the head register) never fills and nothing gates the ctl path (which stays one
        # multiplexer deep).  The head is a register (``origin_head``, loaded from the FIFO
        # when it is empty or taken): the head decides the engine's rd.ready, which reaches the
        # engine's rd FIFO and credits and comes back as this FIFO's read enable; from the LUT
        # RAM's asynchronous read it was the DCQCN engine top's critical path (12.7 ns, two
        # 2.5-2.9 ns routes).  An entry is written at issue and its answer leaves the engine no
        # sooner than pipe_depth + 1 cycles later, so the head register's two cycles from the
        # write are never seen.  (Amaranth's SyncFIFOBuffered is this structure, but its
        # unused internal ``level`` fails the exports' Verilator -Wall lint.)
        depth = cfg.out_fifo_depth + pipe_depth(self.dp.latency) + 2
        origin = SyncFIFO(width=1, depth=depth)
        m.submodules.rd_origin = origin
        head_valid = Signal(name="origin_head_valid")
        head_bit = Signal(name="origin_head")
        ext = self.ctl
        req_go, ext_go = req_valid, ext.valid
        # the engine's ctl, rd and register port under names of their own: a testbench
        # observes what the engine is offered (cocotb_tests/engine_axil_tb.py)
        eng_ctl = Signal(ctl_lay, name="eng_ctl")
        eng = {n: Signal(name=f"eng_{n}") for n in ("ctl_valid", "ctl_ready", "rd_valid",
                                                     "rd_ready", "csr_w_valid", "csr_w_ready")}
        eng_csr_w = Signal(len(engine.csr_w.payload.as_value()), name="eng_csr_w")
        eng_raddr = Signal(low, name="eng_csr_raddr")
        eng_rdata = Signal(regmap.data_width, name="eng_csr_rdata")
        m.d.comb += [
            eng_ctl.eq(Mux(req_valid, req, ext.payload)),
            eng["ctl_valid"].eq(Mux(req_valid, req_go, ext_go)),
            engine.ctl.valid.eq(eng["ctl_valid"]), engine.ctl.payload.eq(eng_ctl),
            eng["ctl_ready"].eq(engine.ctl.ready),
            ext.ready.eq(~req_valid & ext_go & engine.ctl.ready),
            eng["rd_valid"].eq(engine.rd.valid), eng["rd_ready"].eq(engine.rd.ready),
            eng["csr_w_valid"].eq(engine.csr_w.valid), eng["csr_w_ready"].eq(engine.csr_w.ready),
            eng_csr_w.eq(engine.csr_w.payload), eng_raddr.eq(engine.csr_raddr),
            eng_rdata.eq(engine.csr_rdata),
        ]
        take_req = Signal(name="win_take")
        m.d.comb += take_req.eq(req_go & engine.ctl.ready)
        took_read = engine.ctl.valid & engine.ctl.ready & (engine.ctl.payload.op == CtlOp.READ)
        m.d.comb += [origin.w_en.eq(took_read), origin.w_data.eq(req_valid)]

        # rd: the window's answers are taken here, the others go out
        head_win = head_valid & head_bit
        head_taken = engine.rd.valid & engine.rd.ready     # the answer of the head's READ
        load = Signal(name="origin_load")
        m.d.comb += [load.eq(origin.r_rdy & (~head_valid | head_taken)), origin.r_en.eq(load)]
        with m.If(load):
            m.d.sync += [head_valid.eq(1), head_bit.eq(origin.r_data[0])]
        with m.Elif(head_taken):
            m.d.sync += head_valid.eq(0)
        rd_take = Signal(name="win_rd_take")
        m.d.comb += [
            self.rd.valid.eq(engine.rd.valid & ~head_win),
            self.rd.payload.eq(engine.rd.payload),
            engine.rd.ready.eq(Mux(head_win, 1, self.rd.ready)),
            rd_take.eq(engine.rd.valid & head_win),
        ]

        # writes: a window word with an operation waits in req until the engine takes it
        w_win = waddr[top]
        w_index = waddr[:k]
        cmd = w.payload.data[:3]
        w_op = Signal(CtlOp, name="win_w_op")
        with m.If(w_index == n_words):
            m.d.comb += w_op.eq(Mux(cmd[0], CtlOp.START, Mux(cmd[1], CtlOp.STOP,
                                                                CtlOp.RESET)))
        with m.Else():
            m.d.comb += w_op.eq(CtlOp.WRITE)
        # the word's ctl field number and value; a wide field's high word is only staged
        w_field = Signal.like(req.field, name="win_w_field")
        w_value = Signal.like(req.value, name="win_w_value")
        w_high = Signal(name="win_w_high")
        w_ro = Signal(name="win_w_ro")              # a read-only word: no operation
        readonly = set(getattr(self.dp, "window_readonly", ()))
        # (the word decodes below are one If per word, not a Switch: a Switch over the index
        # without every value as a case lints as an incomplete case)
        for a, (i, name, j, nw) in enumerate(words):
            with m.If(w_index == a):
                m.d.comb += w_field.eq(i)
                if name in readonly:
                    m.d.comb += w_ro.eq(1)
                elif j:
                    m.d.comb += w_high.eq(1)
                else:       # W0 commits the whole field: its data and the staged words
                    m.d.comb += w_value.eq(Cat(w.payload.data, *(
                        staged[name, x] for x in range(1, nw))))
        w_has_op = w_win & flow_ok(waddr) & (((w_index < n_words) & ~w_high & ~w_ro)
                                             | ((w_index == n_words) & (cmd != 0)))
        with m.If(w.valid & w_win & flow_ok(waddr) & w_high):     # (ready at once)
            for a, (_i, name, j, _nw) in enumerate(words):
                if j:
                    with m.If(w_index == a):
                        m.d.sync += staged[name, j].eq(w.payload.data)
        w_loaded = Signal(name="win_w_loaded")      # csr_w's operation is in req
        m.d.comb += w.ready.eq(Mux(w_engine, engine.csr_w.ready,
                                   Mux(w_has_op, take_req & req_write, 1)))

        # reads: a window word issues a READ, then waits for its answer on rd
        # (a wide field's high word answers at once from the snapshot: no READ)
        r_high = Signal(name="win_r_high")
        r_high_data = Signal(32, name="win_r_high_data")
        for a, (_i, name, j, _nw) in enumerate(words):
            if j:
                with m.If(raddr[:k] == a):
                    m.d.comb += [r_high.eq(1), r_high_data.eq(snap[name, j])]
        # (every index is a word when the window is full: no compare, it would be constant)
        in_window = (raddr[:k] <= n_words) if n_words < 2 ** k - 1 else Const(1)
        r_win = raddr[top] & flow_ok(raddr) & in_window & ~r_high
        h_ack = Signal(name="win_h_ack")            # a high word's answer, from the snapshot
        h_data = Signal(32, name="win_h_data")
        m.d.sync += [h_ack.eq(self.csr_rstb & raddr[top] & flow_ok(raddr) & r_high),
                     h_data.eq(r_high_data)]
        r_todo = Signal(name="win_r_todo")          # the READ is still to be loaded into req
        r_flow = Signal(FW, name="win_r_flow")
        r_index = Signal(k, name="win_r_index")
        r_word = Signal(lay["word"], name="win_r_word")
        r_done = Signal(name="win_r_done")          # r_word holds the answer: rack
        g_ack = Signal(name="csr_g_ack")            # a global (or unmapped) word's rack
        # (g_ack also acknowledges a high word: h_ack then selects its data)
        m.d.sync += [g_ack.eq(self.csr_rstb & ~r_win), r_done.eq(rd_take)]
        with m.If(self.csr_rstb & r_win):
            m.d.sync += [r_todo.eq(1), r_flow.eq(flow_of(raddr)),
                         r_index.eq(raddr[:k])]
        with m.If(rd_take):
            m.d.sync += r_word.eq(engine.rd.payload.word)
            # reading W0 of a wide field snapshots its high words
            for a, (_i, name, j, nw) in enumerate(words):
                if j == 0 and nw > 1:
                    with m.If(r_index == a):
                        value = engine.rd.payload.word.algo[name]
                        m.d.sync += [snap[name, x].eq(value[32 * x:32 * x + 32])
                                     for x in range(1, nw)]

        with m.If(take_req):
            m.d.sync += req_valid.eq(0)
            with m.If(req_write):
                m.d.sync += w_loaded.eq(0)
        with m.If(~req_valid):
            with m.If(r_todo):
                m.d.sync += [req_valid.eq(1), req_write.eq(0), req.flow.eq(r_flow),
                             req.op.eq(CtlOp.READ), req.field.eq(0), req.value.eq(0),
                             r_todo.eq(0)]
            with m.Elif(w.valid & w_has_op & ~w_loaded):
                m.d.sync += [req_valid.eq(1), req_write.eq(1), w_loaded.eq(1),
                             req.flow.eq(flow_of(waddr)), req.op.eq(w_op),
                             req.field.eq(w_field), req.value.eq(w_value)]

        win_data = Signal(regmap.data_width, name="win_rdata")
        with m.Switch(r_index):
            for a, (_i, name, j, _nw) in enumerate(words):
                if j == 0:
                    with m.Case(a):
                        m.d.comb += win_data.eq(r_word.algo[name][:32])
            with m.Case(n_words):
                m.d.comb += win_data.eq(r_word.en << CTRL_EN_BIT)
            with m.Default():   # a high word (answered from the snapshot) or no word: 0
                m.d.comb += win_data.eq(0)
        m.d.comb += [self.csr_rack.eq(g_ack | r_done),
                     self.csr_rdata.eq(Mux(r_done, win_data,
                                           Mux(h_ack, h_data, global_rdata)))]
        return m
