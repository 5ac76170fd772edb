"""Egress congestion point: per-(port, priority) queue occupancy and the WRED/ECN marker.

See ``docs/switch-marker.md`` for the algorithm, registers and figures, and
:mod:`sim.models.marker` for the bit-exact golden model the RTL is verified against.
"""

from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Cat, Module, Mux, Signal, signed
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
from ..lib.bram import Bram
from ..lib.csr import CsrBank
from ..lib.pipemul import pipelined_product, product_levels
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

    Queue occupancies live in block RAM (:class:`hw.lib.bram.Bram`, one ``occ_width``-bit word
    per queue, read latency 2: addressed when the descriptor is accepted, the word in the RAM's
    own output register in stage B; written back from registers after admission); the five
    descriptors ahead whose write-back the read cannot have seen are forwarded (the one two
    ahead from its stage-2 register, in stage C; the three before it from theirs, into stage
    C), so back-to-back descriptors of one queue see each other's updates exactly.  The
    descriptor just ahead is still being admitted when this one's limits are compared, so
    every comparison is made for both of its outcomes and admission only selects: each check
    is true only where it rejects (the operation, a bad queue, a bubble and the Not-ECT rule
    are folded into its limit), so admission is a NOR of four bits per outcome and the loop
    from one admission to the next is one slice.  After a reset the
    block spends ``ports * priorities`` clocks writing every occupancy to 0 (``desc.ready``
    low), so a reset empties every queue.

    Latency and throughput
    ----------------------
    One descriptor per clock, sustained.  With an always-ready sink, a decision is transferred
    13 clock edges after its descriptor (stages: block-RAM read and its output register,
    forwarding of queues in flight, limit comparisons, admission, threshold comparisons, five
    for the ramp product, draw comparison, decision).
    The two products of the ramp (``r * (K_max - K_min)`` and ``P_max * (q - K_min)``) are
    shift-and-add trees in logic with a register per level (:mod:`hw.lib.pipemul`): a product
    in the FPGA's multiplier blocks, unregistered, would hold the clock near 125 MHz.  The
    trees add two terms per level (``fan_in=2``), one carry chain between registers: with
    four terms per level (two chains and the partial-product selection) the first level
    was the critical path at 8.4 ns (119 MHz).
    ``desc.ready`` falls only when ``decision`` is back-pressured, a register write is
    pending or the occupancies are being cleared after a reset.  Counters advance one cycle
    after the decision they count.
    """

    #: clock edges from the transfer of a descriptor to the transfer of its decision
    LATENCY = 13
    #: register levels of the ramp products (enough for draw_bits up to 24 at MUL_FAN_IN 2)
    MUL_STAGES = 5
    #: terms added per register level of the ramp products: two is one carry chain per stage
    MUL_FAN_IN = 2

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
        # One word per queue in block RAM: a switch radix (1024 x 8) is 8192 words, which as
        # flip-flops would be a 200k-line netlist and a 13-bit multiplexer on the critical loop.
        # Read latency 2 (hw/lib/bram.py): the address at accept, the word in stage B.  The
        # RAM's own output register (DP16KD OUTREG on the ECP5) is stage B's word register:
        # a fabric register after an unregistered DP16KD read (5.8 ns from clock to data) was
        # the critical path at 122.7 MHz.  The read and output registers move only with the
        # pipeline (r_en = advance), so a stall holds the word beside its descriptor.
        # (at least two words: a zero-width address would not export)
        occ = Bram(W, max(cfg.queues, 2), name="occ")
        occ.build(m, platform)
        # port * priorities + prio for every encodable (port, prio), so that an index out of
        # range is compared exactly (such descriptors are rejected and never written back).
        index_shape = range(((1 << cfg.port_width) - 1) * cfg.priorities
                            + (1 << cfg.prio_width))
        shared = Signal(W)
        lfsr = Signal(cfg.lfsr.width, init=cfg.lfsr.seed)
        counters = {reg: bank[reg.name] for reg in MarkerReg.counters()}

        # ---- pipeline registers ----------------------------------------------------------
        # Stages A (block RAM read), B (the queue's bytes, forwarded), C (every limit check
        # computed twice), 1 (admission), 2 (write-back), 3 (thresholds), then the products.
        # Limits adjusted by a signed packet length: from -2**(len_width + 1) to
        # 2**occ_width + 2**len_width.  A limit in stage C is never negative (clamped at 0, the
        # same outcome for a non-negative count), so it is compared unsigned: one carry chain
        # whose carry is the result.
        SW = signed(max(W, cfg.len_width) + 2)
        LW = SW.width                       # an unsigned limit, 0 .. 2**(LW - 1) - 1
        s0_valid, s0 = Signal(), Signal(desc_layout)       # stage A
        s0_index, s0_draw, s0_bad = Signal(index_shape), Signal(D), Signal()
        s0_delta = Signal(signed(cfg.len_width + 1))       # +length (enqueue), -length (dequeue)
        # the smallest queue (pool) count at which this packet no longer fits:
        # q + length > buf_max  <=>  q >= buf_max + 1 - length (and shared_buffer for the pool)
        s0_room, s0_pool_room = Signal(SW), Signal(SW)
        # Whether the descriptor 1, 2, 3, 4 or 5 places ahead is for this queue: the block RAM
        # read cannot have seen their write-backs.  The one just ahead (same0) is still being
        # decided when this one's limits are checked, so each check is made both ways.
        s0_same0, s0_f1, s0_f2, s0_f3, s0_f4 = (Signal(name=f"s0_{n}") for n in
                                                ("same0", "f1", "f2", "f3", "f4"))
        sb_valid, sb = Signal(), Signal(desc_layout)        # stage B
        sb_index, sb_draw, sb_bad = Signal(index_shape), Signal(D), Signal()
        sb_delta = Signal.like(s0_delta)
        sb_same_delta = Signal.like(s0_delta)   # the length of the one just ahead if ours, else 0
        sb_room, sb_pool_room = Signal(SW), Signal(SW)
        sb_f1, sb_f2, sb_f3, sb_f4 = (Signal(name=f"sb_{n}") for n in ("f1", "f2", "f3", "f4"))
        sb_mem = occ.r_data                                 # the block RAM's word (stage B)
        sc_valid, sc = Signal(), Signal(desc_layout)        # stage C
        sc_index, sc_draw, sc_bad = Signal(index_shape), Signal(D), Signal()
        sc_f1 = Signal()                    # the descriptor two ahead (now in stage 2) is ours
        sc_q_old = Signal(W)                # the queue's bytes before the descriptor two ahead
        sc_delta, sc_delta_prev = Signal.like(s0_delta), Signal.like(s0_delta)
        sc_delta_sum = Signal(signed(cfg.len_width + 2))
        # the limits of the checks of stage C, unsigned: full if q >= room, pool full if
        # shared >= pool_room, Not-ECT drop if q >= k_drop, underflow if q < under
        sc_room, sc_room_adj = Signal(LW), Signal(LW)
        sc_pool_room, sc_pool_room_adj = Signal(LW), Signal(LW)
        sc_under, sc_under_adj = Signal(cfg.len_width), Signal(LW)
        sc_k_drop, sc_k_drop_adj = Signal(LW), Signal(LW)
        s1_valid = Signal()
        s1_index = Signal(index_shape)
        s1 = Signal(desc_layout)
        s1_draw, s1_bad = Signal(D), Signal()
        # Suffix _a: the descriptor just ahead was not admitted; _b: it was (for another queue,
        # the _b queue bytes and checks other than the pool's equal the _a ones).  Each check
        # is true only where it rejects this descriptor (a bubble or a bad queue is "full"),
        # so that admission is the NOR of four bits.
        s1_qa, s1_qb, s1_qa_after, s1_qb_after = (Signal(W, name=f"s1_{n}") for n in
                                                  ("qa", "qb", "qa_after", "qb_after"))
        s1_full_a, s1_full_b, s1_pool_a, s1_pool_b = (Signal(name=f"s1_{n}") for n in
                                                      ("full_a", "full_b", "pool_a", "pool_b"))
        s1_kd_a, s1_kd_b, s1_under_a, s1_under_b = (Signal(name=f"s1_{n}") for n in
                                                    ("kd_a", "kd_b", "under_a", "under_b"))
        s1_delta = Signal.like(s0_delta)
        s2_valid = Signal()
        s2 = Signal(desc_layout)
        s2_index, s2_bad, s2_q_after = Signal(index_shape), Signal(), Signal(W)
        s2_admitted = Signal()              # valid and admitted (changed its queue and the pool)
        NEVER = 1 << W                      # a limit no queue or pool count reaches
        s3_q_after, s4_q_after = Signal(W), Signal(W)
        s2_qlen = Signal(W)                 # queue bytes the decision is taken on
        s2_reason = Signal(DropReason)
        s2_eligible = Signal()              # admitted, ECT, and at the ECN sampling point
        s3_valid, s3 = Signal(), Signal(desc_layout)
        s3_qlen, s3_reason, s3_eligible = Signal(W), Signal(DropReason), Signal()
        s3_excess = Signal(W)               # q - K_min (used only inside the ramp)
        s3_above_max, s3_above_min = Signal(), Signal()
        s4_valid, s4 = Signal(), Signal(desc_layout)
        s4_qlen, s4_reason = Signal(W), Signal(DropReason)
        s4_mark_full, s4_mark_ramp = Signal(), Signal()   # eligible & (above K_max | in ramp)
        increments = {reg: Signal(name=f"inc_{reg.name.lower()}") for reg in counters}
        increment_pending = Signal()

        # ---- handshake conditions ----------------------------------------------------------
        advance = ~self.decision.valid | self.decision.ready
        in_flight = [s0_valid, sb_valid, sc_valid, s1_valid, s2_valid, s3_valid]  # + products
        clearing = Signal(init=1)           # writing every occupancy to 0 after a reset
        m.d.comb += self.desc.ready.eq(advance & ~self.csr_w.valid & ~clearing)
        desc_accept = self.desc.valid & self.desc.ready

        # Each "at or above K" is ``x >= threshold``: K under the ``ge`` convention, K + 1 under
        # ``gt`` (x > K <=> x >= K + 1).  The thresholds are registers, like ``span`` below:
        # they change only with a register write, taken with the pipeline empty, and the first
        # descriptor after it compares no sooner than two cycles later.  One carry chain per
        # comparison, straight into its register: both conventions computed and then selected
        # put three multiplexer levels behind the chain (the critical path, 6.7 ns).
        def threshold(k, name):
            t = Signal(W + 1, name=name, init=getattr(reset, name) + reset.compare)
            m.d.sync += t.eq(k + ctrl.compare)
            return t
        assert Compare.GT.value == 1 and Compare.GE.value == 0    # the added 1 is the field
        th_k_drop, th_k_min, th_k_max = (threshold(k, n) for k, n in
                                         ((k_drop, "k_drop"), (k_min, "k_min"), (k_max, "k_max")))
        # buf_max + 1 and shared_buffer + 1 (q + length > buf_max <=> q >= buf_max + 1 - length)
        th_buf = Signal(W + 1, init=reset.buf_max + 1)
        th_pool = Signal(W + 1, init=reset.shared_buffer + 1)
        m.d.sync += [th_buf.eq(buf_max + 1), th_pool.eq(shared_buffer + 1)]

        def queue_index(d):
            return d.port * cfg.priorities + d.prio

        # ---- stage 1: admission and the queue update (combinational on s1) ------------------
        # The loop from one descriptor's admission to the next one's is a multiplexer: every
        # comparison was made in stage C for both outcomes of the descriptor just ahead.
        # Stage C made each check true only where it rejects (the operation, a bad queue, a
        # bubble and the Not-ECT rule are in its limits) and for the descriptor just ahead
        # only if it is for this queue (the pool's for any), so admission is a NOR of four
        # bits for each outcome and the admission of the one just ahead selects: one slice
        # from s2_admitted to s2_admitted.  (The choice made here, through the priority of
        # the drop reasons, was five LUT levels: 6.9 ns, 145 MHz.)
        is_enqueue = s1.op == QueueOp.ENQUEUE
        adm_a = ~(s1_full_a | s1_pool_a | s1_kd_a | s1_under_a)
        adm_b = ~(s1_full_b | s1_pool_b | s1_kd_b | s1_under_b)
        admitted = Signal()
        m.d.comb += admitted.eq(Mux(s2_admitted, adm_b, adm_a))
        q = Mux(s2_admitted, s1_qb, s1_qa)
        # The queue after this descriptor: written back whether or not it changed, so that the
        # write enables depend on the index only, not on the admission arithmetic.
        q_after = Signal(W)
        m.d.comb += q_after.eq(Mux(s2_admitted, Mux(adm_b, s1_qb_after, s1_qb),
                                   Mux(adm_a, s1_qa_after, s1_qa)))
        reason = Signal(DropReason)         # (the checks of an operation's other kind are 0)
        with m.If(s1_bad):
            m.d.comb += reason.eq(DropReason.BAD_QUEUE)
        with m.Elif(Mux(s2_admitted, s1_full_b, s1_full_a)):
            m.d.comb += reason.eq(DropReason.QUEUE_FULL)
        with m.Elif(Mux(s2_admitted, s1_pool_b, s1_pool_a)):
            m.d.comb += reason.eq(DropReason.POOL_FULL)
        with m.Elif(Mux(s2_admitted, s1_kd_b, s1_kd_a)):
            m.d.comb += reason.eq(DropReason.NOT_ECT_AT_K)
        with m.Elif(Mux(s2_admitted, s1_under_b, s1_under_a)):
            m.d.comb += reason.eq(DropReason.UNDERFLOW)
        sample_point = Mux(is_enqueue, SamplePoint.ENQUEUE.value, SamplePoint.DEQUEUE.value)
        ect = (s1.ecn == Ecn.ECT0) | (s1.ecn == Ecn.ECT1)

        # ---- accept -> stage A: take the descriptor and its random draw, read its queue -------
        d_in = self.desc.payload
        in_index = queue_index(d_in)
        lfsr_next = cfg.lfsr.next_state(lfsr, D)
        # (the address through a multiplexer of its own width: as a slice of the wider index,
        # the Verilog would read the RAM at the slice and leave occ_r_addr an unused alias;
        # the address of a cycle that accepts nothing is not used)
        aw = occ.r_addr.shape().width
        m.d.comb += [occ.r_addr.eq(Mux(self.desc.valid, in_index[:aw], 0)),
                     occ.r_en.eq(advance)]
        with m.If(advance):
            m.d.sync += s0_valid.eq(desc_accept)
        with m.If(desc_accept):
            m.d.sync += [
                s0.eq(d_in),
                s0_index.eq(in_index),
                s0_bad.eq((d_in.port >= cfg.ports) | (d_in.prio >= cfg.priorities)),
                s0_draw.eq(lfsr_next[:D]),
                s0_delta.eq(Mux(d_in.op == QueueOp.ENQUEUE, d_in.length, -d_in.length)),
                s0_room.eq(th_buf - d_in.length),
                s0_pool_room.eq(th_pool - d_in.length),
                s0_same0.eq(s0_valid & (s0_index == in_index)),
                s0_f1.eq(sb_valid & (sb_index == in_index)),
                s0_f2.eq(sc_valid & (sc_index == in_index)),
                s0_f3.eq(s1_valid & (s1_index == in_index)),
                s0_f4.eq(s2_valid & (s2_index == in_index)),
                lfsr.eq(lfsr_next),
            ]

        # Stage C: the queue's bytes before the descriptor just ahead.  The one two ahead is in
        # stage 2 now, its new queue bytes a register (s2_q_after): a multiplexer of registers
        # in front of the adders.  The limit checks are made on both words and selected after
        # their carry chains: the multiplexer and its fan-out in front of them were the
        # critical path (6.5 ns, 153-154 MHz for marker_1x1 and marker_8x8).
        sc_q = Signal(W)
        m.d.comb += sc_q.eq(Mux(sc_f1, s2_q_after, sc_q_old))

        def check(f):                       # a limit check on both words, then selected
            return Mux(sc_f1, f(s2_q_after), f(sc_q_old))
        # Stage B: which checks can reject this descriptor, folded into the limits of stage C
        # (an impossible limit, NEVER, for the others), and the length of the descriptor just
        # ahead only if it is for this queue (sc holds it; same0 implies it is valid).
        b_reject = ~sb_valid | sb_bad
        b_enqueue = ~b_reject & (sb.op == QueueOp.ENQUEUE)
        b_dequeue = ~b_reject & (sb.op == QueueOp.DEQUEUE)
        b_not_ect_drop = b_enqueue & (ctrl.profile == Profile.LDCP.value) & (sb.ecn == Ecn.NOT_ECT)
        same_delta = sb_same_delta

        def clamp(v):                       # a signed limit as an unsigned one: below 0 is 0
            return Mux(v.as_signed() < 0, 0, v.as_unsigned()[:LW])

        with m.If(advance):
            # ---- stage A -> B: the block RAM's output register takes the word (occ.r_data) ------
            m.d.sync += [
                sb_valid.eq(s0_valid), sb.eq(s0), sb_index.eq(s0_index), sb_draw.eq(s0_draw),
                sb_bad.eq(s0_bad), sb_delta.eq(s0_delta), sb_room.eq(s0_room),
                sb_pool_room.eq(s0_pool_room), sb_f1.eq(s0_f1),
                sb_f2.eq(s0_f2), sb_f3.eq(s0_f3), sb_f4.eq(s0_f4),
                # (sb holds the one just ahead; chosen here, not in front of stage B's
                # adders, where it was the critical path at 6.3-7.3 ns)
                sb_same_delta.eq(Mux(s0_same0, sb_delta, 0)),
            ]
            # ---- stage B -> C: the queue's bytes before the descriptor two ahead --------------
            # Newest first: the ones in stages 2, 3 and 4 (registered), else the block RAM's
            # word.  The one two ahead, in stage 1 now, is taken in stage C from its stage-2
            # register (below): its new queue bytes straight from the admission into this
            # register were the critical path (6.7-7.1 ns, 141-149 MHz).
            m.d.sync += [
                sc_valid.eq(sb_valid), sc.eq(sb), sc_index.eq(sb_index), sc_draw.eq(sb_draw),
                sc_bad.eq(sb_bad), sc_f1.eq(sb_f1),
                sc_q_old.eq(Mux(sb_f2, s2_q_after, Mux(sb_f3, s3_q_after,
                                                       Mux(sb_f4, s4_q_after, sb_mem)))),
                sc_delta.eq(sb_delta),
                sc_delta_prev.eq(same_delta),
                sc_delta_sum.eq(sb_delta + same_delta),
                # (a room of 0: always "full", which rejects a bubble or a bad queue)
                sc_room.eq(Mux(b_reject, 0, Mux(b_enqueue, clamp(sb_room), NEVER))),
                sc_room_adj.eq(Mux(b_reject, 0, Mux(b_enqueue, clamp(sb_room - same_delta),
                                                    NEVER))),
                sc_pool_room.eq(Mux(b_enqueue, clamp(sb_pool_room), NEVER)),
                sc_pool_room_adj.eq(Mux(b_enqueue, clamp(sb_pool_room - sc_delta), NEVER)),
                sc_k_drop.eq(Mux(b_not_ect_drop, th_k_drop, NEVER)),
                sc_k_drop_adj.eq(Mux(b_not_ect_drop, clamp(th_k_drop - same_delta), NEVER)),
                sc_under.eq(Mux(b_dequeue, sb.length, 0)),
                sc_under_adj.eq(Mux(b_dequeue, clamp(sb.length - same_delta), 0)),
            ]
            # ---- stage C -> 1: every limit check for both outcomes of the one just ahead -----
            m.d.sync += [
                s1_valid.eq(sc_valid), s1.eq(sc), s1_index.eq(sc_index), s1_draw.eq(sc_draw),
                s1_bad.eq(sc_bad), s1_delta.eq(sc_delta),
                s1_qa.eq(sc_q), s1_qb.eq((sc_q + sc_delta_prev)[:W]),
                s1_qa_after.eq((sc_q + sc_delta)[:W]), s1_qb_after.eq((sc_q + sc_delta_sum)[:W]),
                s1_full_a.eq(check(lambda q: q >= sc_room)),
                s1_full_b.eq(check(lambda q: q >= sc_room_adj)),
                # the pool register does not yet hold the change of the one just ahead
                s1_pool_a.eq(shared >= sc_pool_room), s1_pool_b.eq(shared >= sc_pool_room_adj),
                s1_kd_a.eq(check(lambda q: q >= sc_k_drop)),
                s1_kd_b.eq(check(lambda q: q >= sc_k_drop_adj)),
                s1_under_a.eq(check(lambda q: q < sc_under)),
                s1_under_b.eq(check(lambda q: q < sc_under_adj)),
            ]

        # ---- stage 1 -> 2 -> 3: the queue's write-back, from registers -----------------------
        # K_max - K_min as a register: it changes only with a register write, which is taken
        # with the pipeline empty, and the first descriptor after a write reaches stage 1 no
        # sooner than a cycle later, when the register already holds the new span.
        span = Signal(W, init=(reset.k_max - reset.k_min) % (1 << W))
        m.d.sync += span.eq((k_max - k_min)[:W])
        with m.If(advance):
            m.d.sync += [
                s2_valid.eq(s1_valid),
                s2.eq(s1),
                s2_index.eq(s1_index), s2_bad.eq(s1_bad), s2_q_after.eq(q_after),
                s2_admitted.eq(admitted),
                s3_q_after.eq(s2_q_after), s4_q_after.eq(s3_q_after),
                s2_reason.eq(reason),
                s2_qlen.eq(Mux(s1_bad, 0, Mux(is_enqueue | ~admitted, q, q_after))),
                s2_eligible.eq(admitted & ect & (ctrl.sample_at == sample_point)),
            ]
            with m.If(admitted):          # (a bubble is never admitted)
                m.d.sync += shared.eq((shared + s1_delta)[:W])
        # The write-back is unconditional (an unchanged queue writes its own value), so the
        # write enable depends on the index only, not on the admission arithmetic.
        clear_index = Signal(range(max(cfg.queues, 2)))
        with m.If(clearing):
            m.d.comb += [occ.w_addr.eq(clear_index), occ.w_data.eq(0), occ.w_en.eq(1)]
            m.d.sync += clear_index.eq(clear_index + 1)
            with m.If(clear_index == cfg.queues - 1):
                m.d.sync += clearing.eq(0)
        with m.Else():
            m.d.comb += [occ.w_addr.eq(s2_index), occ.w_data.eq(s2_q_after),
                         occ.w_en.eq(advance & s2_valid & ~s2_bad)]

        # ---- stage 2 -> 3: threshold comparisons ---------------------------------------------
        with m.If(advance):
            m.d.sync += [
                s3_valid.eq(s2_valid), s3.eq(s2), s3_qlen.eq(s2_qlen),
                s3_reason.eq(s2_reason), s3_eligible.eq(s2_eligible),
                s3_excess.eq((s2_qlen - k_min)[:W]),
                s3_above_max.eq(s2_qlen >= th_k_max),
                s3_above_min.eq(s2_qlen >= th_k_min),
            ]

        # ---- stage 3 -> 4: the ramp products, MUL_STAGES register levels ---------------------
        # r * (K_max - K_min) starts in stage 1 (the draw and the span are known there) and
        # P_max * (q - K_min) in stage 3; both are ready, with the descriptor, in stage 4.
        assert product_levels(D + 1, self.MUL_FAN_IN) <= self.MUL_STAGES
        draw_span, _ = pipelined_product(m, span, s1_draw, en=advance, name="draw_span",
                                         fan_in=self.MUL_FAN_IN, stages=2 + self.MUL_STAGES)
        product, _ = pipelined_product(m, s3_excess, p_max, en=advance, name="ramp",
                                       fan_in=self.MUL_FAN_IN, stages=self.MUL_STAGES)
        step_profile = ctrl.profile == Profile.DCTCP.value
        carried = [
            ("valid", s3_valid, s4_valid, 1), ("desc", s3, s4, desc_layout),
            ("qlen", s3_qlen, s4_qlen, W), ("reason", s3_reason, s4_reason, DropReason),
            ("mark_full", s3_eligible & s3_above_max, s4_mark_full, 1),
            ("mark_ramp", s3_eligible & ~s3_above_max & s3_above_min & ~step_profile,
             s4_mark_ramp, 1),
        ]
        for what, src, dst, shape in carried:    # the descriptor waits beside the products
            for k in range(self.MUL_STAGES):
                last = k == self.MUL_STAGES - 1
                reg = dst if last else Signal(shape, name=f"mul{k}_{what}")
                with m.If(advance):
                    m.d.sync += reg.eq(src)
                if dst is s4_valid:
                    in_flight.append(reg)
                src = reg

        # ---- stage 4 -> 5: compare the draw (a 40-bit carry chain of its own: after it the
        # ECN rewrite and the counter increments were the critical path, 6.9 ns) -------------
        s5_valid, s5 = Signal(), Signal(desc_layout)
        s5_qlen, s5_reason, s5_mark = Signal(W), Signal(DropReason), Signal()
        in_flight.append(s5_valid)
        with m.If(advance):
            m.d.sync += [s5_valid.eq(s4_valid), s5.eq(s4), s5_qlen.eq(s4_qlen),
                         s5_reason.eq(s4_reason),
                         s5_mark.eq(s4_mark_full | (s4_mark_ramp & (draw_span < product)))]
        s4_valid, s4, s4_qlen, s4_reason, mark = s5_valid, s5, s5_qlen, s5_reason, s5_mark

        # ---- stage 5 -> out: emit the decision ---------------------------------------------------
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
        # Registered, one cycle behind: empty at the last edge and nothing accepted on it means
        # empty now (descriptors only enter through desc_accept).  The OR of every stage's
        # valid bit straight into the write enables of the registers was the critical path.
        pipeline_empty = ~Cat(*in_flight, self.decision.valid, increment_pending).any()
        # (kept inverted: as ``idle`` itself it would be an alias of csr_w.ready, an unused
        # wire in the Verilog)
        was_busy = Signal()
        m.d.sync += was_busy.eq(~pipeline_empty | desc_accept)
        bank.source("SHARED_OCC", shared)
        bank.build(m, self.csr_w, self.csr_raddr, self.csr_rdata, idle=~was_busy)

        return m
