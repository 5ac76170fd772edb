"""Formal properties of the QCN congestion point (:mod:`hw.switch.qcn_cp`), IEEE 802.1Qau.

The harness speaks only of the block's ports (``frame`` in, ``decision`` out) and of its
configuration: it keeps its own reference of what the standard computes from the frames it
sees, and checks every decision against it.  Any other port the block may grow (a register
port, say) is left undriven, i.e. at its reset value: no register writes, the registers keep
the configuration's values.

The reference, per decision (the decision on the output belongs to the oldest frame taken and
not yet decided: the block takes frames while a decision waits in its output register and a
second one behind it, so the harness keeps the frames in flight, up to 3, asserted):

* ``Q_off = qlen - Q_eq``, ``Q_delta = qlen - Q_old`` where ``Q_old`` is the ``qlen`` of the
  previous *sampled* frame (0 after reset), ``Fb = -(Q_off + w Q_delta)``;
* a CNM exactly when the frame is sampled and ``Fb < 0``;
* ``qntzFb = ceil(63 min(-Fb, Fb_max) / Fb_max)``, in ``1..63``, stated as the two
  inequalities that define a ceiling (no division, no reciprocal: independent of the RTL's
  multiply-by-reciprocal), and 0 without a CNM;
* ``QOffset``/``QDelta`` = ``floor(Q_off / 64)``/``floor(Q_delta / 64)`` (two's complement,
  stated as ``64 q <= x < 64 q + 64``), 0 without a CNM;
* sampling: the byte counter, exactly, counted at the frames the block takes.  After reset the
  first sample is the first frame at which the bytes taken reach ``sample_table[0]``; after
  the n-th sample, with feedback index ``i = qntzFb >> 3`` (read from its decision when it
  reaches the output: between a sample taken and that cycle the block takes no frame,
  asserted), the next one is the first frame at which the bytes since that sample reach
  ``lo_i + ((span_i r_n) >> D)``, ``r_n`` the n-th ``D``-bit draw of the configured
  LFSR, taken from its Python model (:mod:`hw.lfsr`, checked against the RTL's next-state
  function by ``tests/test_lfsr.py``).  Every such interval lies in ``[lo_i, lo_i + span_i]``
  (asserted when the harness is built): the standard's "uniform in about 0.85 S .. 1.15 S".
  Every decision's ``sampled`` equals the reference's verdict on its frame (kept with the
  frame in flight).

Two white-box checks keep the bounds at one sample's pipeline (``sample_latency``) instead of
two: ``qcn_cp.sampling`` also asserts, whenever the block takes a frame, that its byte counter
(``remaining``, on which it samples; the block holds ``remaining - 1``) equals the harness's
count, and that a frame it samples is compared with the previous sampled frame's ``qlen`` (its
``Q_old`` register); so the second sample's reload and ``Q_old`` are checked when the second
sample is taken, not 17 cycles later at its decision. ``qcn_cp.feedback`` makes ``Q_old`` a cut
point (any value in every cycle, ``FEEDBACK_SCRIPT``) and computes the reference from the value
the block used, read on the same wire: the arithmetic is then checked on every ``(qlen,
Q_old)`` pair, negative ``Q_delta`` included, in the first sample's pipeline; with the sampling
property's ``Q_old`` claim this is the whole rule. """

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

#: sample_latency + 1: 17 for this configuration (accept at step 0, decision at step 16)
_SAMPLE_CYCLES = QcnCp.sample_latency(CP_CONFIG) + 1
#: Feedback: Q_old is cut (any value at every sample: FEEDBACK_SCRIPT), so one sample's
#: pipeline holds every (qlen, Q_old), negative Q_delta included; the sampling property checks
#: that Q_old is the previous sampled qlen.  The first sample's decision at step
#: _SAMPLE_CYCLES - 1 at the earliest, + 3 for a stall, a reset or unsampled frames before it.
CP_FEEDBACK_DEPTH = _SAMPLE_CYCLES + 3
#: The block's Q_old register made a cut point (its value any value in every cycle: a
#: sampled frame's Q_delta = qlen - Q_old is then any difference, what two samples would
#: need twice the bound for).  Sound for the claim "the decision is the standard's function of
#: the frame's qlen and the Q_old it was compared with": the harness reads the same wire.
FEEDBACK_SCRIPT = ("prep -top top", "flatten", "cutpoint w:dut.q_old")
#: Sampling: the block's counter is checked when it takes a frame (white-box), so the bound
#: holds the first sample's decision (its qntzFb picks the reload), unsampled frames after it
#: and a second sample's acceptance at the exact reload: the first sample's decision at step
#: _SAMPLE_CYCLES - 1 at the earliest, the second sample taken 2 steps later (the covers).
CP_SAMPLING_DEPTH = _SAMPLE_CYCLES + 4
#: frames taken and not yet decided that the harness tracks (asserted never more)
IN_FLIGHT = 3
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
        dut = QcnCp(cfg)
        dut._MustUse__silence = True
        inner = dut.elaborate(None)             # elaborated here, to reach its Q_old register
        m.submodules.dut = inner
        internal = {s.name: s for s in inner._driving.keys()}
        # (the block's byte counter holds ``remaining - 1``: ``rem_m1``)
        dut_q_old, dut_rem_m1 = internal["q_old"], internal["rem_m1"]
        f, d = dut.frame, dut.decision
        m.d.comb += [f.valid.eq(AnySeq(1)), f.payload.eq(AnySeq(len(f.payload.as_value()))),
                     d.ready.eq(AnySeq(1))]
        accept = f.valid & f.ready
        taken = d.valid & d.ready

        # the harness's reference state (reset with the block)
        # the frames taken and not yet decided, oldest first (the block takes a frame while
        # a decision waits in its output or skid register, so the decision at the output
        # belongs to the oldest of them, not to the last frame taken): qlen, length, the
        # Q_old the block compared it with (white-box, read when it takes the frame), and the
        # sampling reference's verdict on it ("sampled", and "known": the reference knows the
        # counter, i.e. fewer than CP_SAMPLES reloads were needed)
        inq = [(Signal(W, name=f"inq_qlen{i}"), Signal(cfg.len_width, name=f"inq_len{i}"),
                Signal(W, name=f"inq_qold{i}"), Signal(name=f"inq_samp{i}"),
                Signal(name=f"inq_known{i}")) for i in range(IN_FLIGHT)]
        n_in = Signal(range(IN_FLIGHT + 1))
        m.d.comb += [Assert(~(taken & (n_in == 0))),                  # a decision per frame
                     Assert(~(accept & ~taken & (n_in == IN_FLIGHT)))]
        m.d.sync += n_in.eq(n_in + accept - taken)
        samp_h, known_h = Signal(), Signal()       # the reference's verdict on this frame
        for i, entry in enumerate(inq):
            nxt = inq[i + 1] if i + 1 < IN_FLIGHT else (0, 0, 0, 0, 0)
            with m.If(taken):
                m.d.sync += [a.eq(b) for a, b in zip(entry, nxt, strict=True)]
            with m.If(accept & (n_in == i + taken)):
                m.d.sync += [entry[0].eq(f.payload.qlen), entry[1].eq(f.payload.length),
                             entry[2].eq(dut_q_old), entry[3].eq(samp_h),
                             entry[4].eq(known_h)]
        last_qlen, last_len, q_old_at, last_samp, last_known = inq[0]
        p = d.payload

        # the standard's feedback
        # Q_old as the block held it when it took the frame (white-box): the feedback
        # harness cuts the register (any value, see FEEDBACK_SCRIPT), the sampling harness
        # checks that it is the previous sampled frame's qlen
        off = Signal(signed(W + 2))
        delta = Signal(signed(W + 2))
        s = Signal(signed(W + 6))                  # -Fb = Q_off + w Q_delta
        mag = Signal(W + 6)
        m.d.comb += [off.eq(last_qlen - q_eq),
                     delta.eq(last_qlen - q_old_at),
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
        # the sampling byte counter, exactly, counted at the frames the block TAKES (where it
        # samples: ``length >= remaining``): the reload after the n-th sample is
        # lo_i + ((span_i r_n) >> D), r_n the n-th draw of the configured LFSR (its Python
        # model, hw/lfsr.py, tested against the RTL's next-state function in test_lfsr.py),
        # i = qntzFb >> 3 of that sample, read from its decision when it reaches the output.
        # Counting at the frames taken (not at the decisions) needs no bookkeeping of the frames
        # in flight: between a sample taken and its decision reaching the output the block
        # takes no frame (asserted), so the counter is known at every frame taken.
        rem = Signal(W, init=reg.first_interval)   # bytes to the next sample
        pending = Signal()                         # a sample taken, its decision not yet out
        nsamp = Signal(range(CP_SAMPLES + 1))      # reloads applied
        q_old = Signal(W)                          # qlen of the last sampled frame taken
        acc = Signal(W + 1)                        # bytes of unsampled frames since a sample
        first = Signal(init=1)                     # no sample taken since reset
        idx = Signal(3)                            # qntzFb >> 3 of the last sample
        reload_tab, state = [], cfg.lfsr.seed
        for _ in range(CP_SAMPLES):
            state, r = cfg.lfsr.draw(state, D)
            row = [reg.sample_lo[i] + ((reg.sample_span[i] * r) >> D) for i in range(8)]
            assert all(reg.sample_lo[i] <= row[i] <= reg.sample_lo[i] + reg.sample_span[i]
                       for i in range(8))
            reload_tab.append(row)
        # the pending sample's decision on the output (it is then the only frame in flight)
        reload_now = pending & d.valid & (n_in == 1)
        reload = Signal(W)
        with m.Switch(Cat(p.qntz_fb[3:], nsamp)):
            for n_, row in enumerate(reload_tab):
                for i in range(8):
                    with m.Case(i | (n_ << 3)):
                        m.d.comb += reload.eq(row[i])
        rem_eff = Signal(W)
        nsamp_eff = Signal.like(nsamp)
        m.d.comb += [rem_eff.eq(Mux(reload_now, reload, rem)),
                     nsamp_eff.eq(nsamp + (reload_now & (nsamp < CP_SAMPLES))),
                     known_h.eq(nsamp_eff < CP_SAMPLES),
                     samp_h.eq(f.payload.length >= rem_eff)]
        if check_sampling:
            # no frame taken while a sample is undecided (before its decision is out)
            m.d.comb += Assert(~(accept & pending & ~reload_now))
            with m.If(reload_now):
                m.d.comb += Assert(p.sampled)
        with m.If(reload_now):
            m.d.sync += [pending.eq(0), rem.eq(reload), nsamp.eq(nsamp_eff),
                         idx.eq(p.qntz_fb[3:])]
        with m.If(accept):
            with m.If(samp_h):
                m.d.sync += [pending.eq(1), first.eq(0), acc.eq(0), q_old.eq(f.payload.qlen)]
            with m.Else():
                m.d.sync += [rem.eq(rem_eff - f.payload.length),
                             acc.eq(acc + f.payload.length)]
        # black box: every decision's "sampled" is the reference's verdict on its frame
        with m.If(d.valid & check_sampling & last_known):
            m.d.comb += Assert(p.sampled == last_samp)
        # ... and, white-box, the block's byte counter when it takes a frame (what it samples
        # on) equals the reference's count, and a frame it samples is compared with the
        # previous sampled frame's qlen (its Q_old register; 0 after reset): so the bound need
        # only reach the next sample's acceptance, not its decision (sample_latency later)
        with m.If(accept & check_sampling & known_h):
            m.d.comb += Assert(dut_rem_m1 == rem_eff - 1)
        with m.If(accept & samp_h & check_sampling):
            m.d.comb += Assert(dut_q_old == q_old)
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
                Cover(accept & samp_h & first & (f.payload.length == rem_eff)),
                Cover(accept & ~samp_h & first & (f.payload.length + 1 == rem_eff)),
                # a frame taken in the cycle its sample's decision comes out (the reload then)
                Cover(accept & reload_now),
                # a second sample at a later interval's exact count, after unsampled frames
                Cover(accept & samp_h & ~first & (idx != 0) & (acc != 0)
                      & (f.payload.length == rem_eff)),
                Cover(d.valid & ~p.sampled & ~first & (acc != 0)),  # two unsampled in a row
                Cover(accept & samp_h & ~first & (q_old != 0)),     # a second sample's Q_old
            ]
        return m
    return build


PROPERTIES = [
    Property("qcn_cp.feedback", "QCN CP: every decision's feedback is 802.1Qau's: CNM iff "
             "sampled and Fb = -(Q_off + w Q_delta) < 0 (Q_old: cut, any value), "
             "qntzFb = ceil(63 min(-Fb, Fb_max) / Fb_max) in 1..63, QOffset/QDelta = "
             "floor(/64)", _harness(True, False), mode="bmc", depth=CP_FEEDBACK_DEPTH,
             cover_depth=CP_FEEDBACK_DEPTH, timeout=400, extra_script=FEEDBACK_SCRIPT),
    Property("qcn_cp.sampling", "QCN CP: the first sample at exactly sample_table[0] bytes, "
             "then at exactly lo_i + (span_i r_n) >> D bytes after the n-th (i: its qntzFb "
             ">> 3, r_n: the n-th LFSR draw; within the jittered interval); at every frame "
             "taken the counter and Q_old (= the last sampled qlen) are the reference's",
             _harness(False, True), mode="bmc",
             depth=CP_SAMPLING_DEPTH, cover_depth=CP_SAMPLING_DEPTH, timeout=600, cost_s=90),
]
