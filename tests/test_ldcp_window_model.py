"""LDCP window engine: configuration, bit-exact model against the float reference of the draft,
the known answers worked from the draft's equations, the reciprocal table, the coalescing wrapper
and the timer.

Expected values come from the draft's equations (sim/reference/ldcp_window.py, exact rationals
for the timer) and from known answers worked from the draft, never from the model itself.  The
error bounds used here
are derived in docs/ldcp-window.md ("Error against the float equations").
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from hw.layouts import LdcpDecRule, LdcpIncRule
from hw.nic.ldcp_window_config import (
    ONE,
    RECIP_BITS,
    UPDATE_LATENCY,
    LdcpWindowConfig,
    recip_table,
)
from hw.params import ConfigError
from sim.models.ldcp_window import Ack, LdcpWindowModel, reciprocal, update
from sim.reference import ldcp_window as ref

LSB = 2.0 ** -16
#: Derived bound of the table reciprocal, in units of 2**-18 (docs: chord error 1, table
#: rounding 0.5, product truncation 1, dropped mantissa bits 1).
RECIP_BOUND_LSB = 3.5


# ------------------------------------------------------------------------------------------------
# Configuration
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("field, value", [
    ("alpha", 0.0), ("alpha", 1.5), ("alpha", 1e-6), ("alpha", float("nan")), ("alpha", "1"),
    ("beta", 0.0), ("beta", -0.1), ("beta", 2.0),
    ("gamma", 0.2), ("gamma", 1.0), ("gamma", 2.0 ** -9),
    ("m", 0), ("m", 33), ("m", 2.0), ("m", True),
    ("cw_max", 0.5), ("cw_max", 70000.0),
    ("cw_init", 0.01), ("cw_init", 5000.0),
    ("rtt_us", 0.0), ("rtt_us", -1.0), ("rtt_us", 1e6), ("rtt_us", 0.001),
    ("clk_hz", 0), ("clk_hz", 10**10),
    ("mtu", 10), ("mtu", 10000),
])
def test_config_rejects(field, value):
    with pytest.raises(ConfigError) as info:
        LdcpWindowConfig(**{field: value})
    err = info.value
    assert err.field == field and err.owner == "LdcpWindowConfig"
    assert field in str(err) and "allowed" in str(err)


def test_config_registers():
    cfg = LdcpWindowConfig(alpha=0.3, beta=1.0, gamma=1 / 16, m=4, cw_max=125.5, cw_init=0.5,
                           rtt_us=8.0, clk_hz=250_000_000, mtu=4096)
    r = cfg.registers()
    assert r.alpha == round(0.3 * 65536) == 19661
    assert r.beta == 65536 and r.gamma == 4096
    assert r.cw_max == 125 * 65536 + 32768 and r.cw_init == 32768
    assert r.rtt == 2000 and r.mtu == 4096 and r.m == 4
    assert LdcpWindowConfig.from_json(cfg.to_json()) == cfg
    # the default clock, 156.25 MHz: 8 µs = 1250 cycles, the default 10 µs = 1562.5 -> 1562
    assert LdcpWindowConfig(rtt_us=8.0).registers().rtt == 1250
    assert LdcpWindowConfig().registers().rtt == 1562


# ------------------------------------------------------------------------------------------------
# Reciprocal table
# ------------------------------------------------------------------------------------------------
def test_reciprocal_exhaustive():
    """Every table segment and interpolation step, at both ends of the mantissa interval that
    maps to it: |r - 2**18 / x| <= 4 LSB (2**-18), i.e. relative error <= 2**-15."""
    worst = 0.0
    for k in range(1 << 18):
        cw = ((1 << 18) + k) << 13          # e = 15: mantissa 1 + k/2**18, 13 dropped bits
        r, e = reciprocal(cw)
        assert e == 15
        x_lo = 1 + k / 2 ** 18
        x_hi = 1 + (k + 1) / 2 ** 18
        worst = max(worst, abs(r - 2 ** 18 / x_lo), abs(r - 2 ** 18 / x_hi))
    assert worst <= RECIP_BOUND_LSB, worst
    print(f"reciprocal: max error {worst:.3f} LSB of 2**-18 (bound {RECIP_BOUND_LSB})")


def test_reciprocal_every_exponent():
    rng = random.Random(5)
    for e in range(16):
        for _ in range(200):
            cw = rng.randrange(ONE << e, ONE << (e + 1))
            r, got_e = reciprocal(cw)
            assert got_e == e
            exact = 2 ** (18 + e) * ONE / cw
            assert abs(r - exact) <= RECIP_BOUND_LSB + 1e-9


def test_recip_table_shape():
    table = recip_table()
    assert len(table) == 256
    assert table[0][0] == 1 << RECIP_BITS
    assert all(1 << (RECIP_BITS - 1) < t <= 1 << RECIP_BITS and 0 <= d < 1 << 10
               for t, d in table)


# ------------------------------------------------------------------------------------------------
# Known answers (worked from the draft's equations)
# ------------------------------------------------------------------------------------------------
def q(x: float) -> int:
    return round(x * ONE)


def test_known_answers_sub1():
    """gamma = 1/8: marked at 0.5 -> 0.25, marked at 0.2 -> gamma, unmarked at 0.5 -> 0.625."""
    cfg = LdcpWindowConfig(gamma=1 / 8)
    regs = cfg.registers()
    assert update(regs, q(0.5), 1, 0).cw == q(0.25)
    assert update(regs, q(0.2), 1, 0).cw == q(0.125)
    assert update(regs, q(0.5), 0, 1).cw == q(0.625)
    assert update(regs, q(0.2), 1, 0).dec == LdcpDecRule.HALVE_FLOOR
    for cw, ece, want in ((0.5, True, 0.25), (0.2, True, 0.125), (0.5, False, 0.625)):
        assert ref.pawa_ack(cw, ece, 1, 1.0, 0.5, 1 / 8, 1024.0) == want


def test_known_answer_increase_1000_acks():
    """From cw = 10, 1000 unmarked per-packet ACKs with alpha = 1 end near sqrt(10**2 + 2000);
    the bit-exact model stays within the accumulated local bound of the float recurrence."""
    cfg = LdcpWindowConfig(alpha=1.0, cw_max=1024.0, cw_init=10.0)
    regs = cfg.registers()
    cw_q, cw_f, bound = regs.cw_init, 10.0, 0.0
    for _ in range(1000):
        bound += local_bound(cfg, cw_q, False, 1)   # the map is non-expansive for cw >= 1
        cw_q = update(regs, cw_q, 0, 1).cw
        cw_f = ref.pawa_ack(cw_f, False, 1, 1.0, 0.5, 1 / 8, 1024.0)
        assert abs(cw_q / ONE - cw_f) <= bound
    target = ref.continuous_increase(10.0, 1000, 1.0)
    assert abs(target - 45.8) < 0.05
    assert abs(cw_f - target) < 0.05            # the recurrence vs its continuous limit
    print(f"1000 ACKs: float {cw_f:.6f}, model {cw_q / ONE:.6f}, gap {abs(cw_q / ONE - cw_f):.2e}"
          f" <= bound {bound:.2e}; continuous {target:.4f}")


# ------------------------------------------------------------------------------------------------
# Local error: model vs the draft's equation from the same state, long random sequences
# ------------------------------------------------------------------------------------------------
def local_bound(cfg: LdcpWindowConfig, cw_q: int, ece: bool, n: int) -> float:
    """Derived bound of |model - float| for one ACK from the same window (docs/ldcp-window.md):
    parameter rounding (alpha, beta: 2**-17 each), reciprocal (relative 2**-15), truncation of
    the increase or of a halving (2**-16), cap rounding (2**-16)."""
    cw = cw_q / ONE
    alpha_q = cfg.registers().alpha / ONE
    if cw >= 1:
        if ece:
            return n * 2.0 ** -17
        return n * 2.0 ** -17 / cw + n * alpha_q * 2.0 ** -15 / cw + 2 * LSB
    if ece:
        return LSB
    return LSB


CONFIGS = [
    LdcpWindowConfig(alpha=1.0, beta=1.0, gamma=1 / 4, m=4, cw_max=64.0, cw_init=4.0),
    LdcpWindowConfig(alpha=1.0, beta=0.5, gamma=1 / 8, m=8, cw_max=1000.0, cw_init=16.0),
    LdcpWindowConfig(alpha=0.3, beta=0.1, gamma=1 / 16, m=16, cw_max=300.7, cw_init=1.0),
    LdcpWindowConfig(alpha=2.0 ** -16, beta=2.0 ** -16, gamma=1 / 16, m=2, cw_max=65535.0,
                     cw_init=3.0),
]


class Walk:
    """Random ACKs whose mark probability drifts, so that both regimes, the floor, the cap and
    every crossing are visited."""

    def __init__(self, cfg, seed):
        self.cfg, self.rng = cfg, random.Random(seed)
        self.p = 0.5

    def __call__(self) -> Ack:
        rng = self.rng
        if rng.random() < 0.01:
            self.p = rng.choice((0.0, 0.01, 0.05, 0.2, 0.5, 0.8, 1.0, rng.random()))
        n = self.cfg.m if rng.random() < 0.1 else rng.randint(1, self.cfg.m)
        return Ack(rng.random() < self.p, n)


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: f"a{c.alpha:g}_b{c.beta:g}_g{c.gamma:g}")
def test_local_error_random(cfg):
    regs = cfg.registers()
    walk = Walk(cfg, 11)
    cw = regs.cw_init
    worst_ratio, seen = 0.0, set()
    for _ in range(30_000):
        ack = walk()
        u = update(regs, cw, ack.n if ack.ece else 0, 0 if ack.ece else ack.n)
        want = ref.pawa_ack(cw / ONE, ack.ece, ack.n, cfg.alpha, cfg.beta, cfg.gamma,
                            cfg.cw_max)
        gap = abs(u.cw / ONE - want)
        bound = local_bound(cfg, cw, ack.ece, ack.n)
        assert gap <= bound, (cw, ack, u, want)
        if bound:
            worst_ratio = max(worst_ratio, gap / bound)
        assert regs.gamma <= u.cw <= regs.cw_max
        seen.add(u.dec if ack.ece else u.inc)
        cw = u.cw
    need = {LdcpDecRule.LINEAR, LdcpIncRule.RECIP}
    if cfg.beta >= 0.01:   # the smallest beta never leaves the window regime in 30k ACKs
        need |= {LdcpDecRule.HALVE, LdcpDecRule.HALVE_FLOOR, LdcpIncRule.GAMMA,
                 LdcpIncRule.CROSS}
    assert need <= seen, need - seen
    print(f"{cfg}: worst gap / bound = {worst_ratio:.3f}; rules seen {sorted(map(str, seen))}")


def test_trajectory_gap_window_regime():
    """Free-running model and float recurrence over 100k ACKs in the window regime
    (cw >= sqrt(m alpha), where every step is non-expansive): the gap stays below the sum of
    the local bounds."""
    cfg = LdcpWindowConfig(alpha=1.0, beta=0.5, m=4, cw_max=1000.0, cw_init=50.0)
    regs = cfg.registers()
    rng = random.Random(3)
    cw_q, cw_f, bound, worst, low = regs.cw_init, 50.0, 0.0, 0.0, 1e9
    for _ in range(100_000):
        ece = rng.random() < 0.02
        n = rng.randint(1, cfg.m)
        bound += local_bound(cfg, cw_q, ece, n)
        cw_q = update(regs, cw_q, n if ece else 0, 0 if ece else n).cw
        cw_f = ref.pawa_ack(cw_f, ece, n, cfg.alpha, cfg.beta, cfg.gamma, cfg.cw_max)
        gap = abs(cw_q / ONE - cw_f)
        worst = max(worst, gap)
        low = min(low, cw_q / ONE, cw_f)
        assert gap <= bound
    assert low >= math.sqrt(cfg.m * cfg.alpha) + 0.5, "premise of the test: window regime"
    print(f"trajectory: max gap {worst:.3e} packets, final bound {bound:.3e}, min cw {low:.2f}")


# ------------------------------------------------------------------------------------------------
# Crossing rules and corner cases (directed, against the draft's equations)
# ------------------------------------------------------------------------------------------------
def test_crossings_directed():
    cfg = LdcpWindowConfig(alpha=1.0, beta=0.5, gamma=1 / 8, m=8, cw_max=10.0, cw_init=1.0)
    r = cfg.registers()
    # exactly at 1: window regime
    assert update(r, ONE, 1, 0) == update(r, ONE, 1, 0)
    u = update(r, ONE, 1, 0)
    assert u.cw == q(0.5) and u.dec == LdcpDecRule.CROSS
    u = update(r, ONE, 0, 1)
    assert u.cw == 2 * ONE and u.inc == LdcpIncRule.RECIP
    # decrease crossing below 1 by n > 1, and to the floor
    u = update(r, q(2.25), 3, 0)
    assert u.cw == q(0.75) and u.dec == LdcpDecRule.CROSS
    u = update(r, q(2.0), 8, 0)
    assert u.cw == q(1 / 8) and u.dec == LdcpDecRule.CROSS_FLOOR
    # sub-1 increases: n * gamma, crossing 1 and landing above it
    u = update(r, q(0.875), 0, 3)
    assert u.cw == q(1.25) and u.inc == LdcpIncRule.CROSS
    u = update(r, q(0.5), 0, 2)
    assert u.cw == q(0.75) and u.inc == LdcpIncRule.GAMMA
    # sub-1 decrease with n > 1: eta**n
    u = update(r, q(0.75), 2, 0)
    assert u.cw == q(0.1875) and u.dec == LdcpDecRule.HALVE
    # at the floor receiving marks, at the cap receiving unmarked ACKs
    for n in (1, 8):
        assert update(r, q(1 / 8), n, 0).cw == q(1 / 8)
        u = update(r, 10 * ONE, 0, n)
        assert u.cw == 10 * ONE and u.inc == LdcpIncRule.RECIP_CAP
    # the cap reached from the sub-1 regime (cw_max = 1)
    r1 = LdcpWindowConfig(cw_max=1.0, cw_init=1.0).registers()
    u = update(r1, q(0.875), 0, 2)
    assert u.cw == ONE and u.inc == LdcpIncRule.CROSS_CAP


def test_extremes_alpha_beta():
    cfg = LdcpWindowConfig(alpha=1.0, beta=1.0, m=32, cw_max=65535.0)
    big = cfg.registers()
    assert update(big, ONE, 0, 32).cw == 33 * ONE            # n = m at cw = 1: + 32
    assert abs(update(big, 3 * ONE, 0, 32).cw / ONE - (3 + 32 / 3)) <= local_bound(
        cfg, 3 * ONE, False, 32)
    assert update(big, 40 * ONE, 32, 0).cw == 8 * ONE
    assert update(big, 65535 * ONE, 0, 32).cw == 65535 * ONE
    small = LdcpWindowConfig(alpha=2.0 ** -16, beta=2.0 ** -16, m=1).registers()
    assert update(small, ONE, 0, 1).cw == ONE + 1             # 2**-16 / 1: one LSB
    assert update(small, 2 * ONE, 0, 1).cw == 2 * ONE         # 2**-17: below one LSB
    assert update(small, 2 * ONE, 1, 0).cw == 2 * ONE - 1


def test_compound_is_composition():
    """A coalesced event is exactly its marked part followed by its unmarked part."""
    rng = random.Random(9)
    for cfg in CONFIGS:
        r = cfg.registers()
        for _ in range(3000):
            cw = rng.randint(r.gamma, r.cw_max)
            nm = rng.randint(1, cfg.n_max_event)
            nu = rng.randint(1, cfg.n_max_event - nm + 1)
            first = update(r, cw, nm, 0)
            assert update(r, cw, nm, nu).cw == update(r, first.cw, 0, nu).cw


# ------------------------------------------------------------------------------------------------
# The single-flow wrapper: coalescing and commit timing
# ------------------------------------------------------------------------------------------------
def run(model, acks, cycles):
    """acks: {cycle: Ack}. Returns the committed window of every cycle."""
    seen = []
    for c in range(cycles):
        seen.append(model.outputs())
        model.edge(acks.get(c))
    return seen


def test_spaced_acks_are_per_ack():
    cfg = LdcpWindowConfig(cw_init=4.0)
    model = LdcpWindowModel(cfg)
    acks = {0: Ack(False, 1), UPDATE_LATENCY: Ack(True, 2), 2 * UPDATE_LATENCY: Ack(False, 3)}
    out = run(model, acks, 4 * UPDATE_LATENCY)
    assert [u.n_marked for _, u in model.issued] == [0, 2, 0]
    assert [u.n_unmarked for _, u in model.issued] == [1, 0, 3]
    # latency: the window changes UPDATE_LATENCY cycles after the cycle of the ACK
    changes = [c for c in range(1, len(out)) if out[c].cw != out[c - 1].cw]
    assert changes == [UPDATE_LATENCY + 1, 2 * UPDATE_LATENCY + 1, 3 * UPDATE_LATENCY + 1]
    assert out[UPDATE_LATENCY].update is not None


def test_back_to_back_coalescing():
    cfg = LdcpWindowConfig(cw_init=8.0, m=4)
    model = LdcpWindowModel(cfg)
    # cycle 0 issues at once; 1..L are coalesced: U1 U2 M1 U3 ... -> (n_marked, n_unmarked)
    seq = [Ack(False, 1), Ack(False, 1), Ack(False, 2), Ack(True, 1), Ack(False, 3),
           Ack(False, 0), Ack(False, 7), Ack(True, 2), Ack(False, 1), Ack(False, 1)]
    acks = dict(enumerate(seq))
    run(model, acks, 4 * UPDATE_LATENCY)
    events = [(u.n_marked, u.n_unmarked) for _, u in model.issued]
    # second event: the ACKs of cycles 1..9, all taken while the first update is in flight:
    # U1 + U2 -> 3 unmarked; M1 absorbs them -> 4 marked; U3, U0 (ignored), U7 (saturated to
    # m = 4) -> 7 unmarked; M2 absorbs them -> 4 + 7 + 2 = 13 marked; U1, U1 -> 2 unmarked
    assert UPDATE_LATENCY >= 9
    assert events == [(0, 1), (13, 2)]
    assert [c for c, _ in model.issued] == [0, UPDATE_LATENCY]


# ------------------------------------------------------------------------------------------------
# Timer and send gate
# ------------------------------------------------------------------------------------------------
def fire_edges(model, cycles):
    edges = []
    for c in range(cycles):
        if model.outputs().tick:
            edges.append(c - 1)   # the firing edge ends the previous cycle
        model.edge()
    return edges


@pytest.mark.parametrize("cw", [0.125, 0.3, 0.5, 0.999])
def test_timer_constant_window(cw):
    """k-th release at edge ceil(k * RTT / cw) (1-based edges of the sub-1 window), i.e. every
    RTT / cw cycles; computed with exact rationals from the draft's timeout."""
    cfg = LdcpWindowConfig(cw_init=cw, gamma=1 / 8, rtt_us=0.64)   # RTT = 100 cycles
    model = LdcpWindowModel(cfg)
    cw_q = cfg.registers().cw_init
    got = fire_edges(model, 5000)
    rtt = Fraction(cfg.registers().rtt)
    period = ref.timer_period(Fraction(cw_q, ONE), rtt)
    want = []
    k = 1
    while math.ceil(k * period) <= 5000 - 1:
        want.append(math.ceil(k * period) - 1)   # edge j (1-based) ends cycle j - 1
        k += 1
    assert got == want


def test_timer_releases_follow_moving_window():
    """Over a long run the released packets equal sum(cw)/RTT within one."""
    cfg = LdcpWindowConfig(cw_init=0.5, gamma=1 / 16, rtt_us=0.32, m=2)   # RTT = 50 cycles
    model = LdcpWindowModel(cfg)
    rng = random.Random(4)
    fires, cws = 0, []
    for c in range(60_000):
        o = model.outputs()
        fires += o.tick
        cws.append(o.cw / ONE if o.cw < ONE else 0.0)
        ack = Ack(rng.random() < 0.45, 1) if c % 200 == 0 else None
        model.edge(ack)
    expected = ref.timer_releases(cws[:-1], cfg.registers().rtt)
    assert abs(fires - expected) <= 1, (fires, expected)
    assert fires > 50


def test_send_gate():
    cfg = LdcpWindowConfig(cw_init=2.5, mtu=1000)
    model = LdcpWindowModel(cfg)
    model.edge()
    o = model.outputs()
    for inflight in range(0, 4000, 7):
        assert o.may_send(inflight) == (Fraction(inflight) < Fraction(5, 2) * 1000)
    sub = LdcpWindowModel(LdcpWindowConfig(cw_init=0.5, rtt_us=0.16))   # RTT 25: period 50
    for _ in range(50):
        assert not sub.outputs().credit
        sub.edge()
    o = sub.outputs()
    assert o.tick and o.credit and o.may_send(10**6)
    sub.edge(sent=True)
    assert not sub.outputs().credit
