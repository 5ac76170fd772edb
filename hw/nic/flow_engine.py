"""The multi-flow reaction-point engine: per-flow state in block RAM, one event per clock.

:class:`FlowEngine` wraps any datapath of :mod:`hw.nic.flow_datapath` (DCQCN, QCN, the toy) with
a flow table in ``amaranth.lib.memory``, an arbiter, a read -> modify -> write-back pipeline that
forwards in-flight state (back-to-back events of the same flow, no stall), per-flow control
operations, the run-time register file generated from the datapath's register list, a timer
service (timing wheel of deadlines) and two output streams.  docs/flow-engine.md has the
diagram, the rules and the measured figures.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from ..layouts.common import csr_write_layout
from ..lib.arith import delayed, named_wire
from ..lib.bram import Bram
from ..params import ConfigError
from .flow_datapath import CtlOp, EventKind, FlowDatapath, time_le
from .flow_engine_config import (
    COUNTER_BASE,
    CSR_ADDR_WIDTH,
    CSR_DATA_WIDTH,
    TABLE_LATENCY,
    FlowEngineConfig,
    min_out_fifo_depth,
    pipe_depth,
)
from .timer_wheel_config import INSERT_LATENCY

__all__ = ["FlowEngine", "Src", "COUNTERS", "LATE_BUCKETS", "WHEEL_STATS", "CALENDAR_STATS",
           "timer_stats", "engine_layouts",
           "late_bucket", "PIPE_DEPTH", "REEVAL",
           "WHEEL_MARGIN", "MAX_ENTRIES", "TABLE_LATENCY", "min_out_fifo_depth", "next_gen",
           "pipe_depth", "reeval", "wheel_margin",
           "check_wheel_margin"]


class Src:
    """Event sources inside the pipeline: the datapath's three kinds, plus control operations."""
    TX, CN, TIMER, CTL = 0, 1, 2, 3


#: Read-only counters, in address order from COUNTER_BASE (32 bits, saturating).
COUNTERS = ["ev_tx", "ev_cn", "ev_timer", "ev_ctl", "expiries", "late_sum", "late_max",
            "disabled", "stale_pops", "wheel_ins"]
#: The wheel's statistics, readable after the histogram.
WHEEL_STATS = ["occupancy", "max_occupancy", "max_displacement", "overflow", "overflow_count"]
#: The calendar's, at the same addresses (software reads index 2 as the service's worst
#: placement figure either way); None reads 0: the calendar cannot overflow.
CALENDAR_STATS = ["occupancy", "max_occupancy", "max_lateness", None, None]


def timer_stats(config: FlowEngineConfig) -> list:
    """The statistics registers read after the histogram, by index, for the engine's timer
    service (names of the service's ports; None reads 0)."""
    return CALENDAR_STATS if config.timer == "calendar" else WHEEL_STATS

#: Lateness histogram buckets (cycles): [lo, hi] inclusive; counters late_h0 ... late_h7 follow.
LATE_BUCKETS = [(0, 0), (1, 1), (2, 3), (4, 7), (8, 15), (16, 63), (64, 255), (256, None)]


def reeval(latency: int = 1, insert_latency: int = INSERT_LATENCY) -> int:
    """From a re-evaluating pop to the earliest cycle its insert can pop: the pipeline plus the
    wheel's insert latency (4 by default, 5 with the wheel's read stage)."""
    return pipe_depth(latency) + insert_latency


def wheel_margin(latency: int = 1, insert_latency: int = INSERT_LATENCY) -> int:
    """Inputs are held while wheel occupancy + margin >= max_entries: the inserts in flight (one
    per pipeline stage, insert_latency - 2 in the wheel) and the occupancy output's one-cycle
    lag, with room."""
    return pipe_depth(latency) + 5 + (insert_latency - INSERT_LATENCY)


def check_wheel_margin(config: FlowEngineConfig, latency: int) -> None:
    """The engine holds its inputs while wheel occupancy + margin >= the wheel's entries: with
    no more entries than the margin (few flows, a long pipeline) it would never take an event.
    One ConfigError line instead.  The calendar has no capacity and no room check: nothing."""
    if config.timer == "calendar":
        return
    entries = config.wheel_config().max_entries
    margin = wheel_margin(latency, config.wheel_config().insert_latency)
    if entries <= margin:
        raise ConfigError(config, "wheel_entries_per_flow", config.wheel_entries_per_flow,
                          f"n_flows x wheel_entries_per_flow ({entries}) above the engine's "
                          f"wheel margin {margin} (datapath latency {latency}), else the "
                          "engine never takes an event")


#: the figures of a one-cycle datapath (the toy)
PIPE_DEPTH = pipe_depth(1)
REEVAL = reeval(1)
WHEEL_MARGIN = wheel_margin(1)
#: Timer entries one flow may have at once (one live, the others stale): 4 = the 2-bit
#: generation space.  Entries pop in deadline order, not generation order, so the engine keeps
#: a per-flow mask of the generations queued (``q_mask``) and gives a new entry a generation
#: that is not queued: the ids {flow, gen} in the timer service are always distinct.
MAX_ENTRIES = 4


def next_gen(gen: int, queued: int) -> int:
    """The generation of a new entry: the first of ``gen`` + 1, + 2, + 3, ``gen`` (mod 4) whose
    bit in ``queued`` (the flow's queued generations, after this event's pop) is clear.  (The
    RTL's rule, for the model and the tests; the caller checks ``queued != 0b1111``.)"""
    for k in (1, 2, 3, 0):
        g = (gen + k) & 3
        if not queued >> g & 1:
            return g
    raise AssertionError("no free generation")


def late_bucket(late: int) -> int:
    """The histogram bucket of a lateness (cycles)."""
    for i, (_, hi) in enumerate(LATE_BUCKETS):
        if hi is None or late <= hi:
            return i
    raise AssertionError


def engine_layouts(cfg: FlowEngineConfig, dp: FlowDatapath) -> dict:
    """The port and storage layouts of an engine (shared by the RTL, the model and the tests)."""
    W, FW = cfg.time_width, cfg.flow_width
    fields = list(data.Layout.cast(dp.state_layout))
    value_width = max(f.width for _, f in fields)
    field_width = max(1, (len(fields) - 1).bit_length())
    word = data.StructLayout({"algo": dp.state_layout, "en": 1, "q_valid": 1, "q_gen": 2,
                              "q_mask": MAX_ENTRIES,
                              "q_dl": W})
    return {
        "word": word,
        "tx": data.StructLayout({"flow": FW, "bytes": dp.tx_bytes_width}),
        "cn": data.StructLayout({"flow": FW, "cn": dp.cn_layout}),
        "ctl": data.StructLayout({"flow": FW, "op": CtlOp, "field": field_width,
                                  "value": value_width}),
        "rate": data.StructLayout({"flow": FW, "rate": dp.rate_width}),
        "rd": data.StructLayout({"flow": FW, "word": word}),
        "fields": [name for name, _ in fields],
    }


class FlowEngine(wiring.Component):
    """Multi-flow reaction-point engine around a datapath.

    Parameters: ``config`` (:class:`FlowEngineConfig`), ``datapath`` (a :class:`FlowDatapath`
    built with ``time_width = config.time_width``), ``wheel`` (optional factory
    ``wheel(config) -> component`` of the timer service; default the project's TimerWheel).

    Ports:
      tx (in stream {flow, bytes}), cn (in stream {flow, cn}), ctl (in stream {flow, op, field,
      value}), csr_w (in stream {addr, data}) + csr_raddr / csr_rdata (data one cycle later);
      rate (out stream {flow, rate}: every change of a flow's rate), rd (out stream {flow,
      word}: READ responses, the whole state word); ready (init sweep done); now (cycle count).

    Latency: an event accepted at cycle c produces its ``rate``/``rd`` output at
    c + latency + 5 (:func:`pipe_depth` + 1; valid on the output stream that cycle if the FIFO
    was empty), c + 6 with a one-cycle datapath.  Throughput: one event per clock,
    same flow or not, as long as the outputs are drained (credits: an event is issued only if
    the output FIFOs have room for everything in flight).
    """

    def __init__(self, config: FlowEngineConfig, datapath: FlowDatapath, wheel=None):
        assert datapath.time_width == config.time_width, "datapath built for another time_width"
        need = min_out_fifo_depth(datapath.latency)
        if config.out_fifo_depth < need:
            # every stage in flight may write an output: one event per clock needs room for them
            # plus the entry written last cycle and the one of the event issued now
            raise ConfigError(config, "out_fifo_depth", config.out_fifo_depth,
                              f">= {need} (datapath latency {datapath.latency} + "
                              f"{need - datapath.latency}) for one event per clock")
        check_wheel_margin(config, datapath.latency)
        self.config = config
        self.dp = datapath
        self._wheel_factory = wheel
        self.layouts = lay = engine_layouts(config, datapath)
        super().__init__({
            "tx": In(stream.Signature(lay["tx"])),
            "cn": In(stream.Signature(lay["cn"])),
            "ctl": In(stream.Signature(lay["ctl"])),
            "csr_w": In(stream.Signature(csr_write_layout(CSR_ADDR_WIDTH, CSR_DATA_WIDTH))),
            "csr_raddr": In(CSR_ADDR_WIDTH),
            "csr_rdata": Out(CSR_DATA_WIDTH),
            "rate": Out(stream.Signature(lay["rate"])),
            "rd": Out(stream.Signature(lay["rd"])),
            "ready": Out(1),
            "now": Out(config.time_width),
        })

    def _make_wheel(self):
        if self._wheel_factory is not None:
            return self._wheel_factory(self.config.timer_config())
        if self.config.timer == "calendar":
            from .timer_calendar import TimerCalendar
            return TimerCalendar(self.config.timer_config())
        from .timer_wheel import TimerWheel
        return TimerWheel(self.config.wheel_config())

    def elaborate(self, platform):
        cfg, dp, lay = self.config, self.dp, self.layouts
        m = Module()
        W, N = cfg.time_width, cfg.n_flows
        AW = cfg.addr_width
        word_lay = lay["word"]
        D = cfg.out_fifo_depth

        now = Signal(W)
        m.d.sync += now.eq(now + 1)
        m.d.comb += self.now.eq(now)

        # -- run-time registers ------------------------------------------------------------
        regs = Signal(dp.regs_layout, init=dp.regs_reset())
        # The datapath reads a registered copy (``regs_dp``): the registers themselves sit at
        # the write decode and the read-back multiplexer, and their routes across the placement
        # into the datapath's later sections were the DCQCN engine top's critical path (4 +
        # 2 + 5 ns of routing); the copy has the datapath as its only load.  No cycle changes:
        # a write is taken only with stages 1 ... WB empty and no event issues at its edge, so
        # the copy holds the new value from the next edge on, before any later event's
        # earliest read (its stage TL - 1).
        regs_dp = Signal(dp.regs_layout, init=dp.regs_reset(), name="regs_dp")
        m.d.sync += regs_dp.eq(regs)

        # -- flow table --------------------------------------------------------------------
        # read latency 3 (address at issue, data out of the RAM in stage 3), then the forwarding
        # register (TABLE_LATENCY 4: the first modify stage, stage 4, starts at it).  The
        # address is registered in front of the RAM (``addr_reg``): the issue address is the
        # end of the arbiter's path (a source's busy check, the priority, the issue
        # multiplexer), and the route into the block RAMs starts at a flip-flop (the L = 4
        # engine's critical path, 13.4 ns of which 3.7 ns route, without it).  The data leaves
        # the RAM's output register (``out_reg``): the datapath's first modify cycle computes
        # on the forwarding multiplexer's choice, and the RAM's clock-to-data without that
        # register (5.6-5.8 ns at speed 6) was on the real datapaths' paths (QCN's byte
        # counter compare, DCQCN's timer compares, with read latency 2).
        table = Bram(word_lay, N, name="table", addr_reg=True, out_reg=True)
        assert table.latency + 1 == TABLE_LATENCY
        table.build(m, platform)

        # -- timer wheel -------------------------------------------------------------------
        m.submodules.wheel = wheel = self._make_wheel()
        m.d.comb += wheel.now.eq(now)
        wheel_ready = getattr(wheel, "ready", Const(1))

        # -- output FIFOs --------------------------------------------------------------------
        m.submodules.rate_fifo = rate_fifo = SyncFIFO(width=lay["rate"].size, depth=D)
        m.submodules.rd_fifo = rd_fifo = SyncFIFO(width=lay["rd"].size, depth=D)
        m.d.comb += [
            self.rate.valid.eq(rate_fifo.r_rdy), self.rate.payload.eq(rate_fifo.r_data),
            rate_fifo.r_en.eq(self.rate.ready),
            self.rd.valid.eq(rd_fifo.r_rdy), self.rd.payload.eq(rd_fifo.r_data),
            rd_fifo.r_en.eq(self.rd.ready),
        ]

        # -- init sweep: clear the table after reset ------------------------------------------
        sweep = Signal(range(N + 1))
        # swept == (sweep == N), kept as a register: ready gates the arbiter and the register
        # writes, and the compare in front of them was the start of the QCN engine top's
        # critical path (sweep -> ready -> the register write enable)
        swept = Signal(name="swept")
        with m.If(~swept):
            m.d.sync += sweep.eq(sweep + 1)
        m.d.sync += swept.eq(swept | (sweep == N - 1))
        ready = named_wire(m, "ready_i", swept & wheel_ready)
        m.d.comb += self.ready.eq(ready)

        # -- pipeline registers ----------------------------------------------------------------
        ev_lay = data.StructLayout({
            "flow": cfg.flow_width, "src": 2, "bytes": dp.tx_bytes_width, "cn": dp.cn_layout,
            "op": CtlOp, "field": lay["ctl"].members["field"],
            "value": lay["ctl"].members["value"], "gen": 2})

        L = dp.latency
        TL = TABLE_LATENCY
        M0 = TL                     # the first modify stage (the table's word is out)
        WB = pipe_depth(L)          # the write-back stage
        ML = WB - 1                 # the last modify stage
        # the stage that selects the write-back's timer fields among its candidates (write-back
        # itself for L = 1, the last modify stage for L = 2, the one before for L >= 3: the
        # bookkeeping below)
        S = WB if L == 1 else ML if L == 2 else ML - 1
        IL = cfg.timer_config().insert_latency     # 4 ... 6 for the wheel, 10 for the calendar
        MARGIN = wheel_margin(L, IL)

        def stage(k):
            return (Signal(name=f"s{k}_valid"), Signal(ev_lay, name=f"s{k}_ev"),
                    Signal(W, name=f"s{k}_t"))

        # stages 1 (address register) ... WB (write-back) carry the whole event
        sv, sev, st_t = {}, {}, {}
        for k in range(1, WB + 1):
            sv[k], sev[k], st_t[k] = stage(k)
        for k in range(3, WB + 1):
            m.d.sync += [sv[k].eq(sv[k - 1]), sev[k].eq(sev[k - 1]), st_t[k].eq(st_t[k - 1])]
        # stage 1 holds the CN and TX payloads whatever the source (the arbiter's selects
        # reach only the source and flow registers); stage 2 keeps the one the event carries
        # and clears the other, as a datapath expects
        ev1 = sev[1]
        m.d.sync += [sv[2].eq(sv[1]), st_t[2].eq(st_t[1]), sev[2].eq(ev1),
                     sev[2].cn.eq(Mux(ev1.src == Src.CN, ev1.cn, 0)),
                     sev[2].bytes.eq(Mux(ev1.src == Src.TX, ev1.bytes, 0))]
        # after write-back, the word written and its flow: stages WB + 1 ... S + L + TL (the
        # forwarding sources of the modify stage and of the wheel bookkeeping, below: the
        # bookkeeping selects among the words at distance L ... L + TL from its event, in
        # stage S); the valid bit and flow are compared up to stage S + L + TL - 1 only (the
        # selects are made from compares a stage earlier)
        LAST = S + L + TL
        CMP_LAST = LAST - 1
        wv = {k: Signal(name=f"s{k}_wvalid") for k in range(WB + 1, CMP_LAST + 1)}
        wflow = {k: Signal(cfg.flow_width, name=f"s{k}_flow") for k in range(WB + 1,
                                                                            CMP_LAST + 1)}
        wword = {k: Signal(word_lay, name=f"s{k}_word") for k in range(WB + 1, LAST + 1)}

        def valid_at(k):
            return sv[k] if k <= WB else wv[k]

        def flow_at(k):
            return sev[k].flow if k <= WB else wflow[k]

        # -- arbiter (stage 0): timer pop > ctl > cn > tx ---------------------------------------
        # The credits: room for every record in flight, level + in flight < D (in flight: the
        # events in stages 1 ... WB; for rd, the READs among them).  Kept as
        # registers updated by what changes them (an issue adds one, a record read from the
        # FIFO or an event leaving write-back without a record removes one), exactly equal to
        # the sums, so the arbiter starts from a flip-flop instead of a popcount, an adder and a
        # compare (the L = 4 engine's critical path, into the table's read address, before).
        rate_ok, rd_ok = Signal(name="rate_ok", init=1), Signal(name="rd_ok", init=1)
        rate_total = Signal(range(D + WB + 2), name="rate_total")
        rd_total = Signal(range(D + WB + 2), name="rd_total")
        go = named_wire(m, "go", ready & ~self.csr_w.valid & rate_ok)

        # A datapath of latency L > 1 has no one-cycle loop: a flow's next event may issue only
        # when its previous one is at least L cycles ahead (its update then reaches the
        # write-back stage just in time to be forwarded).  A source whose head is such a flow
        # waits; the next source in priority order may go in its place.
        def busy(flow):
            hit = Const(0)
            for k in range(1, L):
                hit = hit | (sv[k] & (sev[k].flow == flow))
            return hit

        pop = wheel.pop
        pop_free = named_wire(m, "pop_free", pop.valid & ~busy(pop.payload.flow))
        ctl_free = named_wire(m, "ctl_free", self.ctl.valid & ~busy(self.ctl.payload.flow))
        cn_free = named_wire(m, "cn_free", self.cn.valid & ~busy(self.cn.payload.flow))
        tx_free = named_wire(m, "tx_free", self.tx.valid & ~busy(self.tx.payload.flow))
        # inputs wait while the wheel is nearly full (an input event inserts at most one entry;
        # a pop removes its own before it may insert one), so the wheel cannot overflow
        # The calendar needs no such check: it cannot overflow (a slot's list is unbounded) and
        # its link RAM has a word for every id {flow, gen} (4 x n_flows); the engine itself
        # keeps at most MAX_ENTRIES = 4 entries per flow, each with a generation not queued
        # (q_mask, below), so the ids in the calendar are always distinct, whatever the traffic.
        if cfg.timer == "calendar":
            room = Const(1)
        else:
            room = named_wire(m, "wheel_room",
                              wheel.occupancy + MARGIN < cfg.wheel_config().max_entries)
        # a READ needs room on rd; without it the ctl stream waits and cn/tx may go
        ctl_ok = named_wire(m, "ctl_ok", ~self.ctl.valid | (self.ctl.payload.op != CtlOp.READ)
                            | rd_ok)
        ctl_go = named_wire(m, "ctl_go", ctl_free & ctl_ok)
        take_pop = named_wire(m, "take_pop", go & pop_free)
        go_in = named_wire(m, "go_in", go & room & ~pop_free)
        take_ctl = named_wire(m, "take_ctl", go_in & ctl_go)
        take_cn = named_wire(m, "take_cn", go_in & ~ctl_go & cn_free)
        take_tx = named_wire(m, "take_tx", go_in & ~ctl_go & ~cn_free & tx_free)
        m.d.comb += [
            pop.ready.eq(take_pop),
            self.ctl.ready.eq(take_ctl),
            self.cn.ready.eq(take_cn),
            self.tx.ready.eq(take_tx),
        ]
        # The issued event: its source and fields are selected by the sources' free flags
        # alone (the taken source is the first free one whenever anything is taken; go and
        # the wheel's room only decide whether it is), and the fields only one kind reads
        # (the control operation's, the pop's generation, the CN's and the TX's payloads: the
        # last two cleared in stage 2 for the other kinds) are copied whatever the source, so
        # that the stage-1 registers do not wait for the whole arbiter (the path from a
        # source's busy check through every take signal, before), and the selects reach only
        # the source and flow registers.
        issue = Signal(ev_lay)
        c = self.ctl.payload
        m.d.comb += [issue.gen.eq(pop.payload.gen), issue.op.eq(c.op),
                     issue.field.eq(c.field), issue.value.eq(c.value),
                     issue.cn.eq(self.cn.payload.cn), issue.bytes.eq(self.tx.payload.bytes)]
        with m.If(pop_free):
            m.d.comb += [issue.src.eq(Src.TIMER), issue.flow.eq(pop.payload.flow)]
        with m.Elif(ctl_go):
            m.d.comb += [issue.src.eq(Src.CTL), issue.flow.eq(c.flow)]
        with m.Elif(cn_free):
            m.d.comb += [issue.src.eq(Src.CN), issue.flow.eq(self.cn.payload.flow)]
        with m.Else():
            m.d.comb += [issue.src.eq(Src.TX), issue.flow.eq(self.tx.payload.flow)]
        took = take_pop | take_ctl | take_cn | take_tx
        took_read = named_wire(m, "took_read", take_ctl & (self.ctl.payload.op == CtlOp.READ))
        m.d.sync += [sv[1].eq(took), sev[1].eq(issue), st_t[1].eq(now)]
        m.d.comb += table.r_addr.eq(issue.flow[:AW] if AW else 0)

        # -- register writes: only with the pipeline empty (every event sees one instant) ------
        m.d.comb += self.csr_w.ready.eq(ready & ~Cat(*(sv[k] for k in range(1, WB + 1))).any())
        with m.If(self.csr_w.valid & self.csr_w.ready):
            with m.Switch(self.csr_w.payload.addr):
                for i, (name, width, _) in enumerate(dp.regs):
                    with m.Case(i):
                        m.d.sync += regs[name].eq(self.csr_w.payload.data[:width])
                # a write to an address without a register is ignored (the model's rule),
                # stated as the case's default so that the exported case is complete
                with m.Default():
                    m.d.sync += regs.eq(regs)

        # -- stages 1 ... TL - 1: the table's read; forwarding in two steps -------------------
        # The event in stage TL (first modify cycle) takes its flow's state from the newest of:
        # the update just computed (stage WB, distance L), the words written back one to TL
        # cycles ago (WB + 1 ... WB + TL: the RAM read, a cycle after issue, missed them: the
        # table takes a word at the end of its WB + 1 cycle), else the RAM.  The RAM's word
        # arrives in stage TL - 1 (the block RAMs' output register) and is registered there
        # beside the older candidates: in stage TL - 1 the newest of the words at distance
        # L + 1 ... L + TL (all registers then: the write-back stage's update and the words
        # after it) and the RAM's is selected into ``fwd_st``, so that the route out of the
        # block RAMs (4 ns across the device at 1K flows) and the wide priority select end at
        # a register; stage TL only chooses between that register and the update at distance
        # L (a 2:1 multiplexer in front of the datapath).  The selects compare a stage ahead.
        # the RAM's word in stage TL: only its timer fields are read from it (the write-back
        # bookkeeping's RAM candidate); the state and ``en`` reach the datapath through
        # ``fwd_st`` (the unread bits are left to synthesis, which drops them)
        m0_rdata = Signal(word_lay, name="table_q")
        m.d.sync += m0_rdata.eq(table.r_data)
        far = [Signal(name=f"fwd_far{i}") for i in range(1, TL + 1)]    # distance L + i
        evf = sev[M0 - 2]
        for i, f in enumerate(far, start=1):
            k = WB - 2 + i
            m.d.sync += f.eq(valid_at(k) & (flow_at(k) == evf.flow))
        fwd_st = Signal(dp.state_layout, name="fwd_st")
        fwd_en = Signal(name="fwd_en")
        wb_algo = Signal(dp.state_layout, name=f"s{WB}_algo")
        wb_en = Signal(name=f"s{WB}_en")
        # (distance L + 1 is the write-back stage's update now, L + i the word written back
        # i - 1 cycles ago)
        far_words = [(wb_algo, wb_en)] + [(wword[WB + i].algo, wword[WB + i].en)
                                          for i in range(1, TL)]
        with m.If(far[0]):
            m.d.sync += [fwd_st.eq(far_words[0][0]), fwd_en.eq(far_words[0][1])]
        for f, (algo_w, en_w) in zip(far[1:], far_words[1:], strict=True):
            with m.Elif(f):
                m.d.sync += [fwd_st.eq(algo_w), fwd_en.eq(en_w)]
        with m.Else():
            m.d.sync += [fwd_st.eq(table.r_data.algo), fwd_en.eq(table.r_data.en)]
        near = Signal(name="fwd_near")                  # distance L, compared in stage TL - 1
        evp = sev[M0 - 1]
        m.d.sync += near.eq(valid_at(WB - 1) & (flow_at(WB - 1) == evp.flow))
        pre_now = dp.pre(m, kind=evp.src, tx_bytes=evp.bytes, cn=evp.cn, t=st_t[M0 - 1],
                         regs=regs_dp)
        pre = {}
        for name, value in pre_now.items():
            reg = Signal.like(value, name=f"pre_{name}") if isinstance(value, Signal) else \
                Signal(value.shape(), name=f"pre_{name}")
            m.d.sync += reg.eq(value)
            pre[name] = reg

        # -- stages TL ... WB - 1: modify (the datapath's L cycles) ------------------------------
        st = Signal(dp.state_layout)
        en_in = Signal()
        m.d.comb += [st.eq(Mux(near, wb_algo, fwd_st)), en_in.eq(Mux(near, wb_en, fwd_en))]
        ev2 = sev[M0]
        kind = Signal(EventKind)
        m.d.comb += kind.eq(Mux(ev2.src == Src.CTL, EventKind.TIMER, ev2.src))
        applied = named_wire(m, "applied", sv[M0] & (ev2.src != Src.CTL) & en_in)
        out = dp.build(m, state=st, kind=kind, tx_bytes=ev2.bytes, cn=ev2.cn, t=st_t[M0],
                       regs=regs_dp, pre=pre, valid=applied)

        # the last modify stage (WB - 1): the datapath's result meets the control operation
        evl = sev[ML]
        st_l = Signal(dp.state_layout, name="st_last")
        m.d.comb += st_l.eq(delayed(m, st, L - 1, name="st"))
        en_l = delayed(m, en_in, L - 1, name="en_in")
        applied_l = delayed(m, applied, L - 1, name="applied")
        is_ctl = evl.src == Src.CTL

        init = Signal(dp.state_layout)
        for name, value in dp.init_state(regs_dp).items():
            m.d.comb += init[name].eq(value)
        written = Signal(dp.state_layout)
        m.d.comb += written.eq(st_l)
        with m.Switch(evl.field):
            for i, name in enumerate(lay["fields"]):
                with m.Case(i):
                    m.d.comb += written[name].eq(evl.value)
            with m.Default():
                # a field number past the last field writes nothing (the model's rule)
                m.d.comb += written.eq(st_l)

        algo_next = Signal(dp.state_layout)
        en_next = Signal()
        m.d.comb += [algo_next.eq(st_l), en_next.eq(en_l)]
        with m.If(is_ctl):
            with m.Switch(evl.op):
                with m.Case(CtlOp.START):
                    m.d.comb += [algo_next.eq(init), en_next.eq(1)]
                with m.Case(CtlOp.RESET):
                    m.d.comb += algo_next.eq(init)
                with m.Case(CtlOp.STOP):
                    m.d.comb += en_next.eq(0)
                with m.Case(CtlOp.WRITE):
                    m.d.comb += algo_next.eq(written)
                with m.Default():
                    # READ (and the codes no CtlOp names) leaves the flow as it is
                    m.d.comb += [algo_next.eq(st_l), en_next.eq(en_l)]
        with m.Elif(en_l):
            m.d.comb += algo_next.eq(out.next_state)

        s3_old_rate = Signal(dp.rate_width)
        s3_wake_valid, s3_wake = Signal(), Signal(W)
        s3_expired, s3_late, s3_applied = Signal(), Signal(W), Signal()
        m.d.sync += [
            wb_algo.eq(algo_next), wb_en.eq(en_next),
            s3_old_rate.eq(st_l[dp.rate_field]),
            s3_wake_valid.eq(applied_l & out.wake_valid), s3_wake.eq(out.wake),
            s3_expired.eq(applied_l & out.expired), s3_late.eq(out.late),
            s3_applied.eq(applied_l),
        ]
        # The write-back stage's wheel fields: the newest write of its flow that its RAM read
        # (a cycle after issue) missed: distance L ... L + TL (nearer ones cannot be of its
        # flow).  The candidate is selected in stage S (above), where the candidates are the
        # words of stages S + L ... S + L + TL and the RAM's; the compares are made a stage
        # earlier (S - 1, against the words one stage nearer: every stage moves on by one per
        # cycle, nothing stalls) and registered, so that the select starts at flip-flops.
        def same_flow(i):
            k = S + L - 1 + i
            return valid_at(k) & (flow_at(k) == sev[S - 1].flow)

        # -- stage WB: write-back, wheel bookkeeping (its own one-cycle loop), outputs ----------
        s3_valid, s3_ev, s3_t = sv[WB], sev[WB], st_t[WB]
        s3_algo, s3_en = wb_algo, wb_en
        if L == 1:
            # The wheel fields come from one of TL + 2 registers (TL + 1 forwarded words, the
            # RAM's); the deadline compares are made on all of them in parallel and their
            # results selected, so that no compare is behind the select.
            s3_rdata_q = Signal(word_lay)      # the RAM's wheel fields, carried to write-back
            m.d.comb += s3_rdata_q.eq(delayed(m, m0_rdata, L, name="rdata"))
            gq = [Signal(name=f"gq{i}") for i in range(TL + 1)]
            for i, g in enumerate(gq):
                m.d.sync += g.eq(same_flow(i))
            cands = [wword[WB + L + i] for i in range(TL + 1)] + [s3_rdata_q]

            def select(values, name, shape=1):
                """The first of ``values`` whose gq is set, else the last (the RAM's)."""
                sig = Signal(shape, name=name)
                v = values[-1]
                for g, x in reversed(list(zip(gq, values[:-1], strict=True))):
                    v = Mux(g, x, v)
                m.d.comb += sig.eq(v)
                return sig
            q_in = select(cands, "q_in", word_lay)
        # The wheel bookkeeping of one event against one candidate word of its flow (``c``: its
        # q_* fields as the event finds them).  The rules:
        # - the generations of this flow queued in the timer service, this pop's (own or
        #   stale) no longer queued.  A new entry takes a generation not queued (the first free
        #   of q_gen + 1, + 2, + 3, q_gen): the ids are distinct, so a stale pop is never
        #   mistaken for the live one.  (Entries pop in deadline order, not generation order:
        #   q_gen + 1 alone could be the generation of a stale entry still queued.)
        # - the live entry (pop time q_dl) serves the flow's earliest deadline (wake) if it pops
        #   at wake, or early enough (q_dl + REEVAL <= wake) that the re-evaluation it triggers
        #   can still insert wake on time.  Otherwise insert wake now (it moved earlier, or
        #   later by less than REEVAL, or there is no live entry); the old entry becomes stale.
        #   With d = wake - q_dl (mod 2**W): "earlier" is ~time_le(q_dl, wake), i.e. d's sign
        #   bit; q_dl + REEVAL <= wake fails exactly when 0 <= d < REEVAL (REEVAL < 2**(W-1)),
        #   so one subtraction serves both compares.
        # In two parts: ``prep`` what depends on the candidate and the event only (not on
        # wake), ``decide`` the insert and the fields to write.
        R = reeval(L, IL)
        q_lay = data.StructLayout({"q_valid": 1, "q_gen": 2, "q_dl": W,
                                   "q_mask": MAX_ENTRIES})
        p_lay = data.StructLayout({"own_pop": 1, "q_valid1": 1, "q_mask1": MAX_ENTRIES,
                                   "full": 1, "new_gen": 2})

        def prep(c, ev):
            p = Signal(p_lay, name="prep")
            is_pop = ev.src == Src.TIMER
            own_pop = named_wire(m, "own_pop", is_pop & c.q_valid & (c.q_gen == ev.gen))
            popped = named_wire(m, "popped", Mux(is_pop, Const(1, MAX_ENTRIES) << ev.gen, 0),
                                width=MAX_ENTRIES)
            q_mask1 = named_wire(m, "q_mask1", c.q_mask & ~popped, width=MAX_ENTRIES)
            free = [~q_mask1.bit_select((c.q_gen + k)[:2], 1) for k in range(1, 4)]   # mod 4
            new_gen = named_wire(m, "new_gen", c.q_gen + Mux(free[0], 1, Mux(
                free[1], 2, Mux(free[2], 3, 0))), width=2)
            m.d.comb += [p.own_pop.eq(own_pop), p.q_valid1.eq(c.q_valid & ~own_pop),
                         p.q_mask1.eq(q_mask1),
                         p.full.eq(q_mask1 == (1 << MAX_ENTRIES) - 1), p.new_gen.eq(new_gen)]
            return p

        def wake_flags(wk, c, sfx):
            """(earlier, close) of the deadline ``wk`` against the candidate ``c``."""
            d = named_wire(m, f"wake_d{sfx}", wk - c.q_dl, width=W)
            # 0 < d < R, as its low bits' compare and the high bits' zero test side by side
            # (not a second carry chain behind the subtraction's)
            k = R.bit_length()
            return d[W - 1], (d[k:] == 0) & (d[:k] != 0) & (d[:k] < R)

        def decide(p, c, force, earlier, close, placed):
            """(ins, the q_* fields to write) of the write-back stage's event."""
            ins = named_wire(m, "ins", s3_valid & ~p.full
                             & (force | (s3_wake_valid & (~p.q_valid1 | earlier | close))))
            q = Signal(q_lay, name="q_next")
            with m.If(ins):
                m.d.comb += [q.q_valid.eq(1), q.q_gen.eq(p.new_gen), q.q_dl.eq(placed),
                             q.q_mask.eq(p.q_mask1 | (Const(1, MAX_ENTRIES) << p.new_gen))]
            with m.Else():
                m.d.comb += [q.q_valid.eq(p.q_valid1), q.q_gen.eq(c.q_gen), q.q_dl.eq(c.q_dl),
                             q.q_mask.eq(p.q_mask1)]
            return ins, q

        is_pop = s3_ev.src == Src.TIMER
        force = named_wire(m, "force", (s3_ev.src == Src.CTL) & (s3_ev.op == CtlOp.WRITE))
        wake = s3_wake
        target = named_wire(m, "target", Mux(force, s3_t, wake), width=W)
        # The wheel places an entry no earlier than INSERT_LATENCY cycles after its insert (this
        # cycle, s3_t + WB): the live entry's recorded pop time is that, so the re-evaluation
        # rule above compares against when it will really pop.  (A WRITE's target, s3_t, is
        # always nearer; a wake may be.)
        if L == 1:
            # the nearest candidate is the word being written: the bookkeeping is made here,
            # on the selected word, the deadline compares on every candidate in parallel and
            # their results selected (the compares' carry chains are not behind the select)
            soonest = named_wire(m, "soonest", s3_t + WB + IL, width=W)
            wake_far = named_wire(m, "wake_far", time_le(soonest, wake, W))
            placed = named_wire(m, "placed", Mux(force | ~wake_far, soonest, wake), width=W)
            flags = [wake_flags(wake, c, i) for i, c in enumerate(cands)]
            earlier = select([f[0] for f in flags], "earlier")
            close = select([f[1] for f in flags], "close")
            p0 = prep(q_in, s3_ev)
            own_pop = p0.own_pop
            ins, q_w = decide(p0, q_in, force, earlier, close, placed)
        else:
            # L >= 2: the candidate is selected ahead of write-back, in stage S (the last
            # modify stage at L = 2, the one before at L >= 3), from the words that are the
            # candidates WB - S stages later (the forwarding chain moves by one stage per cycle:
            # wword[k] becomes wword[k + 1], the RAM's word is delayed S - M0 instead of
            # L), with one-hot selects from registers (``gsel``: an AND-OR, no priority
            # chain).  At L >= 3 the selected word is registered, and the last modify stage
            # makes what depends on it (the generations, the mask: ``prep``; the deadline
            # compares against the datapath's wake) from flip-flops; at L = 2 the select and
            # those are in one cycle.  Either way write-back only decides, from registers: the
            # bookkeeping (candidate -> insert decision -> word written) has no compare, no
            # selection and no carry chain behind its registers.  (Deciding a stage early too
            # put the datapath's wake, its compares and the decision in one cycle: worse.)
            rdata_s = Signal(word_lay, name="rdata_sel")
            m.d.comb += rdata_s.eq(delayed(m, m0_rdata, S - M0, name="rdata_sel"))
            s_cands = [wword[S + L + i] for i in range(TL + 1)] + [rdata_s]
            # the newest of the flow's words in flight, the RAM's word when there is none
            q_s = Signal(q_lay, name="q_s")
            sel = Const(0, q_lay.size)
            hit = [same_flow(i) for i in range(TL + 1)] + [Const(1)]
            for i, c in enumerate(s_cands):
                first = hit[i]
                for j in range(i):
                    first = first & ~hit[j]
                g = Signal(name=f"gsel{i}")
                m.d.sync += g.eq(first)
                x = Cat(c.q_valid, c.q_gen, c.q_dl, c.q_mask)
                sel = sel | Mux(g, x, 0)
            m.d.comb += q_s.as_value().eq(sel)
            if S == ML:
                q_ml = q_s
            else:
                q_ml = Signal(q_lay, name="q_ml")
                m.d.sync += q_ml.eq(q_s)
            # the wake's compares: on each of the datapath's timer deadlines side by side with
            # its choice among them, when it gives them (``wake_terms``), else on the wake
            terms = out.wake_terms or [(Const(1), out.wake)]
            soon_ml = named_wire(m, "soonest_ml", st_t[ML] + WB + IL, width=W)
            e_ml, c_ml, far_ml = Const(0), Const(0), Const(0)
            for j, (tsel, dl) in enumerate(terms):
                e, cl = wake_flags(dl, q_ml, f"_t{j}")
                e_ml = e_ml | (tsel & e)
                c_ml = c_ml | (tsel & cl)
                far_ml = far_ml | (tsel & time_le(soon_ml, dl, W))
            soonest, wake_far = Signal(W, name="soonest"), Signal(name="wake_far")
            earlier, close = Signal(name="earlier"), Signal(name="close")
            p_r = Signal(p_lay, name="prep_q")
            q_in = Signal(q_lay, name="q_in")
            m.d.sync += [soonest.eq(soon_ml), wake_far.eq(far_ml),
                         earlier.eq(e_ml), close.eq(c_ml),
                         p_r.eq(prep(q_ml, evl)), q_in.eq(q_ml)]
            placed = named_wire(m, "placed", Mux(force | ~wake_far, soonest, wake), width=W)
            own_pop = p_r.own_pop
            ins, q_w = decide(p_r, q_in, force, earlier, close, placed)
        word_w = Signal(word_lay)
        m.d.comb += [word_w.algo.eq(s3_algo), word_w.en.eq(s3_en),
                     word_w.q_valid.eq(q_w.q_valid), word_w.q_gen.eq(q_w.q_gen),
                     word_w.q_dl.eq(q_w.q_dl), word_w.q_mask.eq(q_w.q_mask)]
        m.d.comb += [
            wheel.ins.valid.eq(ins),
            wheel.ins.payload.flow.eq(s3_ev.flow),
            wheel.ins.payload.gen.eq(word_w.q_gen),
            wheel.ins.payload.deadline.eq(target),
        ]
        # The table is written a cycle after write-back, from the word's register (stage
        # WB + 1): the insert decision ends in a flip-flop instead of at the block RAMs' data
        # pins across the chip.  The forwarding needs nothing more: the RAM reads a cycle after
        # issue (its address is registered), so a word written at the end of WB + 1 is missed
        # by exactly the reads that missed a word written at the end of WB before, and those
        # are forwarded (stages WB ... WB + TL into the modify stage, WB + L ... WB + L + TL
        # into write-back).
        with m.If(swept):
            m.d.comb += [table.w_addr.eq(wflow[WB + 1][:AW] if AW else 0),
                         table.w_data.eq(wword[WB + 1]), table.w_en.eq(wv[WB + 1])]
        with m.Else():
            m.d.comb += [table.w_addr.eq(sweep[:AW] if AW else 0), table.w_data.eq(0),
                         table.w_en.eq(1)]
        m.d.sync += [wv[WB + 1].eq(s3_valid), wflow[WB + 1].eq(s3_ev.flow),
                     wword[WB + 1].eq(word_w)]
        for k in range(WB + 2, LAST + 1):
            m.d.sync += wword[k].eq(wword[k - 1])
            if k in wv:
                m.d.sync += [wv[k].eq(wv[k - 1]), wflow[k].eq(wflow[k - 1])]
        # A READ's response is the word it writes back, but a READ never inserts (it is a CTL
        # operation other than WRITE, and not a pop: ins = 0, q_mask and q_valid unchanged), so
        # its timer fields are q_in's: the rd FIFO's data does not wait for the insert decision
        rd_word = Signal(word_lay)
        m.d.comb += [rd_word.algo.eq(s3_algo), rd_word.en.eq(s3_en),
                     rd_word.q_valid.eq(q_in.q_valid), rd_word.q_gen.eq(q_in.q_gen),
                     rd_word.q_dl.eq(q_in.q_dl), rd_word.q_mask.eq(q_in.q_mask)]
        new_rate = s3_algo[dp.rate_field]
        rate_out = Signal(lay["rate"])
        rd_out = Signal(lay["rd"])
        m.d.comb += [
            rate_out.flow.eq(s3_ev.flow), rate_out.rate.eq(new_rate),
            rate_fifo.w_data.eq(rate_out), rate_fifo.w_en.eq(s3_valid & (new_rate != s3_old_rate)),
            rd_out.flow.eq(s3_ev.flow), rd_out.word.eq(rd_word),
            rd_fifo.w_data.eq(rd_out),
            rd_fifo.w_en.eq(s3_valid & (s3_ev.src == Src.CTL) & (s3_ev.op == CtlOp.READ)),
        ]

        # -- the credits' next values (above): this cycle's issue in, reads and silent
        # write-backs out.  Every outcome (the register plus a constant, its compare against
        # D) is made from the register alone, and the late one-bit terms (the arbiter's issue,
        # the FIFO's read: the consumer's ready and the FIFO's level logic; the write-back's
        # rate compare) only select one of them: no adder or compare behind them.
        def credit(total, ok, terms):
            """``total`` += the sum of ``terms`` ((bit, +1 or -1) pairs), ``ok`` = the new
            total < D."""
            with m.Switch(Cat(*(bit for bit, _ in terms))):
                for code in range(1 << len(terms)):
                    delta = sum(sign for i, (_, sign) in enumerate(terms) if code >> i & 1)
                    with m.Case(code):
                        m.d.sync += [total.eq(total + delta), ok.eq(total + delta < D)]
        credit(rate_total, rate_ok, [(took, 1), (self.rate.ready & rate_fifo.r_rdy, -1),
                                     (s3_valid & ~rate_fifo.w_en, -1)])
        credit(rd_total, rd_ok, [(took_read, 1), (self.rd.ready & rd_fifo.r_rdy, -1)])

        # -- counters ---------------------------------------------------------------------------
        top = (1 << CSR_DATA_WIDTH) - 1
        cnt = {name: Signal(CSR_DATA_WIDTH, name=f"cnt_{name}") for name in COUNTERS}
        hist = [Signal(CSR_DATA_WIDTH, name=f"cnt_late_h{i}") for i in range(len(LATE_BUCKETS))]

        def bump(sig, cond):
            with m.If(cond & (sig != top)):
                m.d.sync += sig.eq(sig + 1)

        bump(cnt["ev_tx"], s3_valid & (s3_ev.src == Src.TX))
        bump(cnt["ev_cn"], s3_valid & (s3_ev.src == Src.CN))
        bump(cnt["ev_timer"], s3_valid & is_pop)
        bump(cnt["ev_ctl"], s3_valid & (s3_ev.src == Src.CTL))
        bump(cnt["expiries"], s3_expired)
        bump(cnt["disabled"], s3_valid & (s3_ev.src != Src.CTL) & ~s3_applied)
        bump(cnt["stale_pops"], s3_valid & is_pop & ~own_pop)
        bump(cnt["wheel_ins"], ins)
        late = s3_late
        with m.If(s3_expired):
            total = cnt["late_sum"] + late
            m.d.sync += cnt["late_sum"].eq(Mux(total > top, top, total))
            with m.If(late > cnt["late_max"]):
                m.d.sync += cnt["late_max"].eq(late)
        for i, (lo, hi) in enumerate(LATE_BUCKETS):
            # (no lower compare for the first bucket: late >= 0 always holds)
            in_bucket = Const(1)
            if lo:
                in_bucket = in_bucket & (late >= lo)
            if hi is not None:
                in_bucket = in_bucket & (late <= hi)
            bump(hist[i], s3_expired & in_bucket)

        readable = [(i, regs[name]) for i, (name, _, _) in enumerate(dp.regs)]
        readable += [(COUNTER_BASE + i, cnt[name]) for i, name in enumerate(COUNTERS)]
        base = COUNTER_BASE + len(COUNTERS)
        readable += [(base + i, h) for i, h in enumerate(hist)]
        base += len(hist)
        for i, name in enumerate(timer_stats(cfg)):
            if name is not None:        # absent: the address reads 0 (the Default below)
                readable.append((base + i, getattr(wheel, name)))
        with m.Switch(self.csr_raddr):
            for addr, sig in readable:
                with m.Case(addr):
                    m.d.sync += self.csr_rdata.eq(sig)
            with m.Default():
                m.d.sync += self.csr_rdata.eq(0)
        return m
