"""The host-engine interface (``sim/net/engine_api.py``): every implementation satisfies its
protocol; the notification point on the golden ``NpModel`` paces CNPs exactly as the per-flow
rule written in picoseconds (an independent reference below); ``NpModel.skip`` is ``n`` calls of
``step``; the golden rate engine is its model stepped at the event's cycle."""

from __future__ import annotations

import os
import random

import pytest

from hw.nic.dcqcn_config import DcqcnRpConfig
from hw.nic.dcqcn_np_config import DcqcnNpConfig
from hw.nic.qcn_rp_config import QcnRpConfig
from sim.models import dcqcn as dcqcn_model
from sim.models.dcqcn_np import NpModel
from sim.net import engine_api as api
from sim.net.algorithms import ALGORITHMS, LdcpParams

SEED = int(os.environ.get("CC_SEED", "16"))
LONG = bool(os.environ.get("CC_LONG"))


def test_implementations_satisfy_protocols():
    cfg = LdcpParams().transport(100.0, 1000, 250_000_000, 10_000_000)
    for cls in (api.FastLdcpSender, api.GoldenLdcpSender):
        e = cls(cfg)
        assert isinstance(e, api.WindowSenderEngine) and isinstance(e, api.Engine)
        snap = e.snapshot()
        assert snap["cycle"] == 0 and "cw" in snap
    for cls in (api.FastLdcpReceiver, api.GoldenLdcpReceiver):
        r = cls(cfg)
        assert isinstance(r, api.WindowReceiverEngine)
        assert r.snapshot()["expected"] == 0
    rp = [api.dcqcn_rp_engine(DcqcnRpConfig.profile("paper", clk_hz=250_000_000,
                                                    line_rate_mbps=100_000)),
          api.qcn_rp_engine(QcnRpConfig(clk_hz=250_000_000, line_rate_mbps=100_000))]
    for e in rp:
        assert isinstance(e, api.RateEngine)
        assert e.rate() > 0 and e.next_wakeup() is None and e.snapshot()["cycle"] == 0
    assert isinstance(api.CnpPacer(1000), api.NotificationPoint)
    # every algorithm names its engines by kind; LDCP's default is the fast twin; the three
    # NIC engines built in RTL also run as Verilated RTL (sim/rtl); DCQCN and QCN also on
    # one multi-flow engine per NIC (sim/rtl/engine_host.py)
    assert set(ALGORITHMS["ldcp"].engines) == {"fast", "golden", "rtl"}
    for algo in ("dcqcn", "qcn"):
        assert set(ALGORITHMS[algo].engines) == {"golden", "rtl", "engine", "engine-rtl"}


def test_rate_engine_is_its_model_at_the_event_cycle():
    cfg = DcqcnRpConfig.profile("paper", clk_hz=250_000_000, line_rate_mbps=100_000)
    e, m = api.dcqcn_rp_engine(cfg), dcqcn_model.DcqcnRpModel(cfg)
    rng = random.Random(SEED)
    cycle = 0
    for _ in range(300):
        cycle += rng.randrange(1, 300)
        if rng.random() < 0.3:
            e.on_notification(cycle, 0)
            ev = dcqcn_model.DcqcnCnp()
        else:
            e.on_tx(cycle, 1000)
            ev = dcqcn_model.DcqcnTx(1000)
        for _ in range(cycle - m.cycle):      # the reference: one step per cycle
            m.step()
        m.step(ev)
        assert e.rate() == m.state.rc and e.snapshot()["cycle"] == m.cycle


def _reference_cnps(ces: list[int], interval: int, defer: bool, dues=None) -> list[int]:
    """The NP rule in picoseconds, event by event: a CE at t sends a CNP at t if none was sent
    in the last ``interval``; otherwise (``defer``) one CNP goes when the window ends (its
    time added to ``dues``)."""
    sent, last, due = [], None, None
    dues = [] if dues is None else dues
    for t in ces:
        if due is not None and due < t:
            sent.append(due)
            last, due = due, None
        if last is None or t - last >= interval:
            sent.append(t)
            last = t
        elif defer and due is None:
            due = last + interval
            dues.append(due)
    if due is not None:
        sent.append(due)
    return sent


def _pacer_cnps(ces: list[int], interval: int, defer: bool) -> list[int]:
    """The host's use of CnpPacer (as DcqcnReceiverEndpoint): a wake-up at next_wakeup."""
    np, sent, due = api.CnpPacer(interval, defer), [], None
    for t in ces:
        if due is not None and due < t:
            assert np.fire(due)
            sent.append(due)
            due = None
        if np.on_ce(t):
            sent.append(t)
        elif due is None:
            due = np.next_wakeup()
            assert defer or due is None
    if due is not None:
        assert np.fire(due)
        sent.append(due)
    return sent


@pytest.mark.parametrize("interval", [0, 1000, 4000, 50_000_000])
def test_cnp_pacer_matches_picosecond_rule(interval):
    rng = random.Random(SEED + interval)
    for trial in range(40 if not LONG else 2000):
        t, ces = rng.randrange(0, 5000), []
        scale = max(interval, 1000)
        for _ in range(rng.randrange(1, 60)):
            ces.append(t)
            t += rng.choice((2, 3, rng.randrange(2, scale // 3 + 3),
                             rng.randrange(2, 2 * scale + 3), scale - 1, scale, scale + 1))
        for defer in (True, False):
            dues = []
            ref = _reference_cnps(ces, interval, defer, dues)
            if set(dues) & set(ces):      # (a CE at a due CNP's time: order-dependent)
                continue
            assert _pacer_cnps(ces, interval, defer) == ref, (SEED, interval, trial, defer)


def test_cnp_pacer_boundaries():
    """By hand: N = 1000 ps; CNP at 0; CE at 999 inside (CNP due at 1000), CE at 2000 at the
    window's edge (at once), CE at 2999 inside, then CE at 4000 after the due one at 3000."""
    assert _pacer_cnps([0, 999, 2000, 2999, 4000], 1000, True) == [0, 1000, 2000, 3000, 4000]
    assert _pacer_cnps([0, 999, 2000, 2999, 4000], 1000, False) == [0, 2000, 4000]
    assert _pacer_cnps([0, 1, 2], 0, True) == [0, 1, 2]


@pytest.mark.parametrize("rule", ["paper", "periodic"])
def test_np_skip_is_n_steps(rule):
    cfg = DcqcnNpConfig(flows=3, clk_hz=156_250_000, timer_width=8, rule=rule,
                        min_time_between_cnps=0.1)          # N = 16 cycles
    rng = random.Random(SEED)
    a, b = NpModel(cfg), NpModel(cfg)
    for _ in range(400 if not LONG else 100_000):
        n = rng.choice((0, 1, 2, rng.randrange(40)))
        for _ in range(n):
            a.step()
        b.skip(n)
        f = rng.choice((None, 0, 1, 2))
        ready = rng.random() < 0.8
        assert a.step(f, ready) == b.step(f, ready)
        assert (a.cycle, a.due, a.hold, a.pending, a.marked, a.tick, a.sent) == \
            (b.cycle, b.due, b.hold, b.pending, b.marked, b.tick, b.sent)


def test_threshold_limits_follow_the_marker_configuration():
    """Queue thresholds and buffers are bounded by the marker's occupancy registers
    (``MarkerConfig.occ_width`` bits), not by a constant of their own."""
    from hw.params import ConfigError
    from hw.switch.marker_config import MarkerConfig
    from sim.net.algorithms import THRESHOLD_MAX, DcqcnParams, DctcpParams
    from sim.net.network import SwitchConfig

    assert THRESHOLD_MAX == (1 << MarkerConfig().occ_width) - 1 == 2**24 - 1
    DcqcnParams(kmax_bytes=THRESHOLD_MAX)
    LdcpParams(kmax_bytes=THRESHOLD_MAX, k_bytes=THRESHOLD_MAX)
    DctcpParams(k_bytes=THRESHOLD_MAX)
    SwitchConfig(queue_bytes=THRESHOLD_MAX, buffer_bytes=THRESHOLD_MAX)
    for build in (lambda: DcqcnParams(kmax_bytes=THRESHOLD_MAX + 1),
                  lambda: LdcpParams(k_bytes=THRESHOLD_MAX + 1),
                  lambda: DctcpParams(k_bytes=THRESHOLD_MAX + 1),
                  lambda: SwitchConfig(buffer_bytes=THRESHOLD_MAX + 1)):
        with pytest.raises(ConfigError, match=str(THRESHOLD_MAX)):
            build()
