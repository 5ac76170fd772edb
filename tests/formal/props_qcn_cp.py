"""Formal properties of the QCN congestion point (:mod:`hw.switch.qcn_cp`), IEEE 802.1Qau.

The harness speaks only of the block's ports (``frame`` in, ``decision`` out) and of its
configuration: it keeps its own reference of what the standard computes from the frames it
sees, and checks every decision against it.  Any other port the block may grow (a register
port, say) is left undriven, i.e. at its reset value: no register writes, the registers keep
the configuration's values.

The reference, per decision (the decision on the output always belongs to the last frame
accepted: a sampled frame holds ``frame.ready`` low until its decision, and a frame is only
taken when the decision register is free or being emptied):

* ``Q_off = qlen - Q_eq``, ``Q_delta = qlen - Q_old`` where ``Q_old`` is the ``qlen`` of the
  previous *sampled* frame (0 after reset), ``Fb = -(Q_off + w Q_delta)``;
* a CNM exactly when the frame is sampled and ``Fb < 0``;
* ``qntzFb = ceil(63 min(-Fb, Fb_max) / Fb_max)``, in ``1..63``, stated as the two
  inequalities that define a ceiling (no division, no reciprocal: independent of the RTL's
  multiply-by-reciprocal), and 0 without a CNM;
* ``QOffset``/``QDelta`` = ``floor(Q_off / 64)``/``floor(Q_delta / 64)`` (two's complement,
  stated as ``64 q <= x < 64 q + 64``), 0 without a CNM;
* sampling: the byte counter, exactly.  After reset the first sample is the first frame at
  which the bytes seen reach ``sample_table[0]``; after the n-th sample, with feedback index
  ``i = qntzFb >> 3``, the next one is the first frame at which the bytes since that sample
  reach ``lo_i + ((span_i r_n) >> D)``, ``r_n`` the n-th ``D``-bit draw of the configured
  LFSR, taken from its Python model (:mod:`hw.lfsr`, checked against the RTL's next-state
  function by ``tests/test_lfsr.py``).  Every such interval lies in ``[lo_i, lo_i + span_i]``
  (asserted when the harness is built): the standard's "uniform in about 0.85 S .. 1.15 S".
"""

from __future__ import annotations

from amaranth.hdl import Assert, Cat, Cover, Module, Mux, Signal, signed
from amaranth.hdl._ast import AnySeq

from hw.lfsr import LfsrParams
from hw.switch.qcn_cp import QcnCp
from hw.switch.qcn_cp_config import QcnCpConfig

from .runner import Property

__all__ = ["PROPERTIES", "CP_CONFIG"]

#: Small widths (8-bit queue depth, 6-bit lengths: up to 63-byte frames), a set point of 64
#: bytes (Fb_max = 64 (2 w + 1) = 320: the saturation is reachable, ``Q_off`` ranges over
#: -64..191, ``Q_delta`` over -255..255), a sampling table of 12..40 bytes (one to a few frames
#: per interval), 25 % jitter and a 4-bit draw from an 8-bit LFSR.
CP_CONFIG = QcnCpConfig(q_eq=64, w=2, sample_table=(40, 36, 32, 28, 24, 20, 16, 12),
                        jitter=0.25, draw_bits=4, occ_width=8, len_width=6,
                        lfsr=LfsrParams(width=8, taps=0xB8, seed=0x5A))

#: The bounds: two samples with their pipelines (sample_latency + 1 cycles from accept to
#: decision: 17 for this configuration), the second one's Q_delta against the first's qlen
#: (feedback); two samples with unsampled frames between them, with stalls (sampling).
_SAMPLE_CYCLES = QcnCp.sample_latency(CP_CONFIG) + 1
CP_FEEDBACK_DEPTH = 2 * _SAMPLE_CYCLES + 2
CP_SAMPLING_DEPTH = 2 * _SAMPLE_CYCLES + 1
#: samples whose reload the sampling harness knows (more than the bound can reach)
CP_SAMPLES = 4


def _harness(check_feedback: bool, check_sampling: bool):
    """Every decision equals the 802.1Qau reference computed from the frames on the ports
    (module docstring): the CNM rule, the quantized feedback and the CNM fields
    (``check_feedback``), the sampling byte counter (``check_sampling``), with any frames,
    any back-pressure and resets in any cycle."""
    def build():
        m = Module()
        cfg = CP_CONFIG
        reg = cfg.registers()
        D, W = cfg.draw_bits, cfg.occ_width
        q_eq, w, fb_max = cfg.q_eq, cfg.w, cfg.fb_max
        m.submodules.dut = dut = QcnCp(cfg)
        f, d = dut.frame, dut.decision
        m.d.comb += [f.valid.eq(AnySeq(1)), f.payload.eq(AnySeq(len(f.payload.as_value()))),
                     d.ready.eq(AnySeq(1))]
        accept = f.valid & f.ready
        taken = d.valid & d.ready

        # the harness's reference state (reset with the block)
        last_qlen = Signal(W)                      # the frame the decision belongs to
        last_len = Signal(cfg.len_width)
        q_old = Signal(W)                          # qlen of the previous sampled frame
        acc = Signal(W + 1)                        # bytes of unsampled frames since a sample
        first = Signal(init=1)                     # no sample since reset
        idx = Signal(3)                            # qntzFb >> 3 of the last sample
        with m.If(accept):
            m.d.sync += [last_qlen.eq(f.payload.qlen), last_len.eq(f.payload.length)]
        p = d.payload
        tot = Signal(W + 2)
        m.d.comb += tot.eq(acc + last_len)
        with m.If(taken):
            with m.If(p.sampled):
                m.d.sync += [q_old.eq(last_qlen), acc.eq(0), first.eq(0),
                             idx.eq(p.qntz_fb[3:])]
            with m.Else():
                m.d.sync += acc.eq(tot)

        # the standard's feedback
        off = Signal(signed(W + 2))
        delta = Signal(signed(W + 2))
        s = Signal(signed(W + 6))                  # -Fb = Q_off + w Q_delta
        mag = Signal(W + 6)
        m.d.comb += [off.eq(last_qlen - q_eq), delta.eq(last_qlen - q_old),
                     s.eq(off + w * delta),
                     mag.eq(Mux(s > fb_max, fb_max, s))]
        q = p.qntz_fb
        q_off, q_delta = p.q_off.as_signed(), p.q_delta.as_signed()
        with m.If(d.valid & check_feedback):
            m.d.comb += Assert(p.cnm == (p.sampled & (s > 0)))
            with m.If(~p.sampled):
                m.d.comb += Assert((q == 0) & (p.q_off == 0) & (p.q_delta == 0))
            with m.If(p.sampled & ~p.cnm):
                m.d.comb += Assert((q == 0) & (p.q_off == 0) & (p.q_delta == 0))
            with m.If(p.cnm):
                m.d.comb += [
                    Assert((q >= 1) & (q <= 63)),
                    Assert(q * fb_max >= 63 * mag),
                    Assert((q - 1) * fb_max < 63 * mag),
                    Assert((q_off * 64 <= off) & (off < q_off * 64 + 64)),
                    Assert((q_delta * 64 <= delta) & (delta < q_delta * 64 + 64)),
                ]
        # the sampling byte counter, exactly: the reload after the n-th sample is
        # lo_i + ((span_i r_n) >> D), r_n the n-th draw of the configured LFSR (its Python
        # model, hw/lfsr.py, tested against the RTL's next-state function in test_lfsr.py)
        rem = Signal(W, init=reg.first_interval)
        nsamp = Signal(range(CP_SAMPLES + 1))
        reload_tab, state = [], cfg.lfsr.seed
        for _ in range(CP_SAMPLES):
            state, r = cfg.lfsr.draw(state, D)
            row = [reg.sample_lo[i] + ((reg.sample_span[i] * r) >> D) for i in range(8)]
            assert all(reg.sample_lo[i] <= row[i] <= reg.sample_lo[i] + reg.sample_span[i]
                       for i in range(8))
            reload_tab.append(row)
        with m.If(taken):
            with m.If(p.sampled):
                m.d.sync += nsamp.eq(nsamp + (nsamp < CP_SAMPLES))
                with m.Switch(Cat(p.qntz_fb[3:], nsamp)):
                    for n_, row in enumerate(reload_tab):
                        for i in range(8):
                            with m.Case(i | (n_ << 3)):
                                m.d.sync += rem.eq(row[i])
            with m.Else():
                m.d.sync += rem.eq(rem - last_len)
        with m.If(d.valid & check_sampling & (nsamp < CP_SAMPLES)):
            m.d.comb += Assert(p.sampled == (last_len >= rem))
        if check_feedback:
            m.d.comb += [
                Cover(d.valid & p.cnm & (q == 63)),                 # |Fb| saturated
                Cover(d.valid & p.cnm & (q == 1)),
                Cover(d.valid & p.cnm & (q_delta < 0)),
                Cover(d.valid & p.sampled & (s == 0)),              # Fb = 0: no CNM
                Cover(d.valid & ~d.ready & p.cnm),                  # a stalled CNM
            ]
        if check_sampling:
            m.d.comb += [
                Cover(d.valid & p.sampled & first & (last_len == rem)),
                Cover(d.valid & ~p.sampled & first & (last_len + 1 == rem)),
                Cover(d.valid & p.sampled & ~first & (idx != 0) & (last_len == rem)),
                Cover(d.valid & ~p.sampled & ~first & (acc != 0)),  # two unsampled in a row
            ]
        return m
    return build


PROPERTIES = [
    Property("qcn_cp.feedback", "QCN CP: every decision's feedback is 802.1Qau's: CNM iff "
             "sampled and Fb = -(Q_off + w Q_delta) < 0 (Q_old: the last sampled qlen), "
             "qntzFb = ceil(63 min(-Fb, Fb_max) / Fb_max) in 1..63, QOffset/QDelta = "
             "floor(/64)", _harness(True, False), mode="bmc", depth=CP_FEEDBACK_DEPTH,
             cover_depth=CP_FEEDBACK_DEPTH, timeout=400),
    Property("qcn_cp.sampling", "QCN CP: the first sample at exactly sample_table[0] bytes, "
             "then at exactly lo_i + (span_i r_n) >> D bytes after the n-th (i: its qntzFb "
             ">> 3, r_n: the n-th LFSR draw; within the jittered interval)",
             _harness(False, True), mode="bmc",
             depth=CP_SAMPLING_DEPTH, cover_depth=CP_SAMPLING_DEPTH, timeout=400),
]
