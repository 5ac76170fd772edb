"""QCN congestion point (IEEE 802.1Qau): feedback, 6-bit quantization and jittered sampling.

See ``docs/qcn.md`` for the algorithm and :mod:`sim.models.qcn` (:class:`CpModel`) for the
bit-exact golden model the RTL is verified against.
"""

from __future__ import annotations

from amaranth.hdl import C, Cat, Module, Mux, Signal, signed
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..layouts import qcn_cp_decision_layout, qcn_cp_frame_layout
from ..lib.csr import CsrBank
from ..lib.csr_port import csr_ports
from ..lib.pipemul import pipelined_product, product_levels
from .qcn_cp_config import QNTZ_BITS, QOFF_UNIT_SHIFT, QcnCpConfig

__all__ = ["QcnCp"]


def _sat_i16(x):
    """Saturate a signed value to int16 (result as a 16-bit two's-complement pattern)."""
    return Mux(x > 32767, 32767, Mux(x < -32768, -32768, x))[:16]


class QcnCp(wiring.Component):
    """Feedback computation, quantization and sampling of one QCN congestion point (one queue).

    Parameters
    ----------
    config : QcnCpConfig
        Widths, draw bits and LFSR (elaboration-time); the reset values of the run-time
        registers (set point, weight, the quantizer's constants, the jittered sampling table).

    Ports
    -----
    frame : In(stream(qcn_cp_frame_layout))
        Every frame that enters the congestion point's queue: the queue depth it finds
        (``qlen``, bytes) and its ``length`` (bytes).
    decision : Out(stream(qcn_cp_decision_layout))
        One decision per frame, in order: ``sampled``; ``cnm`` when the sample found
        ``Fb < 0``, with ``qntz_fb`` (1..63) and ``q_off``/``q_delta`` (64-byte units, int16).
    csr_w : In(stream(csr_write_layout)), csr_raddr : In(6), csr_rdata : Out(32)
        The register port (:meth:`QcnCpConfig.register_map`, the ID header).  A write waits
        until no sample is in the pipeline (``csr_w.ready``, from the cycle after the sample's
        last stage), frames are held while a write waits, and it is applied at the edge that takes
        it: every sample sees one register set.

    Latency and throughput
    ----------------------
    A frame that is not sampled: its decision is registered on the edge that accepts it
    (latency 1) and the next frame can be taken on the following edge: one frame per clock.
    ``frame.ready`` depends on registers only (and ``csr_w.valid``), not on
    ``decision.ready``: behind the decision register a second one (skid) takes a decision
    made while the register holds one not yet taken, and frames wait only while that one is
    full.
    A sampled frame goes through :meth:`sample_latency` stages (``Q_off + w Q_delta`` in three
    adder levels; saturation at ``Fb_max`` with ``63 s`` beside it; ``63 |Fb| + Fb_max - 1``;
    the reciprocal multiply in a shift-and-add tree, one carry chain per stage; the shift by
    ``K`` in two steps; the LFSR draw and the table row; the jitter product; the reload) and
    ``frame.ready`` is low meanwhile (a sample is at most once per ``min(lo)`` bytes, so the
    sustained rate stays above 1 frame/clock x (1 - latency / frames per interval)) and
    while a register write waits.  No division: the quantization is a multiply by a
    reciprocal (registers M and K).  Every stage is at most one carry chain deep, for the
    156.25 MHz target: the unpipelined multiplies (in the FPGA's multiplier blocks) and the
    barrel shift held the block at 38 MHz.
    """

    def __init__(self, config: QcnCpConfig):
        if not isinstance(config, QcnCpConfig):
            raise TypeError(f"QcnCp needs a QcnCpConfig, not {config!r}")
        self.config = config
        super().__init__({
            "frame": In(stream.Signature(qcn_cp_frame_layout(config))),
            "decision": Out(stream.Signature(qcn_cp_decision_layout(config))),
            **csr_ports(config.register_map()),
        })

    #: terms added per register level of the two products (one carry chain per stage)
    MUL_FAN_IN = 2

    @classmethod
    def sample_latency(cls, config: QcnCpConfig) -> int:
        """Edges from the acceptance of a sampled frame to its decision (``frame.ready`` low
        for all but the last): accept, 3 for ``-Fb``, 2 for the saturation and ``63 |Fb| +
        Fb_max - 1``, the reciprocal product, 2 for the shift, 1 for the table row, the
        jitter product (the decision is registered, with the reload, at the last edge)."""
        x_bits = config.fb_max_width + QNTZ_BITS
        return (1 + 3 + 2 + product_levels(x_bits, cls.MUL_FAN_IN) + 2 + 1
                + product_levels(config.draw_bits, cls.MUL_FAN_IN))

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        # run-time registers (declared once in QcnCpConfig.register_map)
        bank = CsrBank(cfg.register_map())
        reg = cfg.registers_from({r.name: bank[r.name] for r in bank.map.registers})
        W, D = cfg.occ_width, cfg.draw_bits
        FBW = cfg.fb_max_width

        # ``remaining - 1``, signed and one bit wider than a reload can reach (lo + span):
        # ``length >= remaining`` is then the sign of ``rem_m1 - length``, the same subtraction
        # that gives the next value, and a reload is never truncated (as in the model)
        rem_m1 = Signal(signed(W + 2), init=cfg.sample_table[0] - 1)
        q_old = Signal(W)
        lfsr = Signal(cfg.lfsr.width, init=cfg.lfsr.seed)

        # One sample at a time is in flight (frames wait while it is), so the data registers
        # below load on every edge and only the valid bit ``v`` of each stage matters.
        stages = []

        def stage(name):
            v = Signal(name=f"v_{name}")
            m.d.sync += v.eq(stages[-1] if stages else accept_sampled)
            stages.append(v)
            return v

        def delay(sig, n, name):
            """``sig`` delayed by ``n`` edges (beside a product's register levels)."""
            for k in range(n):
                reg_ = Signal.like(sig, name=f"{name}_d{k}")
                m.d.sync += reg_.eq(sig)
                sig = reg_
            return sig

        # Derived from the registers, registered: they change only with a register write,
        # taken with no sample in flight, and a sample needs them several edges after it starts.
        fbm1 = Signal(signed(FBW + 1))                       # Fb_max - 1
        xmax = Signal(signed(FBW + QNTZ_BITS + 1))           # 63 Fb_max + Fb_max - 1
        neg_mult = Signal(signed(cfg.mult_width + 1))        # -M (the product of x = -1)
        m.d.sync += [fbm1.eq(reg.fb_max - 1), xmax.eq((reg.fb_max << QNTZ_BITS) - 1),
                     neg_mult.eq(-reg.qntz_mult)]

        # ---- the decision: its register and a second one behind it (skid), so that
        # ``frame.ready`` comes from registers only: with ``decision.ready`` in it, the route
        # through ``frame.valid`` into the accept enables was the critical path (8.7 ns, 7 of
        # it routing).  A decision made while the register holds one not taken goes to the
        # skid register; no frame is taken while that one is full (a sample's decision, made
        # with no frame taken, finds it empty: the frame that started it did).
        out = self.decision
        dec_layout = qcn_cp_decision_layout(cfg)
        made = Signal()                    # a decision is made at this edge
        made_p = Signal(dec_layout)        # its payload: zero but for a sample's last edge
        skid_valid, skid = Signal(), Signal(dec_layout)
        with m.If(~out.valid | out.ready):
            m.d.sync += [out.valid.eq(skid_valid | made),
                         out.payload.eq(Mux(skid_valid, skid.as_value(), made_p.as_value())),
                         skid_valid.eq(0)]
        with m.Elif(made):
            m.d.sync += skid_valid.eq(1)
        with m.If(~skid_valid):
            m.d.sync += skid.eq(made_p)
        busy = Signal()
        m.d.comb += self.frame.ready.eq(~busy & ~skid_valid & ~self.csr_w.valid)
        accept = self.frame.valid & self.frame.ready
        f = self.frame.payload

        # ---- accept: the byte counter; a sampled frame starts the pipeline ----------------------
        # ``sampled`` (a carry chain from the counter) drives single flip-flops only (the valid
        # bits): the wide registers load on every accepted frame whatever it is (a sample's
        # counter value is replaced by the reload, its zero decision by the result) and
        # ``Q_old`` follows stage 1.  ``sampled`` into the enables of the decision and the
        # stage-1 registers was the critical path (6.6 ns on the Nexus).
        # (``rem_m1`` in [-1, 2**(W + 1) - 3] - a register-set lo of 0 gives -1 -, the length
        # below 2**len_width: the difference is in [-2**len_width, 2**(W + 1)), which a frame
        # longer than the queue's width can reach: a narrow queue with long frames needs the
        # length's width, not only the counter's)
        diff = Signal(signed(max(W + 1, cfg.len_width) + 1))
        m.d.comb += diff.eq(rem_m1 - f.length)
        sampled = diff[-1]
        accept_sampled = accept & sampled
        s1_off = Signal(signed(W + 1))
        s1_delta = Signal(signed(W + 1))
        s1_q = Signal(W)
        v1 = stage("1")
        # ``accept`` (through ``frame.valid``) reaches only the counter and single flip-flops:
        # the stage-1 registers load whenever no sample is in flight (registered ``busy``:
        # they hold from a sample's accepting edge to its end) and a frame not sampled has the
        # all-zero payload (``made_p``).  Into the enables of 120 flip-flops across the block,
        # the route was the critical path (8.5 ns, 6.8 of it routing).
        with m.If(~busy):
            m.d.sync += [
                s1_off.eq(f.qlen - reg.q_eq),
                s1_delta.eq(f.qlen - q_old),
                s1_q.eq(f.qlen),
            ]
        with m.If(accept):
            m.d.sync += rem_m1.eq(diff[:len(rem_m1)])
        with m.If(v1):
            m.d.sync += q_old.eq(s1_q)

        # ---- s = Q_off + w Q_delta = -Fb: five terms (w has 4 bits), two per adder level --------
        SUM = signed(cfg.sum_width)
        d = s1_delta
        a_p, a_q, a_r = Signal(SUM), Signal(SUM), Signal(SUM)
        stage("2")
        m.d.sync += [a_p.eq(s1_off + Mux(reg.w[0], d, 0)),
                     a_q.eq(Mux(reg.w[1], d << 1, 0) + Mux(reg.w[2], d << 2, 0)),
                     a_r.eq(Mux(reg.w[3], d << 3, 0))]
        b_pq, b_r = Signal(SUM), Signal(SUM)
        stage("3")
        m.d.sync += [b_pq.eq(a_p + a_q), b_r.eq(a_r)]
        s4_s = Signal(SUM)
        stage("4")
        m.d.sync += s4_s.eq(b_pq + b_r)
        # the CNM offsets (64-byte units), carried from stage 1
        off_units = delay(s1_off >> QOFF_UNIT_SHIFT, 3, "off")
        delta_units = delay(s1_delta >> QOFF_UNIT_SHIFT, 3, "delta")

        # ---- saturation at Fb_max; 63 s beside it; the CNM offsets ------------------------------
        s5_pos, s5_sat = Signal(), Signal()
        s5_s63 = Signal(signed(cfg.sum_width + QNTZ_BITS))
        s5_off16, s5_delta16 = Signal(16), Signal(16)
        stage("5")
        m.d.sync += [
            s5_pos.eq(s4_s > 0),
            s5_sat.eq(s4_s > reg.fb_max),
            s5_s63.eq((s4_s << QNTZ_BITS) - s4_s),
            s5_off16.eq(_sat_i16(off_units)),
            s5_delta16.eq(_sat_i16(delta_units)),
        ]
        # ---- x = 63 min(s, Fb_max) + Fb_max - 1 (x = -1 only when Fb_max = 0) -------------------
        # (x's magnitude bits only: its sign is s6_neg)
        XM = FBW + QNTZ_BITS
        s6_x = Signal(XM)
        s6_neg = Signal()
        stage("6")
        m.d.sync += [s6_x.eq(Mux(s5_sat, xmax, (s5_s63 + fbm1)[:XM + 1].as_signed())[:XM]),
                     s6_neg.eq(s5_sat & xmax[-1])]
        # x < 0 matters only with s > 0, where it is the saturated x = -1 of Fb_max = 0 (a
        # negative x of s <= 0 gives a product the ``s > 0`` gate discards): registered
        # beside x, so x's sign bit does not gate every multiplier bit (x's sign through
        # the first product level was the critical path of ``qcn_cp``, 6.5 ns)
        x_neg = s6_neg
        x_mag = s6_x
        # ---- x M in a shift-and-add tree (x >= 0); -M when x = -1 -------------------------------
        prod, lat = pipelined_product(m, reg.qntz_mult, x_mag, fan_in=self.MUL_FAN_IN,
                                      name="qntz")
        for k in range(lat):
            stage(f"mul{k}")
        neg_d = delay(x_neg, lat, "xneg")
        P = Mux(neg_d, neg_mult, prod)            # signed; the product zero-extended
        # ---- >> K in two steps: by K & ~7 keeping the 13 bits the second step can need ---------
        K = reg.qntz_shift
        s_t = Signal(QNTZ_BITS + 7)
        stage("shift_hi")
        m.d.sync += s_t.eq((P >> Cat(C(0, 3), K[3:]))[:len(s_t)])
        s_qntz = Signal(QNTZ_BITS)
        s_r = Signal(D)
        stage("shift_lo")
        lfsr_next = cfg.lfsr.next_state(lfsr, D)
        # (s5_pos, valid since stage 5, aligned with s_t: 2 + lat edges later)
        m.d.sync += s_qntz.eq(Mux(delay(s5_pos, lat + 2, "pos"), (s_t >> K[:3])[:QNTZ_BITS], 0))
        with m.If(stages[-2]):
            m.d.sync += [s_r.eq(lfsr_next[:D]), lfsr.eq(lfsr_next)]
        # ---- the table row of qntzFb >> 3 --------------------------------------------------------
        lo, span = Signal(W), Signal(W)
        stage("row")
        with m.Switch(s_qntz[3:]):
            for i in range(8):
                with m.Case(i):
                    m.d.sync += [lo.eq(reg.sample_lo[i]), span.eq(reg.sample_span[i])]
        # lo - 1 beside the jitter product's first level (the counter holds remaining - 1)
        lo_m1 = Signal(signed(W + 1))
        m.d.sync += lo_m1.eq(lo - 1)
        jit, jlat = pipelined_product(m, span, delay(s_r, 1, "r"), fan_in=self.MUL_FAN_IN,
                                      name="jitter", drop_low=D)
        for k in range(jlat):
            stage(f"jit{k}")
        lo_d = delay(lo_m1, jlat - 1, "lo")
        qntz_d = delay(s_qntz, 1 + jlat, "qntz")
        # stage 5's results, aligned with the last stage
        to_last = len(stages) - 5
        pos_o = delay(s5_pos, to_last, "pos_o")
        off16_o = delay(s5_off16, to_last, "off16_o")
        delta16_o = delay(s5_delta16, to_last, "delta16_o")
        last = stages[-1]
        # ---- the jittered reload and the decision ------------------------------------------------
        reload = lo_d + jit  # the product's bits from D up, minus 1
        with m.If(last):
            m.d.sync += rem_m1.eq(reload)
            m.d.comb += [
                made_p.sampled.eq(1),
                made_p.cnm.eq(pos_o),
                made_p.qntz_fb.eq(qntz_d),
                made_p.q_off.eq(Mux(pos_o, off16_o, 0)),
                made_p.q_delta.eq(Mux(pos_o, delta16_o, 0)),
            ]
        m.d.comb += made.eq((accept & ~sampled) | last)
        assert len(stages) == self.sample_latency(cfg), (len(stages), self.sample_latency(cfg))
        # "a sample in flight": stage 1's valid bit or the registered OR of the others (next
        # cycle's stage bits 2.. are this cycle's 1.. shifted by one), so ``sampled`` reaches
        # only stage 1's valid bit (into a registered ``busy`` it was the critical path,
        # 7.3 ns) and no wide OR sits in front of ``frame.ready`` and the enables (7.3 ns as
        # an OR of 18 bits).
        rest_q = Signal()
        m.d.sync += rest_q.eq(Cat(*stages[:-1]).any())
        m.d.comb += busy.eq(stages[0] | rest_q)
        # A register write waits for "no sample in flight", registered (and conservative: no
        # frame taken at the last edge, no stage but the last busy then): ``busy`` itself in
        # front of the write strobes and the address decode into every register's enable was
        # the critical path (6.8 ns).  Frames are held while a write waits, so it waits at
        # most one cycle more than the sample.  (Kept inverted: as ``idle`` itself it would be
        # an alias of csr_w.ready, an unused wire in the Verilog.)
        was_busy = Signal()
        m.d.sync += was_busy.eq(accept | Cat(*stages[:-1]).any())
        bank.build(m, self.csr_w, self.csr_raddr, self.csr_rdata, idle=~was_busy)
        return m
