"""QCN congestion point: configuration, IEEE 802.1Qau known answers, the quantization against
exact rationals, the bit-exact model against the float reference, and the RTL in Amaranth's
simulator against the model.  (The long random runs are in cocotb_tests/, on Verilator.)"""

import math
import random
from fractions import Fraction

import pytest

from hw.params import ConfigError
from hw.switch.qcn_cp import QcnCp
from hw.switch.qcn_cp_config import SAMPLE_TABLE, QcnCpConfig
from sim.models.qcn import CpCodec, CpDecision, CpFrame, CpModel
from sim.reference.qcn import cp_feedback, cp_interval, cp_quantize
from tests.streams import run_testbenches, stream_get, stream_put

EVERY_FRAME = QcnCpConfig(sample_table=(1,) * 8, jitter=0.0)   # every frame is a sample


@pytest.mark.parametrize("field, value, text", [
    ("q_eq", 0, "QcnCpConfig.q_eq = 0 is out of range: allowed integer 1 <= q_eq"),
    ("w", 16, "QcnCpConfig.w = 16 is out of range: allowed integer 0 <= w <= 15"),
    ("jitter", 0.6, "QcnCpConfig.jitter = 0.6 is out of range: allowed 0.0 <= jitter <= 0.5"),
    ("sample_table", (1, 2), "QcnCpConfig.sample_table = (1, 2) is out of range"),
    ("sample_table", (0,) * 8, "sample_table"),
    ("draw_bits", 0, "QcnCpConfig.draw_bits = 0"),
])
def test_config_errors_name_field_value_range(field, value, text):
    with pytest.raises(ConfigError) as e:
        QcnCpConfig(**{field: value})
    assert text in str(e.value)
    assert e.value.field == field


def test_defaults_are_the_mib_values():
    cfg = QcnCpConfig()
    assert (cfg.q_eq, cfg.w, cfg.sample_table) == (26_000, 2, SAMPLE_TABLE)
    assert cfg.fb_max == 130_000
    assert QcnCpConfig.from_json(cfg.to_json()) == cfg


# Known answers of the IEEE 802.1Qau congestion point, Q_eq 26000, w 2:
#   (Q, Q_old) -> Fb, message; qntzFb by hand: ceil(min(|Fb|, 130000) * 63 / 130000);
#   QOffset/QDelta by hand: floor(bytes / 64).
KNOWN = [
    (40_000, 36_000, -22_000, CpDecision(True, True, 11, 218, 62)),       # 10.66 -> 11
    (100_000, 60_000, -154_000, CpDecision(True, True, 63, 1156, 625)),   # saturates: 63
    (30_000, 29_000, -6_000, CpDecision(True, True, 3, 62, 15)),          # 2.91 -> 3
    (20_000, 30_000, 26_000, CpDecision(True, False, 0, 0, 0)),           # Fb > 0: no CNM
]


@pytest.mark.parametrize("q, q_old, fb, expected", KNOWN)
def test_known_answers_model(q, q_old, fb, expected):
    assert cp_feedback(q, q_old, 26_000, 2) == fb
    model = CpModel(EVERY_FRAME)
    model.step(CpFrame(q_old, 1))            # this sample sets Q_old
    assert model.q_old == q_old
    assert model.step(CpFrame(q, 1)) == expected


@pytest.mark.parametrize("q_eq, w", [(26_000, 2), (26_000, 0), (12_345, 3), (1, 15)])
def test_quantization_is_the_exact_ceiling(q_eq, w):
    reg = QcnCpConfig(q_eq=q_eq, w=w).registers()
    fb_max = q_eq * (2 * w + 1)
    mags = range(1, fb_max + 1) if fb_max <= 200_000 else \
        [*range(1, 70_000), *random.Random(1).sample(range(fb_max), 50_000), fb_max]
    for mag in mags:
        assert CpModel.quantize(reg, mag) == math.ceil(Fraction(mag * 63, fb_max)), mag
    assert CpModel.quantize(reg, fb_max * 5) == 63       # saturation


def test_model_against_float_reference():
    """Every sample: qntzFb equal to the float reference's, and the next interval within the
    derived bound of 2 bytes (round(S(1-j)) and round(2jS) each off by <= 1/2, the floor of the
    product by < 1)."""
    cfg = QcnCpConfig(sample_table=tuple(s // 20 for s in SAMPLE_TABLE))
    model, rng = CpModel(cfg), random.Random(5)
    lfsr, q_old, worst, qntzs = cfg.lfsr.seed, 0, 0.0, set()
    q = 26_000
    for _ in range(60_000):
        q = max(0, min(200_000, q + rng.randint(-1500, 1600)))
        d = model.step(CpFrame(q, rng.choice((64, 512, 1500))))
        if d.sampled:
            fb = cp_feedback(q, q_old, cfg.q_eq, cfg.w)
            q_old = q
            assert d.qntz_fb == cp_quantize(fb, cfg.q_eq, cfg.w)
            assert d.cnm == (fb < 0)
            lfsr, r = cfg.lfsr.draw(lfsr, cfg.draw_bits)
            ref = cp_interval(cfg.sample_table, d.qntz_fb, cfg.jitter, r / (1 << cfg.draw_bits))
            worst = max(worst, abs(model.remaining - ref))
            qntzs.add(d.qntz_fb)
    assert worst < 2
    assert len(qntzs) > 30 and model.cnms > 500 and model.samples > model.cnms


def test_sampling_rate_follows_the_table():
    """Constant congestion (Q = 60000, steady): samples every S[qntzFb >> 3] (1 +/- 15 %)
    bytes on average; with 64-byte frames, S / 64 + 1/2 frames per sample within 2 %."""
    cfg = QcnCpConfig()
    model = CpModel(cfg)
    model.q_old = 60_000
    frames = 0
    for _ in range(2_000_000):
        frames += 1
        model.step(CpFrame(60_000, 64))
    # Q_off 34000, Q_delta 0 after the first sample: qntzFb = ceil(34000*63/130000) = 17
    assert CpModel.quantize(model.reg, 34_000) == 17
    expected = SAMPLE_TABLE[17 >> 3] / 64 + 0.5
    assert abs(frames / model.samples - expected) / expected < 0.02


def run_rtl(cfg, frames, p_ready=0.7):
    return run_rtl_rounds(cfg, [({}, frames)], p_ready=p_ready)


def run_rtl_rounds(cfg, rounds, p_ready=0.7, seed=3):
    """The RTL's decisions for ``rounds``, each ``(register writes by name, frames)``: the
    writes go through the register port (each waits for ``csr_w.ready``), then the frames."""
    dut, codec, got = QcnCp(cfg), CpCodec(cfg), []
    rmap = cfg.register_map()

    async def sender(ctx):
        for regs, frames in rounds:
            for name, value in regs.items():
                ctx.set(dut.csr_w.payload, {"addr": rmap.addr(name), "data": value})
                ctx.set(dut.csr_w.valid, 1)
                await ctx.tick().until(dut.csr_w.ready)
                ctx.set(dut.csr_w.valid, 0)
            await stream_put(ctx, dut.frame, [codec.pack_frame(f) for f in frames])

    async def receiver(ctx):
        n = sum(len(f) for _, f in rounds)
        bits = await stream_get(ctx, dut.decision, n, rng=random.Random(seed), p_ready=p_ready)
        got.extend(codec.unpack_decision(b) for b in bits)

    run_testbenches(dut, sender, receiver)
    return got


def model_rounds(cfg, rounds):
    """The model's decisions for the same ``rounds``."""
    model, rmap, out = CpModel(cfg), cfg.register_map(), []
    for regs, frames in rounds:
        for name, value in regs.items():
            model.write(rmap.addr(name), value)
        out += [model.step(f) for f in frames]
    return out


@pytest.mark.parametrize("q, q_old, fb, expected", KNOWN)
def test_known_answers_rtl(q, q_old, fb, expected):
    got = run_rtl(EVERY_FRAME, [CpFrame(q_old, 1), CpFrame(q, 1)], p_ready=1.0)
    assert got[1] == expected


def test_rtl_random_frames_match_model():
    cfg = QcnCpConfig(sample_table=(3000, 2500, 2000, 1500, 1200, 1000, 800, 600), jitter=0.3)
    rng = random.Random(11)
    frames, q = [], 20_000
    for _ in range(500):
        q = max(0, min((1 << 24) - 1, q + rng.randint(-3000, 3200)))
        frames.append(CpFrame(rng.choice((q, q, q, 0, (1 << 24) - 1)),
                              rng.choice((0, 64, 300, 1500, (1 << 14) - 1))))
    model = CpModel(cfg)
    expected = [model.step(f) for f in frames]
    assert run_rtl(cfg, frames) == expected
    assert model.cnms > 20 and model.samples > model.cnms


def test_rtl_quantization_edges():
    """Steady queue (Q = Q_old): -Fb = Q - 26000.  Edge magnitudes: 1, where 63 |Fb| is just
    above a multiple of Fb_max (the ceiling's +Fb_max-1 matters), band edges, Fb_max +/- 1."""
    fb_max = 130_000
    inv = pow(63, -1, fb_max)                 # 63 * inv == 1 (mod Fb_max)
    mags = [1, inv, 2 * inv % fb_max, fb_max - 1, fb_max, fb_max + 1,
            *[(k * fb_max) // 63 for k in (8, 16, 24, 56)], *[(k * fb_max) // 63 + 1
                                                              for k in (8, 16, 24, 56)]]
    frames = [f for mag in mags for f in (CpFrame(26_000 + mag, 1), CpFrame(26_000 + mag, 1))]
    got = run_rtl(EVERY_FRAME, frames, p_ready=1.0)
    for mag, d in zip(mags, got[1::2], strict=True):
        assert d.qntz_fb == math.ceil(Fraction(min(mag, fb_max) * 63, fb_max)), mag


@pytest.mark.parametrize("occ_width", [8, 20])
def test_narrow_occupancy_builds_and_matches_model(occ_width):
    """A narrow occupancy (the quantizer's reciprocal then fits one 32-bit register word: no
    QNTZ_MULT_HI) builds, and steady queues quantize to the exact ceiling of 63 |Fb| / Fb_max."""
    top = (1 << occ_width) - 1
    q_eq = top // 8
    cfg = QcnCpConfig(q_eq=q_eq, w=2, occ_width=occ_width, jitter=0.0,
                      sample_table=(1,) * 8, len_width=8)
    assert ("QNTZ_MULT_HI" in {r.name for r in cfg.register_map().registers}) is False
    fb_max = q_eq * 5
    mags = [1, fb_max // 63 + 1, fb_max // 2, top - q_eq]
    frames = [f for mag in mags for f in (CpFrame(q_eq + mag, 1), CpFrame(q_eq + mag, 1))]
    got = run_rtl(cfg, frames, p_ready=1.0)
    model = CpModel(cfg)
    assert got == [model.step(f) for f in frames]
    for mag, d in zip(mags, got[1::2], strict=True):
        assert d.qntz_fb == math.ceil(Fraction(min(mag, fb_max) * 63, fb_max)), mag


def test_rtl_any_quantizer_constants_match_model():
    """The pipelined quantizer with register values that no configuration derives: random
    reciprocals M (both words), shifts K over 0..127 (past the product's width), Fb_max = 0
    (then 63 |Fb| + Fb_max - 1 = -1 and the product is -M), w = 15 (every bit of the weight
    product); every frame a sample.  RTL = model, frame by frame."""
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    rng = random.Random(seed)
    cfg = EVERY_FRAME
    top = (1 << cfg.occ_width) - 1
    rounds = []
    for k in range(6):
        regs = {"Q_EQ": rng.randrange(top), "W": (15, 0, rng.randrange(16))[k % 3],
                "FB_MAX": (0, 1, rng.randrange(1 << cfg.fb_max_width))[k % 3],
                "QNTZ_MULT_LO": rng.getrandbits(32),
                "QNTZ_MULT_HI": rng.getrandbits(cfg.mult_width - 32),
                "QNTZ_SHIFT": (127, 0, rng.randrange(128), 40, 70, 3)[k]}
        frames = [CpFrame(rng.choice((0, top, regs["Q_EQ"], rng.randrange(top + 1))), 1)
                  for _ in range(12)]
        rounds.append((regs, frames))
    got = run_rtl_rounds(cfg, rounds, p_ready=0.8, seed=seed)
    expected = model_rounds(cfg, rounds)
    assert got == expected, f"seed {seed}"
    assert any(d.cnm and d.qntz_fb not in (0, 63) for d in expected)
