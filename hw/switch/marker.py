"""Egress congestion point: per-(port, priority) queue occupancy and the WRED/ECN marker.

See ``docs/switch-marker.md`` for the algorithm, registers and figures, and
:mod:`sim.models.marker` for the bit-exact golden model the RTL is verified against.
"""

from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..layouts import (
    Compare,
    DropReason,
    Ecn,
    Profile,
    QueueOp,
    SamplePoint,
    csr_write_layout,
    marker_decision_layout,
    marker_descriptor_layout,
)
from ..lib.csr import CsrBank
from .marker_config import (
    COUNTER_MAX,
    CSR_ADDR_WIDTH,
    CSR_DATA_WIDTH,
    MarkerConfig,
    MarkerReg,
)

__all__ = ["EgressMarker"]


class EgressMarker(wiring.Component):
    """Queue occupancy and WRED/ECN marking for the egress queues of a switch.

    Parameters
    ----------
    config : MarkerConfig
        Elaboration-time shape (ports, priorities, widths, LFSR) and the reset values of the
        run-time registers.

    Ports
    -----
    desc : In(stream(marker_descriptor_layout))
        Queue events: a packet enqueued to or dequeued from queue (port, prio), its length in
        bytes and its ECN codepoint.
    decision : Out(stream(marker_decision_layout))
        One decision per descriptor, in order: drop and reason, the new ECN field, whether this
        block marked CE, and the queue bytes the decision used.
    csr_w : In(stream(csr_write_layout))
        Register writes (:class:`MarkerReg` word addresses).  A write waits until the pipeline
        is empty and holds off new descriptors meanwhile, so every descriptor sees the register
        values of one instant: those written before it was accepted.
    csr_raddr : In(5), csr_rdata : Out(32)
        Register and counter reads; ``csr_rdata`` is valid one cycle after ``csr_raddr``.
        The identification header (block type ``MRKR``) is at words 0x10..0x13; unmapped
        words read 0.

    Latency and throughput
    ----------------------
    One descriptor per clock, sustained.  With an always-ready sink, a decision is transferred
    5 clock edges after its descriptor (stages: queue read with forwarding, admission and queue
    write-back, threshold comparisons, ramp product, draw comparison).  ``desc.ready`` falls
    only when ``decision`` is back-pressured or a register write is pending.  Counters
    advance one cycle after the decision they count.
    """

    #: clock edges from the transfer of a descriptor to the transfer of its decision
    LATENCY = 5

    def __init__(self, config: MarkerConfig):
        if not isinstance(config, MarkerConfig):
            raise TypeError(f"EgressMarker needs a MarkerConfig, not {config!r}")
        self.config = config
        super().__init__({
            "desc": In(stream.Signature(marker_descriptor_layout(config))),
            "decision": Out(stream.Signature(marker_decision_layout(config))),
            "csr_w": In(stream.Signature(csr_write_layout(CSR_ADDR_WIDTH, CSR_DATA_WIDTH))),
            "csr_raddr": In(CSR_ADDR_WIDTH),
            "csr_rdata": Out(CSR_DATA_WIDTH),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        reset = cfg.registers()
        W, D = cfg.occ_width, cfg.draw_bits
        desc_layout = marker_descriptor_layout(cfg)

        # ---- run-time registers (declared once in MarkerConfig.register_map) ---------------
        bank = CsrBank(cfg.register_map())
        ctrl = SimpleNamespace(profile=bank.field("CTRL", "profile"),
                               compare=bank.field("CTRL", "compare"),
                               sample_at=bank.field("CTRL", "sample_at"))
        k_min, k_max, p_max = bank["K_MIN"], bank["K_MAX"], bank["P_MAX"]
        k_drop, buf_max, shared_buffer = bank["K_DROP"], bank["BUF_MAX"], bank["SHARED_BUFFER"]

        # ---- state -----------------------------------------------------------------------
        occ = [Signal(W, name=f"occ_p{i // cfg.priorities}_q{i % cfg.priorities}")
               for i in range(cfg.queues)]
        shared = Signal(W)
        lfsr = Signal(cfg.lfsr.width, init=cfg.lfsr.seed)
        counters = {reg: bank[reg.name] for reg in MarkerReg.counters()}

        # ---- pipeline registers ----------------------------------------------------------
        s1_valid = Signal()
        s1 = Signal(desc_layout)
        s1_draw = Signal(D)
        s1_q = Signal(W)                    # the queue's bytes, read when the descriptor came in
        # buf_max - length and shared_buffer - length, computed on the way in so that each limit
        # check in the queue's read-modify-write loop is one comparison, not an add + compare.
        s1_room = Signal(W + 1)             # top bit set: the packet is larger than the limit
        s1_pool_room = Signal(W + 1)
        s2_valid = Signal()
        s2 = Signal(desc_layout)
        s2_qlen = Signal(W)                 # queue bytes the decision is taken on
        s2_reason = Signal(DropReason)
        s2_eligible = Signal()              # admitted, ECT, and at the ECN sampling point
        s2_draw_span = Signal(D + W)        # r * (K_max - K_min)
        s3_valid, s3 = Signal(), Signal(desc_layout)
        s3_qlen, s3_reason, s3_eligible = Signal(W), Signal(DropReason), Signal()
        s3_draw_span = Signal(D + W)
        s3_excess = Signal(W)               # q - K_min (used only inside the ramp)
        s3_above_max, s3_above_min = Signal(), Signal()
        s4_valid, s4 = Signal(), Signal(desc_layout)
        s4_qlen, s4_reason = Signal(W), Signal(DropReason)
        s4_draw_span = Signal(D + W)
        s4_product = Signal(D + 1 + W)      # P_max * (q - K_min)
        s4_mark_full, s4_mark_ramp = Signal(), Signal()   # eligible & (above K_max | in ramp)
        increments = {reg: Signal(name=f"inc_{reg.name.lower()}") for reg in counters}
        increment_pending = Signal()

        # ---- handshake conditions ----------------------------------------------------------
        advance = ~self.decision.valid | self.decision.ready
        pipeline_empty = ~(s1_valid | s2_valid | s3_valid | s4_valid | self.decision.valid
                           | increment_pending)
        m.d.comb += self.desc.ready.eq(advance & ~self.csr_w.valid)
        desc_accept = self.desc.valid & self.desc.ready

        def at_or_above(x, k):
            return Mux(ctrl.compare == Compare.GE.value, x >= k, x > k)

        def queue_index(d):
            return d.port * cfg.priorities + d.prio

        # ---- stage 1: admission and the queue update (combinational on s1) ------------------
        s1_index = queue_index(s1)
        bad_queue = (s1.port >= cfg.ports) | (s1.prio >= cfg.priorities)
        length = s1.length
        is_enqueue = s1.op == QueueOp.ENQUEUE
        q_plus = s1_q + length
        shared_plus = shared + length
        reason = Signal(DropReason)
        with m.If(bad_queue):
            m.d.comb += reason.eq(DropReason.BAD_QUEUE)
        with m.Elif(is_enqueue):
            # q + length > buf_max  <=>  length > buf_max  or  q > buf_max - length
            with m.If(s1_room[W] | (s1_q > s1_room[:W])):
                m.d.comb += reason.eq(DropReason.QUEUE_FULL)
            with m.Elif(s1_pool_room[W] | (shared > s1_pool_room[:W])):
                m.d.comb += reason.eq(DropReason.POOL_FULL)
            with m.Elif((ctrl.profile == Profile.LDCP.value) & (s1.ecn == Ecn.NOT_ECT)
                        & at_or_above(s1_q, k_drop)):
                m.d.comb += reason.eq(DropReason.NOT_ECT_AT_K)
        with m.Elif(length > s1_q):
            m.d.comb += reason.eq(DropReason.UNDERFLOW)
        admitted = reason == DropReason.NONE
        q_minus = (s1_q - length)[:W]
        # The queue after this descriptor: written back whether or not it changed, so that the
        # write enables depend on the index only, not on the admission arithmetic.
        q_after = Signal(W)
        m.d.comb += q_after.eq(Mux(admitted, Mux(is_enqueue, q_plus[:W], q_minus), s1_q))
        sample_point = Mux(is_enqueue, SamplePoint.ENQUEUE.value, SamplePoint.DEQUEUE.value)
        ect = (s1.ecn == Ecn.ECT0) | (s1.ecn == Ecn.ECT1)

        # ---- stage 0 -> 1: take the descriptor, its random draw and its queue's bytes ----------
        in_index = queue_index(self.desc.payload)
        occ_read = Signal(W)
        with m.Switch(in_index):
            for i, counter in enumerate(occ):
                with m.Case(i):
                    m.d.comb += occ_read.eq(counter)
            with m.Default():
                m.d.comb += occ_read.eq(0)   # bad queue: the descriptor will be rejected
        # Forwarding: the descriptor in stage 1 writes its queue on the same edge.
        forward = s1_valid & (in_index == s1_index)
        lfsr_next = cfg.lfsr.next_state(lfsr, D)
        with m.If(advance):
            m.d.sync += s1_valid.eq(desc_accept)
        with m.If(desc_accept):
            m.d.sync += [
                s1.eq(self.desc.payload),
                s1_draw.eq(lfsr_next[:D]),
                s1_q.eq(Mux(forward, q_after, occ_read)),
                s1_room.eq(buf_max - self.desc.payload.length),
                s1_pool_room.eq(shared_buffer - self.desc.payload.length),
                lfsr.eq(lfsr_next),
            ]

        # ---- stage 1 -> 2: write the queue back ---------------------------------------------
        # K_max - K_min as a register: it changes only with a register write, which is taken
        # with the pipeline empty, and the first descriptor after a write reaches stage 1 no
        # sooner than a cycle later, when the register already holds the new span.
        span = Signal(W, init=(reset.k_max - reset.k_min) % (1 << W))
        m.d.sync += span.eq((k_max - k_min)[:W])
        with m.If(advance):
            m.d.sync += [
                s2_valid.eq(s1_valid),
                s2.eq(s1),
                s2_reason.eq(reason),
                s2_qlen.eq(Mux(bad_queue, 0, Mux(is_enqueue | ~admitted, s1_q, q_minus))),
                s2_eligible.eq(admitted & ect & (ctrl.sample_at == sample_point)),
                s2_draw_span.eq(s1_draw * span),
            ]
            with m.If(s1_valid):
                for i, counter in enumerate(occ):
                    with m.If(s1_index == i):
                        m.d.sync += counter.eq(q_after)
                with m.If(admitted):
                    m.d.sync += shared.eq(Mux(is_enqueue, shared_plus[:W],
                                              (shared - length)[:W]))

        # ---- stage 2 -> 3: threshold comparisons ---------------------------------------------
        with m.If(advance):
            m.d.sync += [
                s3_valid.eq(s2_valid), s3.eq(s2), s3_qlen.eq(s2_qlen),
                s3_reason.eq(s2_reason), s3_eligible.eq(s2_eligible),
                s3_draw_span.eq(s2_draw_span),
                s3_excess.eq((s2_qlen - k_min)[:W]),
                s3_above_max.eq(at_or_above(s2_qlen, k_max)),
                s3_above_min.eq(at_or_above(s2_qlen, k_min)),
            ]

        # ---- stage 3 -> 4: the ramp product --------------------------------------------------
        step_profile = ctrl.profile == Profile.DCTCP.value
        with m.If(advance):
            m.d.sync += [
                s4_valid.eq(s3_valid), s4.eq(s3), s4_qlen.eq(s3_qlen), s4_reason.eq(s3_reason),
                s4_draw_span.eq(s3_draw_span),
                s4_product.eq(p_max * s3_excess),
                s4_mark_full.eq(s3_eligible & s3_above_max),
                s4_mark_ramp.eq(s3_eligible & ~s3_above_max & s3_above_min & ~step_profile),
            ]

        # ---- stage 4 -> out: compare the draw, emit the decision -----------------------------
        mark = s4_mark_full | (s4_mark_ramp & (s4_draw_span < s4_product))
        out = self.decision.payload
        with m.If(advance):
            m.d.sync += self.decision.valid.eq(s4_valid)
            with m.If(s4_valid):
                m.d.sync += [
                    out.op.eq(s4.op),
                    out.port.eq(s4.port),
                    out.prio.eq(s4.prio),
                    out.length.eq(s4.length),
                    out.drop.eq(s4_reason != DropReason.NONE),
                    out.reason.eq(s4_reason),
                    out.ecn.eq(Mux(mark, Ecn.CE, s4.ecn)),
                    out.marked.eq(mark),
                    out.qlen.eq(s4_qlen),
                ]

        # ---- counters: increments registered with the decision, counted one cycle later ------
        done = s4_valid & advance
        accepted = s4_reason == DropReason.NONE
        conditions = {
            MarkerReg.CNT_ENQUEUED: accepted & (s4.op == QueueOp.ENQUEUE),
            MarkerReg.CNT_DEQUEUED: accepted & (s4.op == QueueOp.DEQUEUE),
            MarkerReg.CNT_MARKED: mark,
            MarkerReg.CNT_DROP_NOT_ECT: s4_reason == DropReason.NOT_ECT_AT_K,
            MarkerReg.CNT_DROP_QUEUE_FULL: s4_reason == DropReason.QUEUE_FULL,
            MarkerReg.CNT_DROP_POOL_FULL: s4_reason == DropReason.POOL_FULL,
            MarkerReg.CNT_MALFORMED: ((s4_reason == DropReason.BAD_QUEUE)
                                      | (s4_reason == DropReason.UNDERFLOW)),
        }
        m.d.sync += increment_pending.eq(done)
        for reg, counter in counters.items():
            m.d.sync += increments[reg].eq(done & conditions[reg])
            with m.If(increments[reg] & (counter != COUNTER_MAX)):
                m.d.sync += counter.eq(counter + 1)

        # ---- registers: writes while the pipeline is empty (a write wins over a count) -------
        bank.source("SHARED_OCC", shared)
        bank.build(m, self.csr_w, self.csr_raddr, self.csr_rdata, idle=pipeline_empty)

        return m
