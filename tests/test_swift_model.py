"""Swift: configuration, the bit-exact model's known answers (the cut and its once-per-RTT guard,
the transitions into and out of sub-one-packet pacing), boundaries, the flow-scaling ROM, and
the model against the float reference written from the paper (``docs/swift.md``)."""

from __future__ import annotations

import math
import os
import random

import pytest

from hw.nic.swift_config import CW_ONE, FS_ENTRIES, SwiftConfig, fs_index
from hw.params import ConfigError
from sim.models.swift import SwiftAck, SwiftModel
from sim.reference.swift import SwiftRef, SwiftRefParams

SEED = int(os.environ.get("CC_SEED", "1"))

# 1 MHz: one cycle is one microsecond.  Fabric target 10 + 2 per hop, no flow scaling; the
# endpoint target (100) is never reached, so ecwnd only grows and cwnd = fcwnd after a cut.
KAT = dict(clk_hz=1_000_000, base_target_us=10, hop_scale_us=2, fs_range_us=0,
           endpoint_target_us=100, ai=1.0, beta=0.8, max_mdf=0.5, min_cwnd=0.125,
           max_cwnd=64, init_cwnd=4)


def test_registers():
    r = SwiftConfig(**KAT).registers()
    assert (r.base_target, r.hop_scale, r.endpoint_target) == (10, 2, 100)
    assert (r.ai, r.beta, r.mdf_floor) == (65536, 52429, 32768)
    assert (r.min_cwnd, r.max_cwnd, r.init_cwnd) == (8192, 64 << 16, 4 << 16)
    assert set(r.fs_rom) == {0} and len(r.fs_rom) == FS_ENTRIES
    cfg = SwiftConfig()
    assert SwiftConfig.from_json(cfg.to_json()) == cfg
    assert cfg.registers().base_target == 1250          # 8 µs at 156.25 MHz


@pytest.mark.parametrize("field,value,needle", [
    ("min_cwnd", 0.0, "min_cwnd"),
    ("init_cwnd", 1000.0, "init_cwnd"),
    ("fs_max_cwnd", 0.05, "fs_max_cwnd"),
    ("max_mdf", 1.5, "max_mdf"),
    ("base_target_us", 0, "base_target_us"),
    ("fs_range_us", 200_000, "fs_range"),
    ("retx_reset", 0, "retx_reset"),
])
def test_bad_settings_are_one_clear_error(field, value, needle):
    with pytest.raises(ConfigError) as e:
        SwiftConfig(**{field: value})
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_known_answers_cut_guard_and_sub_one_pacing():
    # Hand-derived in UQ16.16 (docs/swift.md walks through them):
    m = SwiftModel(SwiftConfig(**KAT))
    steps = [
        # now, fabric delay -> fcwnd, ecwnd, t_last_decrease, pace
        # 8 < 12: +1/4 packet (2**32 // 4.0 = 16384)
        (100, 8, 278528, 278528, None, 0),
        # 24 >= 12, first cut: ratio 12/24 = 32768; 1 - 0.8 * 0.5 = 39322 (0.6): 2.55 packets;
        # ecwnd grows by 2**32 // 278528 = 15420
        (101, 24, 167118, 293948, 101, 0),
        # 9 cycles after the cut, RTT 30: no second cut in the same RTT
        (110, 30, 167118, 308559, 101, 0),
        # 30 cycles after: ratio 18/30 = 39321, 1 - 31456/65536 = 34080: 1.326 packets
        (131, 30, 86904, 322478, 131, 0),
        # RTT 120 now: 69 < 120, no cut
        (200, 120, 86904, 335796, 131, 0),
        # 129 >= 120: ratio 108/120 -> 1 - 0.72 below 1 - max_mdf: the cut is max_mdf (0.5);
        # 0.663 packets: paced every floor(120 * 65536 / 43452) = 180 cycles
        (260, 120, 43452, 348586, 260, 180),
        # 8 < 12 below one packet: +ai (a whole packet): 1.663, pacing off
        (261, 8, 108988, 360907, 260, 0),
    ]
    for now, fabric, f, e, stamp, pace in steps:
        s = m.on_ack(SwiftAck(now, fabric))
        assert (s.fcwnd, s.ecwnd, s.pace) == (f, e, pace), now
        assert s.decreased == (stamp is not None)
        if stamp is not None:
            assert s.t_last_decrease == stamp


def test_pacing_follows_the_rtt_and_the_window_below_one_packet():
    m = SwiftModel(SwiftConfig(**{**KAT, "init_cwnd": 1.0}))
    s = m.on_ack(SwiftAck(0, 40))                # cut by max_mdf: 0.5 packet
    assert (s.cwnd, s.pace) == (32768, 80)       # RTT / 0.5
    s = m.on_ack(SwiftAck(10, 40))               # same RTT: guarded
    assert (s.cwnd, s.pace) == (32768, 80)
    s = m.on_ack(SwiftAck(50, 40))               # 0.25 packet: 160 cycles
    assert (s.cwnd, s.pace) == (16384, 160)
    s = m.on_ack(SwiftAck(100, 40))
    s = m.on_ack(SwiftAck(150, 40))              # 0.0625 -> floor at min_cwnd 0.125
    assert (s.cwnd, s.pace) == (8192, 320)
    s = m.on_ack(SwiftAck(151, 11, endpoint=1))  # fabric 11 < 12: +1 packet; RTT 12
    assert (s.fcwnd, s.pace) == (8192 + 65536, 0)


def test_timeouts_and_fast_recovery():
    m = SwiftModel(SwiftConfig(**{**KAT, "retx_reset": 3}))
    m.on_ack(SwiftAck(0, 8))                     # rtt 8, 4.25 packets
    s = m.on_timeout(100)                        # no cut yet: cut by max_mdf
    assert s.cwnd == 278528 // 2 and s.retx == 1 and s.t_last_decrease == 100
    s = m.on_timeout(104)                        # within the RTT: no cut
    assert s.cwnd == 139264 and s.retx == 2
    s = m.on_timeout(105)                        # third in a row: min_cwnd
    assert s.cwnd == 8192 and s.retx == 3
    s = m.on_ack(SwiftAck(200, 8))               # an ACK clears the count
    assert s.retx == 0
    s = m.on_fast_recovery(300)
    assert s.cwnd == (8192 + 65536) // 2 and s.retx == 0
    assert m.on_fast_recovery(301).cwnd == 36864   # guarded (rtt 8)


def test_window_bounds_and_saturations():
    m = SwiftModel(SwiftConfig(**{**KAT, "init_cwnd": 63.99}))
    for t in range(200):
        s = m.on_ack(SwiftAck(t, 1, num_acked=10))
    assert s.fcwnd == s.ecwnd == 64 << 16
    # held at max_cwnd, the window does not restamp the guard: the next excess cuts at once
    s = m.on_ack(SwiftAck(1000, 500))
    assert s.fcwnd == 32 << 16 and s.t_last_decrease == 1000
    # delays saturate at the delay width; the pacing delay at 32 bits
    cfg = SwiftConfig(**{**KAT, "delay_width": 12, "min_cwnd": 2**-16, "init_cwnd": 2**-16})
    m = SwiftModel(cfg)
    s = m.on_ack(SwiftAck(0, 1 << 20, endpoint=1 << 20))
    assert s.rtt == 4095 and s.cwnd == 1 and s.pace == 4095 << 16


def test_flow_scaling_rom():
    cfg = SwiftConfig(fs_range_us=20, fs_min_cwnd=0.1, fs_max_cwnd=100)
    rom = cfg.registers().fs_rom
    assert fs_index(CW_ONE) == 16 << 4 and fs_index(CW_ONE + CW_ONE // 2) == (16 << 4) | 8
    assert fs_index(1) == 0 and fs_index((1 << 32) - 1) == FS_ENTRIES - 1
    assert all(rom[i] >= rom[i + 1] for i in range(len(rom) - 1))   # non-increasing
    a = 20 / (1 / math.sqrt(0.1) - 1 / math.sqrt(100))
    b = -a / math.sqrt(100)
    for cw in (0.01, 0.1, 0.3, 1.0, 1.7, 10.0, 99.0, 100.0, 1000.0):
        q = max(round(cw * CW_ONE), 1)
        exact = max(0.0, min(a / math.sqrt(q / CW_ONE) + b, 20.0)) * 156.25
        # the entry is the formula at the bucket's lower edge (>= q / (1 + 2**-4))
        lower = max(0.0, min(a / math.sqrt(q / CW_ONE / (1 + 1 / 16)) + b, 20.0)) * 156.25
        assert exact - 0.5 <= rom[fs_index(q)] <= lower + 0.5, cw


def test_model_tracks_the_float_reference():
    # The same ACKs (integer cycles at 1 MHz, so µs in the reference); no flow scaling, so the
    # targets are equal and both take the same branch.  The model differs by rounding only: an
    # increase floors (< 1 unit of 2**-16 packet), a cut's ratio floors (< 2**-16) and beta is
    # held in UQ0.16 (|0.8 - 52429/65536| < 2**-17), so a cut is off by less than 2**-15 of the
    # window before it plus a unit for the product's floor.  Errors never grow (an increase
    # ai/w has slope below 1 for w >= 1, a cut scales by < 1), so they add up as the bound does.
    print(f"CC_SEED={SEED}")
    rng = random.Random(SEED)
    p = SwiftRefParams(base_target_us=10, hop_scale_us=2, fs_range_us=0, endpoint_target_us=100,
                    max_cwnd=256, init_cwnd=10, min_cwnd=0.01)
    cfg = SwiftConfig(clk_hz=1_000_000, base_target_us=10, hop_scale_us=2, fs_range_us=0,
                      endpoint_target_us=100, max_cwnd=256, init_cwnd=10, min_cwnd=0.01)
    for trial in range(20):
        m, ref = SwiftModel(cfg), SwiftRef(p)
        now, bound, worst = 0, 0.0, 0.0
        delay = rng.randrange(5, 30)
        for _ in range(400):
            now += rng.randrange(1, 8)
            delay = min(max(delay + rng.randrange(-3, 4), 1), 60)
            before = ref.fcwnd
            m.on_ack(SwiftAck(now, delay, hops=1))
            ref.on_ack(now, delay, hops=1)
            if ref.fcwnd < before:
                bound = bound + 2**-15 * before + 2**-16
            else:
                bound += 2**-16
            got = m.state.fcwnd / CW_ONE
            assert abs(got - ref.fcwnd) <= bound + 1e-12, (trial, now, got, ref.fcwnd, bound)
            assert (m.state.pace > 0) == (ref.cwnd < 1)
            worst = max(worst, abs(got - ref.fcwnd))
        assert bound < 0.05, bound


def test_state_stays_within_its_declared_widths():
    # Random events, extremes included: windows in [min_cwnd, max_cwnd], delays within
    # delay_width, the pacing delay within 32 bits and 0 exactly when cwnd >= 1 packet.
    rng = random.Random(SEED + 1)
    for cfg in (SwiftConfig(), SwiftConfig(**KAT),
                SwiftConfig(delay_width=12, base_target_us=1, fs_range_us=10,
                            min_cwnd=2**-16, max_cwnd=65535, init_cwnd=1.0)):
        m = SwiftModel(cfg)
        r = m.r
        now = 0
        for _ in range(3000):
            now = (now + rng.choice((0, 1, rng.randrange(1 << 20), 1 << 31))) & 0xFFFFFFFF
            kind = rng.randrange(10)
            if kind == 0:
                s = m.on_timeout(now)
            elif kind == 1:
                s = m.on_fast_recovery(now)
            else:
                s = m.on_ack(SwiftAck(now, rng.choice((0, 1, 1 << 30, rng.randrange(1 << 16))),
                                      rng.choice((0, rng.randrange(1 << 12))),
                                      rng.randrange(0, 300), rng.randrange(1, 64)))
            for w in (s.fcwnd, s.ecwnd):
                assert r.min_cwnd <= w <= r.max_cwnd < 1 << 32
            assert 0 <= s.rtt <= r.delay_max and 0 <= s.target <= r.delay_max
            assert 0 <= s.pace < 1 << 32 and (s.pace == 0) == (s.cwnd >= CW_ONE or s.rtt == 0)
            assert 0 <= s.retx <= r.retx_reset
