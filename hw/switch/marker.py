"""Egress congestion point: per-(port, priority) queue occupancy and the WRED/ECN marker.

See ``docs/switch-marker.md`` for the algorithm, registers and figures, and
:mod:`sim.models.marker` for the bit-exact golden model the RTL is verified against.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..layouts import (
    Compare,
    DropReason,
    Ecn,
    MarkerCtrl,
    Profile,
    QueueOp,
    SamplePoint,
    csr_write_layout,
    marker_decision_layout,
    marker_descriptor_layout,
)
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
    csr_raddr : In(4), csr_rdata : Out(32)
        Register and counter reads; ``csr_rdata`` is valid one cycle after ``csr_raddr``.

    Latency and throughput
    ----------------------
    One descriptor per clock, sustained.  A decision leaves ``decision`` 3 cycles after its
    descriptor is accepted (pipeline: input register, queue read-modify-write, marking
    multiply-compare).  ``desc.ready`` falls only when ``decision`` is back-pressured or a
    register write is pending.
    """

    #: cycles from the accepting edge of a descriptor to the edge where its decision is valid
    LATENCY = 3

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

        # ---- run-time registers (reset values from the configuration) ----------------------
        ctrl = Signal(MarkerCtrl, init={"profile": reset.profile, "compare": reset.compare,
                                        "sample_at": reset.sample_at})
        k_min = Signal(W, init=reset.k_min)
        k_max = Signal(W, init=reset.k_max)
        p_max = Signal(D + 1, init=reset.p_max)
        k_drop = Signal(W, init=reset.k_drop)
        buf_max = Signal(W, init=reset.buf_max)
        shared_buffer = Signal(W, init=reset.shared_buffer)

        # ---- state -----------------------------------------------------------------------
        occ = [Signal(W, name=f"occ_p{i // cfg.priorities}_q{i % cfg.priorities}")
               for i in range(cfg.queues)]
        shared = Signal(W)
        lfsr = Signal(cfg.lfsr.width, init=cfg.lfsr.seed)
        counters = {reg: Signal(CSR_DATA_WIDTH, name=reg.name.lower())
                    for reg in MarkerReg.counters()}

        # ---- pipeline registers ----------------------------------------------------------
        s1_valid = Signal()
        s1 = Signal(desc_layout)
        s1_draw = Signal(D)
        s2_valid = Signal()
        s2 = Signal(desc_layout)
        s2_qlen = Signal(W)                 # queue bytes the decision is taken on
        s2_reason = Signal(DropReason)
        s2_eligible = Signal()              # admitted, and at the ECN sampling point
        s2_draw_span = Signal(D + W)        # r * (K_max - K_min)

        # ---- handshake conditions ----------------------------------------------------------
        advance = ~self.decision.valid | self.decision.ready
        pipeline_empty = ~s1_valid & ~s2_valid & ~self.decision.valid
        m.d.comb += [
            self.desc.ready.eq(advance & ~self.csr_w.valid),
            self.csr_w.ready.eq(pipeline_empty),
        ]
        desc_accept = self.desc.valid & self.desc.ready
        csr_accept = self.csr_w.valid & self.csr_w.ready

        def at_or_above(x, k):
            return Mux(ctrl.compare == Compare.GE.value, x >= k, x > k)

        # ---- stage 0 -> 1: take the descriptor and its random draw --------------------------
        lfsr_next = cfg.lfsr.next_state(lfsr, D)
        with m.If(advance):
            m.d.sync += s1_valid.eq(desc_accept)
        with m.If(desc_accept):
            m.d.sync += [s1.eq(self.desc.payload), s1_draw.eq(lfsr_next[:D]), lfsr.eq(lfsr_next)]

        # ---- stage 1 -> 2: queue read-modify-write and admission ----------------------------
        bad_queue = (s1.port >= cfg.ports) | (s1.prio >= cfg.priorities)
        index = s1.port * cfg.priorities + s1.prio
        q = Signal(W)                      # the queue's bytes, read through an explicit mux
        with m.Switch(index):
            for i, counter in enumerate(occ):
                with m.Case(i):
                    m.d.comb += q.eq(counter)
            with m.Default():
                m.d.comb += q.eq(0)         # only for bad_queue, whose descriptor is rejected
        length = s1.length
        is_enqueue = s1.op == QueueOp.ENQUEUE
        q_plus = q + length
        shared_plus = shared + length
        reason = Signal(DropReason)
        with m.If(bad_queue):
            m.d.comb += reason.eq(DropReason.BAD_QUEUE)
        with m.Elif(is_enqueue):
            with m.If(q_plus > buf_max):
                m.d.comb += reason.eq(DropReason.QUEUE_FULL)
            with m.Elif(shared_plus > shared_buffer):
                m.d.comb += reason.eq(DropReason.POOL_FULL)
            with m.Elif((ctrl.profile == Profile.LDCP.value) & (s1.ecn == Ecn.NOT_ECT)
                        & at_or_above(q, k_drop)):
                m.d.comb += reason.eq(DropReason.NOT_ECT_AT_K)
        with m.Elif(length > q):
            m.d.comb += reason.eq(DropReason.UNDERFLOW)
        admitted = reason == DropReason.NONE
        q_minus = (q - length)[:W]
        sample_point = Mux(is_enqueue, SamplePoint.ENQUEUE.value, SamplePoint.DEQUEUE.value)

        span = (k_max - k_min)[:W]
        with m.If(advance):
            m.d.sync += [
                s2_valid.eq(s1_valid),
                s2.eq(s1),
                s2_reason.eq(reason),
                s2_qlen.eq(Mux(bad_queue, 0, Mux(is_enqueue | ~admitted, q, q_minus))),
                s2_eligible.eq(admitted & (ctrl.sample_at == sample_point)),
                s2_draw_span.eq(s1_draw * span),
            ]
            with m.If(s1_valid & admitted):
                q_after = Mux(is_enqueue, q_plus[:W], q_minus)
                for i, counter in enumerate(occ):
                    with m.If(index == i):
                        m.d.sync += counter.eq(q_after)
                m.d.sync += shared.eq(Mux(is_enqueue, shared_plus[:W], (shared - length)[:W]))

        # ---- stage 2 -> out: marking (multiply-compare against the draw) --------------------
        ramp_hit = s2_draw_span < p_max * (s2_qlen - k_min)[:W]
        mark_rule = Mux(ctrl.profile == Profile.DCTCP.value,
                        at_or_above(s2_qlen, k_max),
                        at_or_above(s2_qlen, k_max) | (at_or_above(s2_qlen, k_min) & ramp_hit))
        ect = (s2.ecn == Ecn.ECT0) | (s2.ecn == Ecn.ECT1)
        mark = s2_eligible & ect & mark_rule
        out = self.decision.payload
        with m.If(advance):
            m.d.sync += self.decision.valid.eq(s2_valid)
            with m.If(s2_valid):
                m.d.sync += [
                    out.op.eq(s2.op),
                    out.port.eq(s2.port),
                    out.prio.eq(s2.prio),
                    out.length.eq(s2.length),
                    out.drop.eq(s2_reason != DropReason.NONE),
                    out.reason.eq(s2_reason),
                    out.ecn.eq(Mux(mark, Ecn.CE, s2.ecn)),
                    out.marked.eq(mark),
                    out.qlen.eq(s2_qlen),
                ]

        # ---- counters (saturating) and register writes -------------------------------------
        done = s2_valid & advance
        increments = {
            MarkerReg.CNT_ENQUEUED: (s2_reason == DropReason.NONE) & (s2.op == QueueOp.ENQUEUE),
            MarkerReg.CNT_DEQUEUED: (s2_reason == DropReason.NONE) & (s2.op == QueueOp.DEQUEUE),
            MarkerReg.CNT_MARKED: mark,
            MarkerReg.CNT_DROP_NOT_ECT: s2_reason == DropReason.NOT_ECT_AT_K,
            MarkerReg.CNT_DROP_QUEUE_FULL: s2_reason == DropReason.QUEUE_FULL,
            MarkerReg.CNT_DROP_POOL_FULL: s2_reason == DropReason.POOL_FULL,
            MarkerReg.CNT_MALFORMED: ((s2_reason == DropReason.BAD_QUEUE)
                                      | (s2_reason == DropReason.UNDERFLOW)),
        }
        for reg, counter in counters.items():
            with m.If(done & increments[reg] & (counter != COUNTER_MAX)):
                m.d.sync += counter.eq(counter + 1)

        writable = {
            MarkerReg.CTRL: ctrl.as_value(), MarkerReg.K_MIN: k_min, MarkerReg.K_MAX: k_max,
            MarkerReg.P_MAX: p_max, MarkerReg.K_DROP: k_drop, MarkerReg.BUF_MAX: buf_max,
            MarkerReg.SHARED_BUFFER: shared_buffer, **counters,
        }
        wdata = self.csr_w.payload.data
        for reg, target in writable.items():
            with m.If(csr_accept & (self.csr_w.payload.addr == reg)):
                m.d.sync += target.eq(wdata[:len(target)])

        readable = {**writable, MarkerReg.SHARED_OCC: shared}
        with m.Switch(self.csr_raddr):
            for reg, source in readable.items():
                with m.Case(reg):
                    m.d.sync += self.csr_rdata.eq(source)
            with m.Default():
                m.d.sync += self.csr_rdata.eq(0)

        return m
