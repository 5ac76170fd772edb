"""QCN reaction point: configuration, IEEE 802.1Qau known answers, hand-derived recovery, the
bit-exact model against the float reference, and the RTL in Amaranth's simulator against the
model.  (The long random runs are in cocotb_tests/, on Verilator.)"""

import random

import pytest
from amaranth.sim import Simulator

from hw.nic.qcn_rp import QcnRp
from hw.nic.qcn_rp_config import RATE_FRAC, QcnRpConfig
from hw.params import ConfigError
from sim.models.qcn import QcnCnm, QcnRpCodec, QcnRpModel, QcnTx
from sim.reference.qcn import RpFloat

MBPS = 1 << RATE_FRAC


@pytest.mark.parametrize("field, value, text", [
    ("gd", 5, "QcnRpConfig.gd = 5 is out of range: allowed integer 6 <= gd <= 15"),
    ("min_dec_fac", 1.5, "QcnRpConfig.min_dec_fac = 1.5 is out of range: allowed 0.0 <="),
    ("threshold", 0, "QcnRpConfig.threshold = 0 is out of range"),
    ("min_rate_mbps", 0, "QcnRpConfig.min_rate_mbps = 0 is out of range"),
    ("byte_reset", 1 << 24, "QcnRpConfig.byte_reset = 16777216 is out of range"),
    ("time_reset_us", 0.001, "QcnRpConfig.time_reset_us = 0.001 is out of range"),
    ("tr_guard", 1, "QcnRpConfig.tr_guard = 1 is out of range: allowed one of False, True"),
    ("jitter", -0.1, "QcnRpConfig.jitter = -0.1 is out of range"),
])
def test_config_errors_name_field_value_range(field, value, text):
    with pytest.raises(ConfigError) as e:
        QcnRpConfig(**{field: value})
    assert text in str(e.value)


def test_mib_defaults():
    r = QcnRpConfig().registers()
    assert (r.min_rate, r.ai_rate, r.hai_rate) == (5 * MBPS, 5 * MBPS, 50 * MBPS)
    assert (r.gd_shift, r.min_dec_fac, r.threshold) == (7, 128, 5)
    assert r.byte_lo == (150_000, 75_000) and r.time_lo == (2_343_750, 1_171_875)  # 15 ms
    assert QcnRpConfig.from_json(QcnRpConfig().to_json()) == QcnRpConfig()


def test_known_answer_cut_by_qntzfb_10():
    """Known answer (IEEE 802.1Qau): qntzFb = 10 cuts to CR x (1 - 10/128): 10000 -> 9218.75
    Mb/s."""
    m = QcnRpModel(QcnRpConfig())
    m.step(QcnCnm(10))
    assert m.state.cr == 9218.75 * MBPS and m.state.tr == 10_000 * MBPS


def test_known_answer_no_cut_beyond_half():
    """Known answer (IEEE 802.1Qau MinDecFac): no single CNM cuts more than 50 % (MinDecFac).  Gd =
    1/64 with fb 63
    would cut to 1/64 of CR; the bound holds it at CR / 2."""
    m = QcnRpModel(QcnRpConfig(gd=6))
    m.step(QcnCnm(63))
    assert m.state.cr == 5_000 * MBPS
    m = QcnRpModel(QcnRpConfig())                     # Gd 1/128: 63/128 < 1/2 is the real cut
    m.step(QcnCnm(63))
    assert m.state.cr == 10_000 * MBPS * 65 // 128


def test_fast_recovery_then_active_then_hyper_by_hand():
    """Byte counter only (timer far away): 5 FR cycles halve the gap to TR each time, then
    active increase (+5 Mb/s), with the half-length byte cycles; values derived by hand."""
    m = QcnRpModel(QcnRpConfig())
    m.step(QcnCnm(10))                        # CR 9218.75, TR 10000, BC 150000
    m.step(QcnTx(149_999))
    assert m.byte_cycles == 0 and m.state.bc == 1
    gap = 781.25
    for k in range(1, 6):
        m.step(QcnTx(m.state.bc))
        gap /= 2
        assert m.state.cr == (10_000 - gap) * MBPS and m.state.tr == 10_000 * MBPS, k
        assert m.state.bc == (150_000 if k < 5 else 75_000)
    m.step(QcnTx(75_000))                     # 6th byte cycle: AI, TR capped at the line rate
    assert m.state.tr == 10_000 * MBPS and m.state.cr == (10_000 - gap / 2) * MBPS
    m = QcnRpModel(QcnRpConfig())
    m.step(QcnCnm(63))
    m.step(QcnCnm(63))                        # CR 10000 * (65/128)**2 = 2578.73..., TR 5078.125
    for _ in range(5):
        m.step(QcnTx(150_000))
    m.step(QcnTx(75_000))                     # AI: TR 5078.125 + 5
    assert m.state.tr == 5083.125 * MBPS


def test_timer_expiry_exactly_and_hyper_increase():
    cfg = QcnRpConfig(time_reset_us=1.6, byte_reset=1000)   # timer 250 cycles at 156.25 MHz
    m = QcnRpModel(cfg)
    m.step(QcnCnm(40))
    m.step(QcnCnm(40))                        # TR = 6875 Mb/s: well below the line rate
    m.idle(249)
    assert m.timer_cycles == 0 and m.state.t_cnt == 1
    m.idle(1)                              # the 250th cycle after the cut
    assert m.timer_cycles == 1 and m.state.t_stage == 1 and m.state.t_cnt == 250
    m.idle(250 * 4 + 125 * 2)              # stages 2..5 (250 each), then 6, 7 (125 each)
    assert m.state.t_stage == 7
    for _ in range(7):                     # byte stages 1..7: the 7th is hyper (min 7 - 5 = 2)
        tr = m.state.tr
        m.step(QcnTx(1000))
    assert m.state.b_stage == 7 and m.timer_cycles == 7
    assert m.state.tr == tr + 2 * 50 * MBPS < 10_000 * MBPS


def test_tr_guard():
    for guard in (True, False):
        m = QcnRpModel(QcnRpConfig(tr_guard=guard, byte_reset=1000))
        for _ in range(5):
            m.step(QcnCnm(63))                # CR 10000 (65/128)^5 = 339.9, TR 669.3 ... then:
        m.state.tr = 10_000 * MBPS         # force TR > 10 CR for the first increase
        cr = m.state.cr
        m.step(QcnTx(1000))
        tr = 10_000 * MBPS >> 3 if guard else 10_000 * MBPS
        assert m.state.tr == tr and m.state.cr == (cr + tr) >> 1


def random_events(cfg, n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        if rng.random() < 0.04:
            out.append(QcnCnm(rng.randrange(64)))
        elif rng.random() < 0.3:
            out.append(None)               # an idle cycle
        else:
            out.append(QcnTx(rng.choice((64, 1500, 9000, cfg.byte_reset, 0))))
    return out


@pytest.mark.parametrize("gd, mdf", [(7, 0.5), (6, 0.0625)])
def test_model_against_float_reference(gd, mdf):
    """Rates against the float equations at every action, within a running bound derived from
    the integer rules (in LSB = 2**-10 Mb/s): a cut floors once (CR error + 1; TR takes CR's
    error), an increase averages and floors (CR error (e_CR + e_TR) / 2 + 1/2), the guard
    divides TR's error by 8 and floors (+1); TR += R_AI/R_HAI and the line-rate caps are exact.
    The same run asserts MinDecFac: no cut keeps less than that fraction of CR.  With TR = CR
    at each cut, TR > 10 CR needs a single cut below 1/10: only the second setting (Gd 1/64,
    MinDecFac 1/16, exact in UQ0.8) reaches the guard."""
    cfg = QcnRpConfig(time_reset_us=0.1, byte_reset=20_000, jitter=0.15, gd=gd,
                      min_dec_fac=mdf)
    m = QcnRpModel(cfg)
    ref = RpFloat(10_000, 5, 5, 50, gd, mdf, 5)
    b_cr = b_tr = 0.0
    worst, worst_bound, seen, cuts = 0.0, 0.0, 0, []
    for ev in random_events(cfg, 200_000, 4):
        before = len(m.log)
        if ev is None:
            m.idle(1)
        else:
            m.step(ev)
        for _, action, fb, b, t, guard in m.log[before:]:
            if action == "cut":
                prev = ref.cr
                ref.cut(fb)
                cuts.append(ref.cr / prev)
                b_tr, b_cr = b_cr, b_cr + 1
            else:
                ref.increase(b, t)
                if guard:
                    b_tr = b_tr / 8 + 1
                b_cr = (b_cr + b_tr) / 2 + 0.5
            e_cr = abs(m.state.cr - ref.cr * MBPS)
            e_tr = abs(m.state.tr - ref.tr * MBPS)
            assert e_cr <= b_cr + 1e-6 and e_tr <= b_tr + 1e-6, (m.cycle, e_cr, b_cr, e_tr, b_tr)
            worst, worst_bound = max(worst, e_cr, e_tr), max(worst_bound, b_cr, b_tr)
            seen += 1
        assert 5 * MBPS <= m.state.cr <= 10_000 * MBPS
    print(f"worst error {worst:.2f} LSB, largest bound {worst_bound:.2f} LSB")
    assert seen > 20_000 and m.timer_cycles > 100 and m.byte_cycles > 1000
    assert (m.guards > 100) == (mdf < 0.1)
    assert min(cuts) >= mdf - 1e-9


def run_rtl(cfg, events):
    """Each event on its own cycle: a QcnCnm / QcnTx, None (idle) or ``("w", addr, value)``
    (a register write, no event); the state after each cycle."""
    dut, codec, states = QcnRp(cfg), QcnRpCodec(cfg), []

    async def bench(ctx):
        for ev in events:
            write = isinstance(ev, tuple)
            ctx.set(dut.csr_w.valid, write)
            if write:
                ctx.set(dut.csr_w.payload.addr, ev[1])
                ctx.set(dut.csr_w.payload.data, ev[2])
            if ev is None or write:
                ctx.set(dut.event.valid, 0)
            else:
                ctx.set(dut.event.payload.as_value(), codec.event(ev))
                ctx.set(dut.event.valid, 1)
            await ctx.tick()
            states.append(codec.state(ctx.get(dut.state.as_value())))

    sim = Simulator(dut)
    sim.add_clock(4e-9)
    sim.add_testbench(bench)
    sim.run()
    return states


def model_states(cfg, events):
    """The model through ``events`` (as :func:`run_rtl` takes them); the state after each
    cycle, and the model (for its counters)."""
    m, out = QcnRpModel(cfg), []
    for ev in events:
        if ev is None or isinstance(ev, tuple):
            m.idle(1)
            if ev is not None:
                m.write(ev[1], ev[2])
        else:
            m.step(ev)
        out.append(type(m.state)(**vars(m.state)))
    return out, m


def test_rtl_matches_model():
    cfg = QcnRpConfig(time_reset_us=0.08, byte_reset=5_000, jitter=0.3, ai_rate_mbps=7.5,
                      hai_rate_mbps=120, gd=6, min_dec_fac=0.05)
    events = random_events(cfg, 3000, 9)
    expected, m = model_states(cfg, events)
    got = run_rtl(cfg, events)
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        assert g == e, (k, events[max(0, k - 3):k + 1], g, e)
    assert m.cuts > 50 and m.timer_cycles > 50 and m.byte_cycles > 200 and m.guards > 0


def test_rtl_boundaries_by_hand():
    """Boundaries the random run rarely reaches, RTL against the model every cycle and the key
    values by hand (no jitter: the byte counter reloads to exactly 1000 bytes, the timer to
    exactly 100 cycles (0.64 us), 50 once its stage reaches F = 5).  After two cuts by Fb 63
    TR = 5078.125 Mb/s (below the 10 Gb/s line rate), CR = 2578.73...:

    * a TX of 999 bytes leaves 1; a TX of exactly 1 (the counter's value) is a byte cycle;
      the 5th byte cycle (ByteStage = F, TimeStage 0) is still fast recovery: TR unchanged;
    * with TimeStage 6 > F (550 idle cycles) the 5th byte cycle (ByteStage = F) is active
      increase, not hyper: TR grows by R_AI = 5 Mb/s exactly;
    * LINE_RATE written to 1000 Mb/s (below CR) before a byte cycle: CR and TR are capped to
      it, (CR + TR') / 2 = 1789... is not taken."""
    cfg = QcnRpConfig(byte_reset=1000, time_reset_us=0.64, jitter=0.0)
    line_addr = cfg.register_map()["LINE_RATE"].addr
    cuts = [QcnCnm(63), QcnCnm(63)]
    runs = {
        "fr": cuts + [QcnTx(999), QcnTx(1)] + [QcnTx(1000)] * 4,
        "ai": cuts + [None] * 550 + [QcnTx(1000)] * 5,
        "line": cuts + [("w", line_addr, 1000 * MBPS), QcnTx(1000)],
    }
    for name, events in runs.items():
        expected, _ = model_states(cfg, events)
        got = run_rtl(cfg, events)
        for k, (g, e) in enumerate(zip(got, expected, strict=True)):
            assert g == e, (name, k, g, e)
        tr_cut = 5078.125 * MBPS
        if name == "fr":
            assert expected[2].bc == 1 and expected[3].b_stage == 1 and expected[3].bc == 1000
            assert expected[-1].b_stage == 5 and expected[-1].tr == tr_cut
        elif name == "ai":
            assert expected[-2].b_stage == 4 and expected[-1].b_stage == 5
            assert expected[-1].t_stage == 6
            assert expected[-1].tr == expected[-2].tr + 5 * MBPS
        else:
            assert expected[-1].cr == expected[-1].tr == 1000 * MBPS


def test_rtl_guard_at_exactly_ten_times():
    """The TR guard's boundary (TR > 10 CR, strict), by hand: min_rate 1000 Mb/s, MinDecFac
    0.05 (a floor of 10000 x 13/256 = 507.8 Mb/s, below min_rate) and Gd 1/64; a cut by Fb 63
    from the line rate lands on min_rate, so TR = 10000 = 10 CR exactly: the guard does not
    fire, and the first byte cycle averages (1000 + 10000) / 2 = 5500 Mb/s with TR unchanged
    (a guard would have taken TR to 10000 / 8 = 1250 first).  RTL against the model every
    cycle."""
    cfg = QcnRpConfig(byte_reset=1000, jitter=0.0, tr_guard=True, min_rate_mbps=1000,
                      min_dec_fac=0.05, gd=6)
    events = [QcnCnm(63), QcnTx(1000)]
    expected, _ = model_states(cfg, events)
    assert expected[0].cr == 1000 * MBPS and expected[0].tr == 10 * expected[0].cr
    assert expected[1].tr == 10_000 * MBPS and expected[1].cr == 5500 * MBPS
    assert run_rtl(cfg, events) == expected
