"""Formal properties of the switch egress marker (:mod:`hw.switch.marker`).

The harness is a miter between the 13-stage pipelined :class:`EgressMarker` and a
one-descriptor-at-a-time reference written here from the algorithm (the golden model's
``step``): the reference takes each descriptor when it is accepted, decides it on its own
occupancy registers (per queue and the shared pool, updated at once) and its own copy of the
LFSR, and puts the expected decision into a delay line that moves when the marker's pipeline
moves (``~decision.valid | decision.ready``, observed on the ports).  Any descriptor stream
(any queue, including an out-of-range one, any length, ECN and operation) is allowed, with or
without back-pressure on ``decision``, from the reset state (the reset sweep of the block
RAM included); the registers keep their reset values (no register writes; small values, so
that every limit is reached within the bound).

``marker.occupancy`` / ``marker.occupancy_stalls`` assert, every cycle:

* **decisions**: ``decision.valid`` exactly when the reference has a decision due, and then
  drop, reason, qlen and the echoed descriptor equal the reference's, so back-to-back
  descriptors of one queue see each other's updates exactly (forwarding of the five in
  flight, both outcomes of the one just ahead); the same fields are also checked in stage 2
  (white-box: ``s2_valid``, ``s2``, ``s2_reason``, ``s2_qlen``), where the decision is made
  and from where the queue is written back, 5 cycles after acceptance;
* **occupancy bounds**: every queue's block-RAM word (read through an asynchronous read port
  the harness adds to the marker's memory) is ``<= buf_max``: it never exceeds the limit and
  never underflows (a wrap would exceed it);
* **consistency**: when the pipeline is empty (and was a cycle ago) after the reset sweep,
  every block-RAM word equals the reference's queue and ``SHARED_OCC`` (read on the register
  port) equals the reference's pool total, which is asserted to be the sum of its queues and
  at most ``shared_buffer``.

``marker.marking.*`` assert that each decision's ``marked`` and ECN are the ramp/threshold
rule applied to the decision's own ``qlen`` and the draw of its descriptor (eligibility,
``K_min``/``K_max`` comparisons, the two ramp products against each other).

Bounded: the decision of a descriptor depends on the occupancy state, which the BMC reaches
from reset (the covers show every queue full, the pool full, an underflow, an out-of-range
queue, a mark and back-to-back same-queue descriptors at the limit), and on the descriptors of
the 5 cycles before it.  The occupancy properties run on :class:`ShortRampMarker` (the ramp
products in 3 register levels instead of 5: the decision leaves 11 cycles after acceptance
instead of 13; the occupancy path is the same) with ``OCC_DEPTH`` 16: the reset sweep, then
every descriptor accepted by step 10 (9 back to back after the sweep: the 7th and later with
5 ahead in flight and one or more written back, i.e. every forwarding path) checked in stage
2, and the first 3 also at the output (the carrying of every field through the later
stages).  ``marker.occupancy_stalls`` has the same bound, stalled anywhere.  The marking
properties (the products themselves) run on the marker as it is, ``DEPTH`` 22: the 7
descriptors accepted back to back after the sweep, at the output.  The solver's time grows
steeply with the depth: the occupancy miter at its former bound 22 (every descriptor checked
at the output only) did not finish in 10 minutes on the loaded machine.
"""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Cat, Const, Cover, Module, Mux, ResetSignal, Signal, Value
from amaranth.hdl._ast import AnySeq
from amaranth.lib import data

from hw.layouts import DropReason, Ecn, QueueOp, marker_decision_layout, marker_descriptor_layout
from hw.lib.pipemul import product_levels
from hw.switch.marker import EgressMarker
from hw.switch.marker_config import MarkerConfig, MarkerReg

from .runner import Property

__all__ = ["PROPERTIES", "small_config"]

LATENCY = EgressMarker.LATENCY


def small_config(profile: str = "ldcp", compare: str = "ge",
                 sample_at: str = "enqueue") -> MarkerConfig:
    """1 port x 2 priorities (port 1 is out of range: the port field is one bit), 3-bit
    lengths, 8-bit occupancies, 4-bit draws; every limit two or three packets deep."""
    kw = dict(ports=1, priorities=2, len_width=3, occ_width=8, draw_bits=4, k_min=2,
              k_max=8, p_max=0.5, buf_max=12, shared_buffer=18, compare=compare,
              sample_at=sample_at)
    if profile == "ldcp":
        return MarkerConfig.ldcp(k_drop=4, **kw)
    return MarkerConfig.dcqcn(**kw)


class ShortRampMarker(EgressMarker):
    """The marker with its ramp products in the fewest register levels the harness's 4-bit
    draws allow (3 instead of ``EgressMarker.MUL_STAGES``, 5), for the occupancy properties.

    Those levels hold the two products and, beside them, the descriptor, its ``qlen`` and
    reason unchanged (one register each per level, all enabled by ``advance``, as every
    stage is); the queue's bytes are read, forwarded, admitted and written back in stages A,
    B, C, 1 and 2 (forwarded from stages 1 to 4), before the products.  So the occupancy
    claims (the decision's drop, reason and qlen, the RAM words, the pool) are the same on
    this instance, whose decisions come 2 cycles sooner: 2 steps less of BMC for the same
    descriptors checked.  The marking properties, which check the products, use the marker
    as it is."""
    MUL_STAGES = product_levels(4 + 1, EgressMarker.MUL_FAN_IN)
    LATENCY = EgressMarker.LATENCY - (EgressMarker.MUL_STAGES - MUL_STAGES)


def marker_with_ram_ports(m, cfg, cls=EgressMarker):
    """The marker of ``cfg`` (class ``cls``) as a submodule of ``m`` (elaborated here, to reach
    its block RAM), with one combinational read port per queue added to its occupancy memory:
    ``(dut, words)``, ``words[i]`` queue i's occupancy word."""
    dut = cls(cfg)
    dut._MustUse__silence = True
    inner = dut.elaborate(None)
    dut.formal_inner = inner                # for internal_signals()
    m.submodules.dut = inner
    occ_mem = inner._named_submodules["occ"][0]     # a hw.lib.bram.Bram's memory cell
    depth = max(cfg.queues, 2)
    words = []
    for i in range(cfg.queues):
        data = Signal(cfg.occ_width, name=f"occ_word{i}")
        occ_mem.read_port(domain="comb", addr=Const(i, range(depth)), data=data,
                          en=Const(1), transparent_for=())
        words.append(data)
    return dut, words


def internal_signals(dut, *names):
    """The marker's own signals of these names (registers it drives), from the module
    :func:`marker_with_ram_ports` elaborated: ``[Signal, ...]``."""
    by_name = {}
    for sig in dut.formal_inner._driving.keys():
        by_name.setdefault(sig.name, []).append(sig)
    found = []
    for n in names:
        sigs = by_name.get(n, [])
        assert len(sigs) == 1, f"the marker has {len(sigs)} signals named {n!r}"
        found.append(sigs[0])
    return found


#: the reference delay line's entry that is level with the marker's stage 2 (the descriptor
#: is there after 5 advancing edges: stages A, B, C, 1, 2), where its decision and the queue
#: after it are final (the queue is written back from stage 2)
S2 = 4


def _miter(profile: str, compare: str, sample_at: str, part: str, stalls: bool = True):
    """``part``: ``"occupancy"`` (every field but the marking, the RAM and pool invariants,
    on :class:`ShortRampMarker`) or ``"marking"`` (the marking of every decision from its own
    qlen and the draw, on :class:`EgressMarker`).  ``stalls``: any back-pressure on
    ``decision`` (else always ready)."""
    cls = ShortRampMarker if part == "occupancy" else EgressMarker

    def build():
        m = Module()
        m.d.comb += Assume(~ResetSignal())      # from the reset state, no reset after it
        cfg = small_config(profile, compare, sample_at)
        assert cfg.draw_bits == 4               # (ShortRampMarker's levels)
        r = cfg.registers()
        W, D = cfg.occ_width, cfg.draw_bits
        LATENCY = cls.LATENCY
        dut, words = marker_with_ram_ports(m, cfg, cls)

        # ---- environment: any descriptors, any back-pressure, no register writes ------------
        d = dut.desc.payload
        m.d.comb += [dut.desc.valid.eq(AnySeq(1)), d.eq(AnySeq(len(d.as_value()))),
                     dut.decision.ready.eq(AnySeq(1) if stalls else 1), dut.csr_w.valid.eq(0),
                     dut.csr_raddr.eq(MarkerReg.SHARED_OCC)]
        advance = ~dut.decision.valid | dut.decision.ready
        accept = dut.desc.valid & dut.desc.ready

        # ---- the reference: one descriptor at a time ----------------------------------------
        ref_q = [Signal(W, name=f"ref_q{i}") for i in range(cfg.queues)]
        ref_shared = Signal(W + 2)
        lfsr = Signal(cfg.lfsr.width, init=cfg.lfsr.seed)
        lfsr_next = cfg.lfsr.next_state(lfsr, D)
        draw = lfsr_next[:D]

        def at_or_above(x, k):
            return x >= k if compare == "ge" else x > k

        bad = (d.port >= cfg.ports) | (d.prio >= cfg.priorities)
        idx = Signal(range(cfg.queues))
        m.d.comb += idx.eq(d.port * cfg.priorities + d.prio)
        q = Signal(W)
        for i in range(cfg.queues):
            with m.If(idx == i):
                m.d.comb += q.eq(ref_q[i])
        enq = d.op == QueueOp.ENQUEUE
        ect = (d.ecn == Ecn.ECT0) | (d.ecn == Ecn.ECT1)
        reason = Signal(DropReason)
        with m.If(bad):
            m.d.comb += reason.eq(DropReason.BAD_QUEUE)
        with m.Elif(enq):
            with m.If(q + d.length > r.buf_max):
                m.d.comb += reason.eq(DropReason.QUEUE_FULL)
            with m.Elif(ref_shared + d.length > r.shared_buffer):
                m.d.comb += reason.eq(DropReason.POOL_FULL)
            if profile == "ldcp":
                with m.Elif((d.ecn == Ecn.NOT_ECT) & at_or_above(q, r.k_drop)):
                    m.d.comb += reason.eq(DropReason.NOT_ECT_AT_K)
        with m.Elif(d.length > q):
            m.d.comb += reason.eq(DropReason.UNDERFLOW)
        admitted = reason == DropReason.NONE
        sampled = Signal(W)
        m.d.comb += sampled.eq(Mux(enq, q, q - d.length))
        eligible = admitted & ect & (enq if sample_at == "enqueue" else ~enq)
        ramp = (draw * (r.k_max - r.k_min)) < (r.p_max * (sampled - r.k_min))
        mark = eligible & (at_or_above(sampled, r.k_max)
                           | (at_or_above(sampled, r.k_min) & ramp))
        expect = Signal(marker_decision_layout(cfg))
        m.d.comb += [
            expect.op.eq(d.op), expect.port.eq(d.port), expect.prio.eq(d.prio),
            expect.length.eq(d.length), expect.drop.eq(~admitted), expect.reason.eq(reason),
            expect.ecn.eq(Mux(mark, Ecn.CE, d.ecn)), expect.marked.eq(mark),
            expect.qlen.eq(Mux(bad, 0, Mux(admitted, sampled, q))),
        ]
        with m.If(accept):
            m.d.sync += lfsr.eq(lfsr_next)
            with m.If(admitted):
                delta = Mux(enq, d.length, -d.length)
                m.d.sync += ref_shared.eq(ref_shared + delta)
                for i in range(cfg.queues):
                    with m.If(idx == i):
                        m.d.sync += ref_q[i].eq(q + delta)

        # the delay line of expected decisions, moving with the marker's pipeline
        exp_valid = [Signal(name=f"exp_valid{k}") for k in range(LATENCY)]
        exp = [Signal(marker_decision_layout(cfg), name=f"exp{k}") for k in range(LATENCY)]
        with m.If(advance):
            m.d.sync += [exp_valid[0].eq(accept), exp[0].eq(expect)]
            for k in range(1, LATENCY):
                m.d.sync += [exp_valid[k].eq(exp_valid[k - 1]), exp[k].eq(exp[k - 1])]
        m.d.comb += Assert(dut.decision.valid == exp_valid[-1])
        out = dut.decision.payload
        # idle: nothing in the pipeline, so every write-back is done
        idle = ~Cat(*exp_valid).any() & ~dut.decision.valid
        since_reset = Signal(range(cfg.queues + 2))
        with m.If(since_reset != cfg.queues + 1):
            m.d.sync += since_reset.eq(since_reset + 1)
        idle_prev = Signal()
        m.d.sync += idle_prev.eq(idle & (since_reset == cfg.queues + 1))
        if part == "marking":
            # the marking of every decision from its own queue bytes (qlen: checked by the
            # occupancy part) and its draw, whatever the occupancy path did: eligibility,
            # thresholds and the ramp products
            ecns = [Signal(2, name=f"ecn{k}") for k in range(LATENCY)]
            draws = [Signal(D, name=f"draw{k}") for k in range(LATENCY)]
            with m.If(advance):
                m.d.sync += [ecns[0].eq(d.ecn), draws[0].eq(draw)]
                m.d.sync += [ecns[k].eq(ecns[k - 1]) for k in range(1, LATENCY)]
                m.d.sync += [draws[k].eq(draws[k - 1]) for k in range(1, LATENCY)]
            e_ect = (ecns[-1] == Ecn.ECT0.value) | (ecns[-1] == Ecn.ECT1.value)
            qo = out.qlen
            o_ramp = (draws[-1] * (r.k_max - r.k_min)) < (r.p_max * (qo - r.k_min))
            point = QueueOp.ENQUEUE if sample_at == "enqueue" else QueueOp.DEQUEUE
            o_mark = (~out.drop & e_ect & (out.op == point)
                      & (at_or_above(qo, r.k_max) | (at_or_above(qo, r.k_min) & o_ramp)))
            with m.If(dut.decision.valid):
                m.d.comb += [Assert(out.marked == o_mark),
                             Assert(out.ecn.as_value() == Mux(o_mark, Ecn.CE.value, ecns[-1]))]
        else:
            with m.If(dut.decision.valid):
                for f in ("op", "port", "prio", "length", "drop", "reason", "qlen"):
                    m.d.comb += Assert(Value.cast(getattr(out, f))
                                       == Value.cast(getattr(exp[-1], f)))
            # ... and the same decision in stage 2, where it is made (white-box: the rest of
            # the pipeline only carries it, with the ramp products beside it), so that the
            # bound need not reach the output for every descriptor checked: the output check
            # above covers the carrying on the first descriptors, this one every descriptor
            # accepted up to 6 cycles before the bound
            s2_valid, s2_raw, s2_reason, s2_qlen = internal_signals(
                dut, "s2_valid", "s2", "s2_reason", "s2_qlen")
            s2 = data.View(marker_descriptor_layout(cfg), s2_raw)
            m.d.comb += Assert(s2_valid == exp_valid[S2])
            with m.If(s2_valid):
                for f in ("op", "port", "prio", "length"):
                    m.d.comb += Assert(Value.cast(getattr(s2, f))
                                       == Value.cast(getattr(exp[S2], f)))
                m.d.comb += [Assert(s2_reason == Value.cast(exp[S2].reason)),
                             Assert(s2_qlen == exp[S2].qlen)]
            # ---- invariants ------------------------------------------------------------------
            m.d.comb += [Assert(ref_shared == sum(ref_q)),
                         Assert(ref_shared <= r.shared_buffer)]
            m.d.comb += [Assert(ref_q[i] <= r.buf_max) for i in range(cfg.queues)]
            m.d.comb += [Assert(words[i] <= r.buf_max) for i in range(cfg.queues)]
            # after the reset sweep and with the pipeline empty now and a cycle ago
            # (SHARED_OCC is read with one cycle of latency)
            with m.If(idle & idle_prev):
                m.d.comb += [Assert(words[i] == ref_q[i]) for i in range(cfg.queues)]
                m.d.comb += Assert(dut.csr_rdata == ref_shared)

        # ---- covers: every limit reached, back-to-back same-queue descriptors ---------------
        took = dut.decision.valid & dut.decision.ready
        same_b2b = Signal()
        prev_idx, prev_acc = Signal(range(cfg.queues)), Signal()
        m.d.sync += [prev_idx.eq(idx), prev_acc.eq(accept & ~bad)]
        m.d.comb += same_b2b.eq(accept & ~bad & prev_acc & (prev_idx == idx))
        m.d.comb += [
            Cover(took & (out.reason == DropReason.QUEUE_FULL)),
            Cover(took & (out.reason == DropReason.POOL_FULL)),
            Cover(took & (out.reason == DropReason.UNDERFLOW)),
            Cover(took & (out.reason == DropReason.BAD_QUEUE)),
            Cover(took & out.marked),
            Cover(ref_q[0] == r.buf_max),
            Cover(same_b2b & (q + d.length == r.buf_max) & enq),
            Cover(idle & idle_prev & (ref_shared != 0)),
        ]
        if stalls:
            m.d.comb += Cover(dut.decision.valid & ~dut.decision.ready & dut.desc.valid)
        if profile == "ldcp":
            m.d.comb += Cover(took & (out.reason == DropReason.NOT_ECT_AT_K))
        return m
    return build


def _reset_sweep():
    """After any reset, whatever the block RAM held (arbitrary contents at the start: the
    harness's script removes the memory's initial value; and whatever traffic wrote before a
    reset in any later cycle), every queue's word is 0 when the sweep ends and ``desc.ready``
    first rises; descriptors are held off during the sweep."""
    def build():
        m = Module()
        cfg = small_config()
        dut, words = marker_with_ram_ports(m, cfg)
        d = dut.desc.payload
        m.d.comb += [dut.desc.valid.eq(AnySeq(1)), d.eq(AnySeq(len(d.as_value()))),
                     dut.decision.ready.eq(AnySeq(1)), dut.csr_w.valid.eq(0)]
        since = Signal(range(cfg.queues + 2))         # cycles since the last reset
        with m.If(since != cfg.queues + 1):
            m.d.sync += since.eq(since + 1)
        with m.If(since < cfg.queues):
            m.d.comb += Assert(~dut.desc.ready)
        with m.Else():
            m.d.comb += Assert(dut.desc.ready | (dut.decision.valid & ~dut.decision.ready))
        with m.If(since == cfg.queues):               # the sweep's end: nothing accepted yet
            m.d.comb += [Assert(w == 0) for w in words]
        rst = ResetSignal()
        m.d.comb += [Cover((since == 0) & (words[0] != 0) & (words[1] != 0)),
                     Cover(rst & (since == cfg.queues + 1) & (words[0] != 0))]
        return m
    return build


#: the reset sweep (2 queues), the pipeline, then 7 more decisions: the 7 descriptors
#: accepted back to back after the sweep are all checked, the last with 5 ahead in flight
#: and one written back
DEPTH = 2 + LATENCY + 7
#: The occupancy properties (ShortRampMarker): the first 3 descriptors after the sweep
#: checked at the output, every descriptor accepted up to step OCC_DEPTH - 6 (9 back to back
#: after the sweep) checked in stage 2, the last ones with 5 ahead in flight and one or more
#: written back, i.e. every forwarding path
OCC_DEPTH = 2 + ShortRampMarker.LATENCY + 3
#: with back-pressure: the same bound, the descriptors stalled anywhere
STALL_DEPTH = OCC_DEPTH
#: flattened, the block RAM as flip-flops (4 words; faster for the solver than an array), and
#: what the assertions do not read removed
SCRIPT = ("prep -top top", "flatten", "memory_map", "opt_clean")

CONFIGS = [("ldcp", "ge", "enqueue"), ("dcqcn", "gt", "dequeue")]

PROPERTIES = [
    # The occupancy path does not depend on the comparison convention or the sampling point
    # except through the LDCP drop at K_drop, so the LDCP configuration covers it.
    Property("marker.occupancy", "marker (LDCP, q >= K) decides as the one-at-a-time "
             "reference (drop, reason, qlen); RAM queues <= buf_max, = the reference's when "
             "idle, SHARED_OCC = their sum", _miter("ldcp", "ge", "enqueue", "occupancy",
                                                    stalls=False),
             mode="bmc", depth=OCC_DEPTH, cover_depth=OCC_DEPTH, timeout=600, extra_script=SCRIPT,
             cost_s=40),
    Property("marker.occupancy_stalls", "the same with any back-pressure on decision",
             _miter("ldcp", "ge", "enqueue", "occupancy", stalls=True), mode="bmc",
             depth=STALL_DEPTH, cover_depth=STALL_DEPTH, timeout=600, extra_script=SCRIPT,
             cost_s=70),
    *(Property(f"marker.marking.{p}_{c}_{s}", f"marker ({p}, q {'>=' if c == 'ge' else '>'} "
               f"K, sampled at {s}): every decision's marking is the ramp/threshold rule on "
               "its own qlen and draw", _miter(p, c, s, "marking"), mode="bmc", depth=DEPTH,
               cover_depth=DEPTH, timeout=600, extra_script=SCRIPT)
      for p, c, s in CONFIGS),
    Property("marker.reset_sweep", "after any reset, every queue's RAM word is 0 when the "
             "sweep ends, whatever the RAM held; descriptors held off during the sweep",
             _reset_sweep(), mode="bmc", depth=12, cover_depth=12, timeout=300, quick=True,
             extra_script=SCRIPT + ("setattr -unset init w:*occ*",)),
]
