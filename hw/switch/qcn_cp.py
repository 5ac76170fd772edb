"""QCN congestion point (IEEE 802.1Qau): feedback, 6-bit quantization and jittered sampling.

See ``docs/qcn.md`` for the algorithm and :mod:`sim.models.qcn` (:class:`CpModel`) for the
bit-exact golden model the RTL is verified against.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..layouts import qcn_cp_decision_layout, qcn_cp_frame_layout
from ..lib.csr import CsrBank
from ..lib.csr_port import csr_ports
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
        until no sample is in the pipeline (``csr_w.ready``), frames are held while a write
        waits, and it is applied at the edge that takes it: every sample sees one register
        set.

    Latency and throughput
    ----------------------
    A frame that is not sampled: its decision is registered on the edge that accepts it
    (latency 1) and the next frame can be taken on the following edge: one frame per clock.
    A sampled frame goes through four stages (``-Fb``; saturation at ``Fb_max``;
    reciprocal multiply = ``qntzFb`` and the LFSR draw; the jittered reload), decision after 4
    edges; ``frame.ready`` is low meanwhile (4 bubbles per sample; a sample is at most once per
    ``min(lo)`` bytes, so the sustained rate stays above 1 frame/clock x (1 - 4 / frames per
    interval)) and while a register write waits.  No division: the quantization is a multiply
    by a reciprocal (registers M and K).
    """

    SAMPLE_LATENCY = 4

    def __init__(self, config: QcnCpConfig):
        if not isinstance(config, QcnCpConfig):
            raise TypeError(f"QcnCp needs a QcnCpConfig, not {config!r}")
        self.config = config
        super().__init__({
            "frame": In(stream.Signature(qcn_cp_frame_layout(config))),
            "decision": Out(stream.Signature(qcn_cp_decision_layout(config))),
            **csr_ports(config.register_map()),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        # run-time registers (declared once in QcnCpConfig.register_map)
        bank = CsrBank(cfg.register_map())
        reg = cfg.registers_from({r.name: bank[r.name] for r in bank.map.registers})
        W, D = cfg.occ_width, cfg.draw_bits

        remaining = Signal(W, init=reg.first_interval)
        q_old = Signal(W)
        lfsr = Signal(cfg.lfsr.width, init=cfg.lfsr.seed)

        p1, p2, p3 = Signal(), Signal(), Signal()
        s1_off = Signal(signed(W + 1))
        s1_delta = Signal(signed(W + 1))
        s2_s = Signal(signed(cfg.sum_width))
        s2_off = Signal(signed(W + 1 - QOFF_UNIT_SHIFT))      # 64-byte units (floor)
        s2_delta = Signal(signed(W + 1 - QOFF_UNIT_SHIFT))
        s3_pos = Signal()
        s3_mag = Signal(cfg.fb_max_width)
        s3_off16, s3_delta16 = Signal(16), Signal(16)
        s4_pos = Signal()
        s4_qntz = Signal(QNTZ_BITS)
        s4_r = Signal(D)
        s4_off16, s4_delta16 = Signal(16), Signal(16)
        p4 = Signal()

        out = self.decision
        out_free = ~out.valid | out.ready
        with m.If(out.ready):
            m.d.sync += out.valid.eq(0)
        busy = p1 | p2 | p3 | p4
        m.d.comb += self.frame.ready.eq(~busy & out_free & ~self.csr_w.valid)
        accept = self.frame.valid & self.frame.ready
        f = self.frame.payload

        # ---- accept: the byte counter; a sampled frame starts the pipeline ----------------------
        sampled = f.length >= remaining
        m.d.sync += p1.eq(accept & sampled)
        with m.If(accept):
            with m.If(sampled):
                m.d.sync += [
                    s1_off.eq(f.qlen - reg.q_eq),
                    s1_delta.eq(f.qlen - q_old),
                    q_old.eq(f.qlen),
                ]
            with m.Else():
                m.d.sync += [
                    remaining.eq(remaining - f.length),
                    out.valid.eq(1),
                    out.payload.eq(0),
                ]

        # ---- stage 1: s = Q_off + w Q_delta = -Fb ---------------------------------------------
        m.d.sync += [p2.eq(p1), s2_s.eq(s1_off + s1_delta * reg.w),
                     s2_off.eq(s1_off >> QOFF_UNIT_SHIFT),
                     s2_delta.eq(s1_delta >> QOFF_UNIT_SHIFT)]

        # ---- stage 2: saturate at Fb_max; CNM offsets -----------------------------------------
        m.d.sync += [
            p3.eq(p2),
            s3_pos.eq(s2_s > 0),
            s3_mag.eq(Mux(s2_s > reg.fb_max, reg.fb_max, s2_s)[:len(s3_mag)]),
            s3_off16.eq(_sat_i16(s2_off)),
            s3_delta16.eq(_sat_i16(s2_delta)),
        ]

        # ---- stage 3: qntzFb = ((63 mag + Fb_max - 1) M) >> K (M, K: registers, exact for the
        # M, K of QcnCpConfig.registers()); the jitter draw -----------------------------------
        qntz = (((s3_mag << QNTZ_BITS) - s3_mag + reg.fb_max - 1) * reg.qntz_mult) \
            >> reg.qntz_shift
        lfsr_next = cfg.lfsr.next_state(lfsr, D)
        m.d.sync += [p4.eq(p3), s4_pos.eq(s3_pos), s4_off16.eq(s3_off16),
                     s4_delta16.eq(s3_delta16)]
        with m.If(p3):
            m.d.sync += [
                s4_qntz.eq(Mux(s3_pos, qntz[:QNTZ_BITS], 0)),
                s4_r.eq(lfsr_next[:D]),
                lfsr.eq(lfsr_next),
            ]

        # ---- stage 4: the jittered reload and the decision ------------------------------------
        lo, span = Signal(W), Signal(W)
        with m.Switch(s4_qntz[3:]):
            for i in range(8):
                with m.Case(i):
                    m.d.comb += [lo.eq(reg.sample_lo[i]), span.eq(reg.sample_span[i])]
        reload = lo + ((span * s4_r) >> D)
        with m.If(p4):
            m.d.sync += [
                remaining.eq(reload[:W]),
                out.valid.eq(1),
                out.payload.sampled.eq(1),
                out.payload.cnm.eq(s4_pos),
                out.payload.qntz_fb.eq(s4_qntz),
                out.payload.q_off.eq(Mux(s4_pos, s4_off16, 0)),
                out.payload.q_delta.eq(Mux(s4_pos, s4_delta16, 0)),
            ]
        bank.build(m, self.csr_w, self.csr_raddr, self.csr_rdata, idle=~busy)
        return m
