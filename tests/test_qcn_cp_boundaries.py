"""QCN congestion point at its exact edges, in Amaranth's simulator: the CNM offsets at the int16
bounds, the sampling counter at the exact byte, reloads at the top of the run-time registers,
frames longer than a narrow queue's width, and the quantizer's negative product (Fb_max 0 with a
reciprocal whose top bit is set).  The expected values are worked by hand (in the comments);
each run is also compared, decision by decision, with the model."""

import math
from fractions import Fraction

from hw.switch.qcn_cp_config import QcnCpConfig
from sim.models.qcn import CpDecision, CpFrame
from tests.test_qcn_cp import model_rounds, run_rtl_rounds

NOT_SAMPLED, SAMPLED = CpDecision(), CpDecision(sampled=True)


def every_frame(**kw):
    return QcnCpConfig(sample_table=(1,) * 8, jitter=0.0, **kw)


def qntz(s, fb_max):
    """qntzFb as IEEE 802.1Qau defines it, from exact rationals."""
    return math.ceil(Fraction(63 * min(s, fb_max), fb_max))


def test_cnm_offsets_saturate_at_the_int16_bounds():
    """QOffset = floor(Q_off / 64) and QDelta = floor(Q_delta / 64), saturated to int16: one
    byte either side of 32767 and -32768 units.  Every frame is a sample, so each frame's
    ``qlen`` is the next one's ``Q_old``."""
    cases = []     # (config, frames, [(frame index, QOffset, QDelta) of every CNM])
    # Q_eq 1000, w 2 (Fb_max 5000): pairs (Q, Q) make Q_delta 0 on the second frame
    a = every_frame(q_eq=1000, w=2)
    up = [1000 + 64 * 32767,           # 32767 units: not saturated
          1000 + 64 * 32767 + 63,      # 32767.98 -> 32767
          1000 + 64 * 32768,           # 32768 -> 32767 (the first value that saturates)
          1000 + 64 * 32769 - 1]       # 32768.98 -> 32768 -> 32767
    frames = [CpFrame(q, 1) for q in up for _ in range(2)]
    # Q_delta: 0 -> 64 * 32767 + 63 (32767 units), -> + 64 * 32768 (32768 -> 32767)
    frames += [CpFrame(0, 1), CpFrame(64 * 32767 + 63, 1), CpFrame(64 * 32767 + 63 + 64 * 32768, 1)]
    # Q_delta = -2097153 (-32768.02 -> -32769 -> -32768), -2097152 (exactly -32768), with
    # Q_off large enough that s = Q_off + 2 Q_delta > 0
    frames += [CpFrame(7_097_153, 1), CpFrame(5_000_000, 1),
               CpFrame(7_097_152, 1), CpFrame(5_000_000, 1)]
    # by hand: frames 0-7 Q_off >= 32767 units (frame 0 Q_delta 2098088: 32782 -> 32767; frames
    # 2, 4, 6 Q_delta 63, 1, 63: 0); frame 8 (Q 0) no CNM; frame 9 Q_off 2096151 (32752),
    # Q_delta 2097151 (32767); 10 Q 4194303: Q_delta 2097152 (32768 -> 32767); 11 Q_delta
    # 2902850 (45357 -> 32767); 12 and 14 Q_off 4999000 (78109 -> 32767); 13 Q_delta 2097152
    cnms = [(0, 32767, 32767), *[(i, 32767, 0) for i in range(1, 8)],
            (9, 32752, 32767), (10, 32767, 32767), (11, 32767, 32767),
            (12, 32767, -32768), (13, 32767, 32767), (14, 32767, -32768)]
    cases.append((a, frames, cnms))
    # Q_eq 3000000, w 4: Q below Q_eq by 2**21 (+- 1) bytes, after Q = 0 (Q_delta = Q: s > 0)
    b = every_frame(q_eq=3_000_000, w=4)
    frames = [CpFrame(0, 1), CpFrame(902_848, 1),      # -2097152: -32768 exactly; 14107
              CpFrame(0, 1), CpFrame(902_847, 1),      # -2097153: -32769 -> -32768; 14106
              CpFrame(0, 1), CpFrame(902_849, 1)]      # -2097151: floor -> -32768; 14107
    cases.append((b, frames, [(1, -32768, 14107), (3, -32768, 14106), (5, -32768, 14107)]))
    for cfg, frames, cnms in cases:
        got = run_rtl_rounds(cfg, [({}, frames)], p_ready=1.0)
        assert got == model_rounds(cfg, [({}, frames)])
        q_old = 0
        want = []
        for f in frames:
            s = f.qlen - cfg.q_eq + cfg.w * (f.qlen - q_old)
            q_old = f.qlen
            want.append(qntz(s, cfg.fb_max) if s > 0 else None)
        assert [i for i, d in enumerate(got) if d.cnm] == [i for i, _, _ in cnms]
        for i, off, delta in cnms:
            assert got[i] == CpDecision(True, True, want[i], off, delta), i


def test_sampling_counter_at_the_exact_byte():
    """A frame is the sample when the bytes since the last one (itself included) reach the
    interval: 100 bytes here (no jitter).  99 + 1, then 50 + 49 + 1, then 100, 101 alone, and
    zero-length frames, which never reach it.  (The bytes past the interval are not carried.)"""
    cfg = QcnCpConfig(sample_table=(100,) * 8, jitter=0.0)
    lengths = [99, 1, 50, 49, 1, 100, 101, 0, 0, 99, 0, 1]
    want = [0, 1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1]
    frames = [CpFrame(0, n) for n in lengths]         # Q = 0: samples without a CNM
    got = run_rtl_rounds(cfg, [({}, frames)], p_ready=1.0)
    assert got == [SAMPLED if w else NOT_SAMPLED for w in want]
    assert got == model_rounds(cfg, [({}, frames)])


def test_reloads_at_the_top_of_the_registers():
    """A narrow build (8-bit occupancy) with the table's registers written at their top: lo
    255 and span 255 (reloads up to 509 bytes, past the occupancy's width), lo 255 and span 0
    (every 255-byte frame a sample), lo 0 and span 0 (every frame a sample, zero-length ones
    too).  Each sample's interval, measured on the frames, lies in [lo, lo + span]."""
    cfg = QcnCpConfig(q_eq=20, w=2, occ_width=8, len_width=8, jitter=0.0,
                      sample_table=(40,) * 8)
    table = lambda lo, span: {**{f"SAMPLE_LO{i}": lo for i in range(8)},   # noqa: E731
                              **{f"SAMPLE_SPAN{i}": span for i in range(8)}}
    lengths = [255, 7, 100, 1, 255, 254, 3] * 30
    rounds = [({}, [CpFrame(0, 40)]),            # the first sample (table 40) loads lo + jit
              (table(255, 255), [CpFrame(0, n) for n in lengths]),
              (table(255, 0), [CpFrame(0, 255)] * 5),
              (table(0, 0), [CpFrame(0, n) for n in (255, 0, 0, 1, 255)])]
    got = run_rtl_rounds(cfg, rounds, p_ready=1.0)
    assert got == model_rounds(cfg, rounds)
    wide = got[1:1 + len(lengths)]
    # the reload after the first sample is of lo 40 (table 40, no jitter), then of 255 + jit
    counted, intervals = 0, []
    for n, d in zip(lengths, wide, strict=True):
        counted += n
        if d.sampled:
            intervals.append(counted)
            counted = 0
    # an interval is reached by its last frame: at least the reload, less than it + 255
    assert 40 <= intervals[0] < 40 + 255
    assert all(255 <= n < 510 + 255 for n in intervals[1:]), intervals
    assert any(n > 256 for n in intervals[1:])           # reloads past 2**occ_width reached
    # the last reload of the lo 255 / span 255 round may still be counting: the next round
    # begins with it
    tail = got[1 + len(lengths):]
    # lo 255: the pending reload (<= 509) ends within two frames, then every frame; lo 0:
    # the pending 255 ends with the first frame, then every frame, zero-length ones too
    assert sum(d.sampled for d in tail[:5]) >= 4
    assert [d.sampled for d in tail[5:]] == [True] * 5


def test_frames_longer_than_a_narrow_queue():
    """An 8-bit occupancy with 16-bit frame lengths: the sampling compare must hold the
    length's width (a counter-wide compare wrapped: a 1200-byte frame against 101 bytes read
    as not reaching them)."""
    cfg = QcnCpConfig(q_eq=20, w=2, occ_width=8, len_width=16, jitter=0.0,
                      sample_table=(101,) * 8)
    lengths = [1200, 1, 100, 65535, 0, 100, 1, 32768, 50, 50, 1]
    want = [1, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1]
    frames = [CpFrame(0, n) for n in lengths]
    got = run_rtl_rounds(cfg, [({}, frames)], p_ready=1.0)
    assert [int(d.sampled) for d in got] == want
    assert got == model_rounds(cfg, [({}, frames)])


def test_quantizer_negative_product_with_the_reciprocal_top_bit_set():
    """Fb_max written 0: 63 |Fb| + Fb_max - 1 = -1, so qntzFb is the low 6 bits of -M >> K.
    M = 2**35 + 12345 (the reciprocal's top bit in the default 36-bit build):
    K 0: -12345 mod 64 = 7; K 3: floor(-M / 8) = -2**32 - 1544, mod 64 = 56;
    K 35: floor(-M / 2**35) = -2 -> 62; K 36: -1 -> 63."""
    cfg = every_frame()
    assert cfg.mult_width == 36
    frames = [CpFrame(30_000, 1)] * 2            # s > 0 on both (Q_eq 26000, w 2)
    rounds, want = [], []
    for k, q in ((0, 7), (3, 56), (35, 62), (36, 63)):
        rounds.append(({"FB_MAX": 0, "QNTZ_MULT_LO": 12345, "QNTZ_MULT_HI": 8,
                        "QNTZ_SHIFT": k}, frames))
        want += [q, q]
    got = run_rtl_rounds(cfg, rounds, p_ready=1.0)
    assert [d.qntz_fb for d in got] == want
    assert all(d.cnm for d in got)
    assert got == model_rounds(cfg, rounds)
