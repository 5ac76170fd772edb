"""The LFSR shared by RTL and models: primitive polynomial, jump-ahead map, hardware == model."""

import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from hw.lfsr import POLY32, LfsrParams
from hw.params import ConfigError
from hw.switch.hash_table_config import _mulmod  # GF(2) polynomial product mod poly


def _gf2_powmod(e: int, poly: int, deg: int) -> int:
    result, base = 1, 2  # the polynomial "x"
    while e:
        if e & 1:
            result = _mulmod(result, base, poly, deg)
        base = _mulmod(base, base, poly, deg)
        e >>= 1
    return result


def test_default_polynomial_is_primitive():
    """x^32 + x^22 + x^2 + x + 1: x has order exactly 2^32 - 1 modulo the polynomial, so the
    LFSR visits every non-zero state (period 2^32 - 1)."""
    poly = (1 << 32) | (1 << 22) | (1 << 2) | (1 << 1) | 1
    order = (1 << 32) - 1
    assert _gf2_powmod(order, poly, 32) == 1
    for p in (3, 5, 17, 257, 65537):  # the prime factors of 2^32 - 1
        assert order % p == 0
        assert _gf2_powmod(order // p, poly, 32) != 1


def test_fibonacci_taps_match_polynomial_period_small():
    """Same construction at width 8 (x^8 + x^6 + x^5 + x^4 + 1): the step function cycles
    through all 255 non-zero states, which checks the tap convention of step()."""
    lfsr = LfsrParams(width=8, taps=(1 << 7) | (1 << 5) | (1 << 4) | (1 << 3), seed=1)
    state, seen = 1, set()
    for _ in range(255):
        seen.add(state)
        state = lfsr.step(state)
    assert state == 1 and len(seen) == 255


def test_transition_masks_equal_repeated_steps():
    lfsr = LfsrParams()
    masks = lfsr.transition_masks(16)
    state = lfsr.seed
    for _ in range(200):
        jumped = sum((((state & m).bit_count() & 1) << i) for i, m in enumerate(masks))
        state2 = lfsr.step(state, 16)
        assert jumped == state2
        state = state2


def test_hardware_next_state_matches_model():
    lfsr = LfsrParams()
    m = Module()
    state = Signal(32, init=lfsr.seed)
    m.d.sync += state.eq(lfsr.next_state(state, 16))
    sim = Simulator(m)
    sim.add_clock(1e-6)
    seen = []

    async def bench(ctx):
        for _ in range(50):
            seen.append(ctx.get(state))
            await ctx.tick()

    sim.add_testbench(bench)
    sim.run()
    expected, s = [], lfsr.seed
    for _ in range(50):
        expected.append(s)
        s = lfsr.step(s, 16)
    assert seen == expected


@pytest.mark.parametrize("kwargs, field", [
    ({"seed": 0}, "seed"), ({"width": 1}, "width"), ({"taps": 0}, "taps"),
    ({"width": 16, "taps": 0x0001, "seed": 1}, "taps"),
])
def test_invalid_lfsr_parameters(kwargs, field):
    with pytest.raises(ConfigError) as e:
        LfsrParams(**kwargs)
    assert e.value.field == field and f"LfsrParams.{field}" in str(e.value)


def test_poly_constant():
    assert POLY32 == 0x80200003


def test_table_draw_equals_stepping():
    for lfsr in (LfsrParams(), LfsrParams(width=20, taps=(1 << 19) | (1 << 16), seed=77)):
        s1 = s2 = lfsr.seed
        for bits in (16, 12, 5) * 100:
            s1, v1 = lfsr.draw(s1, bits)
            s2 = lfsr.step(s2, bits)
            assert s1 == s2 and v1 == s2 & ((1 << bits) - 1)
