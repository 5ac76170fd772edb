"""TIMELY: configuration, the bit-exact model's known answers and boundaries, and the model
against the float reference written from the paper (``docs/timely.md``)."""

from __future__ import annotations

import os
import random

import pytest

from hw.nic.timely_config import GRAD_MAX, TimelyConfig
from hw.params import ConfigError
from sim.models.divider import restoring_divide, udiv_sat
from sim.models.timely import (
    REGION_GRAD_DEC,
    REGION_GRAD_INC,
    REGION_HIGH,
    REGION_LOW,
    TimelyCompletion,
    TimelyModel,
)
from sim.reference.timely import TimelyRef, TimelyRefParams

SEED = int(os.environ.get("CC_SEED", "1"))

# 1 MHz: one cycle is one microsecond, so the hand derivations below read in µs.  A 8192 Mb/s
# line serializes a 16 KB segment in exactly 16 µs (ser_per_byte = 2**14 in UQ.24).
KAT = dict(clk_hz=1_000_000, line_rate_mbps=8192, ewma_alpha=0.5, beta=0.5, delta_mbps=10,
           t_low_us=50, t_high_us=500, min_rtt_us=20, hai_thresh=3, hai_mult=5,
           init_rate_mbps=5000, app_limit_pct=0)


def completion(rtt: int, t_send: int = 1000, seg: int = 16384, **kw) -> TimelyCompletion:
    return TimelyCompletion(t_send, (t_send + rtt + 16) & 0xFFFFFFFF, seg, **kw)


def test_registers_at_the_default_clock():
    r = TimelyConfig().registers()
    # 156.25 MHz: 50 µs = 7812.5 cycles (round half to even), 500 µs, 20 µs; 100 Gb/s moves a
    # byte in 0.0125 cycles = 209715.2 / 2**24
    assert (r.t_low, r.t_high, r.min_rtt) == (7812, 78125, 3125)
    assert r.inv_min_rtt == 1374390            # round(2**32 / 3125) = round(1374389.53)
    assert r.ser_per_byte == 209715
    assert (r.alpha, r.beta) == (57344, 52429)  # 0.875, 0.8 in UQ0.16
    assert (r.delta, r.max_rate, r.init_rate, r.min_rate) == (10240, 102_400_000,
                                                               102_400_000, 10240)
    assert TimelyConfig.from_json(TimelyConfig().to_json()) == TimelyConfig()


@pytest.mark.parametrize("field,value,needle", [
    ("segment_bytes", 8192, "16384 <= segment_bytes <= 65536"),
    ("segment_bytes", 65537, "segment_bytes"),
    ("t_low_us", 600, "t_low_us <= t_high_us"),
    ("ewma_alpha", 0.0, "ewma_alpha"),
    ("beta", 1.5, "beta"),
    ("min_rate_mbps", 0, "min_rate_mbps"),
    ("hai_thresh", 0, "hai_thresh"),
    ("app_limit_pct", 101, "app_limit_pct"),
    ("t_high_us", float("nan"), "t_high_us"),
])
def test_bad_settings_are_one_clear_error(field, value, needle):
    with pytest.raises(ConfigError) as e:
        TimelyConfig(**{field: value})
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_known_answers_rising_then_falling_rtt():
    # Hand-derived (docs/timely.md walks through the first five): rate in 2**-10 Mb/s,
    # rtt_diff in cycles/256, gradient in Q.16.
    m = TimelyModel(TimelyConfig(**KAT))
    expected = [
        # rtt, region, gradient, rtt_diff, rate
        (30, REGION_LOW, 0, 0, 5_130_240),            # first sample: +delta
        (40, REGION_LOW, 16384, 1280, 5_140_480),     # diff 10 -> 5 (0.25 minRTT)
        (100, REGION_GRAD_DEC, 106496, 8320, 963_840),  # 32.5/20 = 1.625: x(1 - 0.8125)
        (140, REGION_GRAD_DEC, 118784, 9280, 90_360),   # 1.8125: x 0.09375
        (600, REGION_HIGH, 813056, 63520, 82_830),      # x(1 - 0.5(1 - 54613/65536))
        (180, REGION_GRAD_INC, -281601, -22000, 93_070),  # falling: +delta (1st <= 0)
        (150, REGION_GRAD_INC, -189953, -14840, 103_310),  # 2nd
        (120, REGION_GRAD_INC, -144129, -11260, 154_510),  # 3rd: HAI, +5 delta
        (120, REGION_GRAD_INC, -72065, -5630, 205_710),
        (120, REGION_GRAD_INC, -36033, -2815, 256_910),
        (40, REGION_LOW, -149095, -11648, 267_150),   # below T_low: +delta only
    ]
    for rtt, region, grad, diff, rate in expected:
        out = m.complete(completion(rtt))
        assert (out.rtt, out.region, out.gradient, m.state.rtt_diff, out.rate) == \
            (rtt, region, grad, diff, rate), rtt


def test_rtt_is_completion_minus_send_minus_serialization_modulo_the_counter():
    m = TimelyModel(TimelyConfig(**KAT))
    # the send stamp just before the 32-bit counter wraps
    assert m.complete(completion(77, t_send=0xFFFFFFF0)).rtt == 77
    # a 64 KB segment serializes in 64 µs at 8192 Mb/s; a short one rounds down
    assert m.rtt_of(TimelyCompletion(0, 164, 65536)) == 100
    assert m.rtt_of(TimelyCompletion(0, 100, 16385)) == 84     # 16.002 -> 16
    assert m.rtt_of(TimelyCompletion(0, 10, 16384)) == 0      # below 0 clamps
    assert m.rtt_of(TimelyCompletion(0, 1 << 31, 16384)) == (1 << 24) - 1   # saturates


def test_application_limited_flows_do_not_increase():
    cfg = TimelyConfig(**{**KAT, "app_limit_pct": 80})
    # 5000 Mb/s over 100 µs is 62,500 bytes; 80 % is 50,000
    for sent, grows in ((50_000, True), (49_999, False)):
        m = TimelyModel(cfg)
        out = m.complete(completion(30, app_bytes=sent, app_cycles=100))
        assert (out.rate > cfg.init_rate) is grows, sent
    # a decrease still happens
    m = TimelyModel(cfg)
    m.complete(completion(100, app_bytes=0, app_cycles=100))
    assert m.complete(completion(700, app_bytes=0, app_cycles=100)).rate < cfg.init_rate


def test_rate_bounds_and_saturations():
    cfg = TimelyConfig(**{**KAT, "init_rate_mbps": 8190})
    m = TimelyModel(cfg)
    assert m.complete(completion(30)).rate == 8192 << 10       # AI saturates at the max
    assert m.complete(completion(30)).rate == 8192 << 10
    # a jump of 16 ms in one completion: the gradient saturates, the factor floors at 0, the
    # rate at min_rate; rtt_diff stays within its width
    out = m.complete(completion(400))
    out = m.complete(completion(16_000))   # > T_high: the T_high rule, not the gradient
    assert out.region == REGION_HIGH
    m2 = TimelyModel(TimelyConfig(**{**KAT, "t_high_us": 60_000}))
    m2.complete(completion(60))
    out = m2.complete(completion(50_000))
    assert out.gradient == GRAD_MAX and out.region == REGION_GRAD_DEC
    assert out.rate == 10 << 10
    m3 = TimelyModel(TimelyConfig(**{**KAT, "rtt_width": 12, "t_high_us": 4000,
                                      "t_low_us": 50}))
    m3.complete(completion(4095 + 1000))
    assert m3.state.prev_rtt == 4095
    m3.complete(completion(60))
    assert m3.state.rtt_diff == -(4035 << 8) // 2


def test_queue_size_form_has_no_gradient_region():
    # T_low = T_high: every RTT but exactly T is an additive increase or a T_high cut
    m = TimelyModel(TimelyConfig(**{**KAT, "t_low_us": 100, "t_high_us": 100}))
    for rtt in (50, 99, 101, 150, 60, 99, 300):
        assert m.complete(completion(rtt)).region == (REGION_LOW if rtt < 100 else REGION_HIGH)


def test_udiv_sat_is_a_restoring_divider():
    rng = random.Random(SEED)
    for _ in range(3000):
        den = rng.randrange(1, 1 << rng.randrange(1, 25))
        num = rng.randrange(0, 1 << rng.randrange(1, 42))
        for q in (16, 32):
            assert udiv_sat(num, den, q) == restoring_divide(num, den, q), (num, den, q)


def test_model_tracks_the_float_reference():
    # Same completions (integer cycles at 156.25 MHz, given to the reference in µs).  The model
    # differs only by rounding: the rate floors to 2**-10 Mb/s, each factor to 2**-16, the
    # gradient to 2**-16 and rtt_diff to 1/256 cycle (the EWMA's floors stay below
    # 1/alpha = 1.15 units: 1.4e-6 of minRTT), so a cut's factor is off by less than
    # beta * (2**-16 + 1.4e-6) + 2**-16 < 3 * 2**-16 of the rate before it, plus a unit for the
    # product's floor; an increase adds exactly.  The bound accumulates that (errors never
    # grow: increases add, cuts scale by < 1).
    print(f"CC_SEED={SEED}")
    rng = random.Random(SEED)
    cfg = TimelyConfig(init_rate_mbps=40_000, app_limit_pct=0)
    regs = cfg.registers()
    for trial in range(20):
        m = TimelyModel(cfg)
        # the thresholds as the hardware holds them (whole cycles: T_low = 7812 cycles is
        # 49.9968 µs), so both sides take the same branch for the same RTT
        ref = TimelyRef(TimelyRefParams(init_rate_mbps=40_000, max_rate_mbps=100_000.0,
                                     t_low_us=regs.t_low / 156.25,
                                     t_high_us=regs.t_high / 156.25))
        rtt = rng.randrange(3125, 200_000)
        bound = 0.0
        for _ in range(300):
            rtt = max(1, rtt + rng.randrange(-8000, 8000))
            out = m.complete(TimelyCompletion(0, rtt + 205, 16384))  # 16384 B: 204.8 cycles
            ref_rtt = out.rtt / cfg.clk_hz * 1e6
            before = ref.rate
            r = ref.complete(ref_rtt)
            if r < before:
                bound = bound * r / before + 3 * 2**-16 * before + 2 / 1024
            got = out.rate / 1024
            assert abs(got - r) <= bound + 1e-9, (trial, rtt, got, r, bound)
        assert bound < 0.01 * 100_000, bound


def test_state_stays_within_its_declared_widths():
    # Random completions, extremes included: every state word and output within the widths
    # docs/timely.md declares (what the RTL's registers will hold).
    rng = random.Random(SEED + 1)
    for cfg in (TimelyConfig(), TimelyConfig(**KAT), TimelyConfig(rtt_width=12, t_low_us=1,
                                                                  t_high_us=2, min_rtt_us=1)):
        m = TimelyModel(cfg)
        r = m.r
        for _ in range(3000):
            t = rng.randrange(1 << 32)
            rtt = rng.choice((0, 1, r.t_low, r.t_high, r.rtt_max, 1 << 31,
                              rng.randrange(1 << rng.randrange(1, 32))))
            out = m.complete(TimelyCompletion(t, (t + rtt) & 0xFFFFFFFF,
                                              rng.choice((16384, 65536, 1)),
                                              rng.randrange(1 << 20), rng.randrange(1 << 26)))
            s = m.state
            assert r.min_rate <= s.rate <= r.max_rate < 1 << cfg.rate_width
            assert 0 <= out.rtt <= r.rtt_max and 0 <= s.prev_rtt <= r.rtt_max
            assert abs(s.rtt_diff) < 1 << (cfg.rtt_width + 8)
            assert abs(out.gradient) <= GRAD_MAX and 0 <= s.neg <= r.hai_thresh
