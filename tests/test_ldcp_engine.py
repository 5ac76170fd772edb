"""The multi-flow LDCP window engine (hw/nic/ldcp_engine.py) inside the multi-flow engine.

- Directed, on the datapath model and the cycle-accurate engine model, expected values derived
  by hand (docs/ldcp-window.md, "Many flows"): window growth, the cut on ECN, entry into the
  sub-one-packet regime and its release deadlines, a window change in mid-period, exit, the
  floor gamma and the cap cw_max, the largest coalesced counts, the saturated interval.
- The release times of many flows against an independent reference (the one-flow phase
  accumulator, cycle by cycle, ``phase_releases``) for every flow whose releases were on time.
- Lateness 0 equals the single-flow model (``LdcpWindowModel``) for one flow: the same windows
  and the same releases, shifted by a constant.
- Amaranth simulation: the RTL engine against the engine model on every output every cycle,
  random ACKs / TX / READs / register writes over a 1024-flow table (``CC_LONG=1``: every flow
  and >= 10^5 events; ``CC_LDCP_EVENTS=n``: n events).
"""

from __future__ import annotations

import os
import random

import pytest

from hw.nic.flow_datapath import CtlOp, EventKind
from hw.nic.flow_engine import pipe_depth
from hw.nic.flow_engine_config import FlowEngineConfig
from hw.nic.ldcp_engine import LdcpDatapath, LdcpEngineConfig
from hw.nic.ldcp_window_config import ONE, LdcpWindowConfig
from hw.params import ConfigError
from sim.models.flow_engine import FlowEngineModel
from sim.models.ldcp_engine import LdcpDatapathModel, pack_wr, phase_releases, unpack_wr
from sim.models.ldcp_window import Ack, LdcpWindowModel
from tests import ldcp_engine_harness as harness
from tests.test_flow_engine import SEED

LONG = os.environ.get("CC_LONG", "0") == "1"
RTT = 200                      # cycles (short, so that releases come often)
#: state field numbers (ctl WRITE): wr, on, dl, ovr
WR, ON, DL, OVR = range(4)


def window(**kw) -> LdcpWindowConfig:
    base = dict(alpha=1.0, beta=0.5, gamma=0.125, m=8, cw_max=16.0, cw_init=2.0,
                rtt_us=harness.us(RTT))
    base.update(kw)
    return LdcpWindowConfig(**base)


def config(n_flows=16, time_width=16, horizon=4096, slots=8192, **kw) -> LdcpEngineConfig:
    """A small engine; the default horizon holds the longest release interval (RTT / gamma =
    1600 cycles), so no release deadline is parked (a parked one re-evaluated within
    reeval(L) cycles of its deadline is late)."""
    return LdcpEngineConfig(engine=harness.flow_engine(n_flows, time_width, horizon, slots, 30),
                            window=window(**kw))


def q16(x: float) -> int:
    return round(x * ONE)


class Dp(harness.ModelDriver):
    """The datapath model on its own with the default registers (the states given to each
    event)."""

    DATAPATH, MODEL = LdcpDatapath, LdcpDatapathModel

    def __init__(self, cfg=None, **regs):
        super().__init__(cfg or config(), **regs)
        self.nw = self.cfg.window.event_n_width

    def state(self, cw, on=0, dl=0, ovr=0, rel=0):
        return {"wr": pack_wr(cw, rel), "on": on, "dl": dl, "ovr": ovr}

    def ack(self, s, t, nm=0, nu=0):
        return self.m.update(self.regs, s, EventKind.CN, nm | nu << self.nw, t)

    def pop(self, s, t):
        return self.m.update(self.regs, s, EventKind.TIMER, None, t)


# -- configuration ------------------------------------------------------------------------------

def test_config_errors():
    with pytest.raises(ConfigError, match="div_steps"):
        LdcpEngineConfig(div_steps=0)
    with pytest.raises(ConfigError, match="out_fifo_depth"):
        LdcpEngineConfig(engine=FlowEngineConfig(out_fifo_depth=16))
    with pytest.raises(ConfigError, match="rel_width"):
        LdcpEngineConfig(rel_width=1)
    with pytest.raises(ConfigError, match="window"):
        LdcpEngineConfig(window=None)
    # the latency follows the division's steps per cycle: 14 + ceil((W - 3) / steps)
    assert LdcpEngineConfig().latency == 26
    assert LdcpEngineConfig(div_steps=4).latency == 20
    assert config(time_width=14, horizon=1024, slots=4096).latency == 20


# -- directed, on the datapath model (hand-derived values) -------------------------------------

def test_window_growth_and_cut():
    d = Dp()
    # cw = 2, one unmarked packet, alpha = 1: + 1/2 exactly (the reciprocal is exact at 2**k)
    o = d.ack(d.state(2 * ONE), 100, nu=1)
    assert unpack_wr(o.next_state["wr"]) == (q16(2.5), 0)
    assert o.wake is None and not o.expired
    # cw = 2.5, one marked packet, beta = 1/2: - 1/2
    o = d.ack(o.next_state, 101, nm=1)
    assert unpack_wr(o.next_state["wr"])[0] == 2 * ONE
    # a marked part then an unmarked part: 4 - 2 x 1/2 = 3, then + 3 x 1/3 (table reciprocal,
    # within 2**-15 relative): 4 +- 2**-14
    o = d.ack(d.state(4 * ONE), 5, nm=2, nu=3)
    assert abs(unpack_wr(o.next_state["wr"])[0] - 4 * ONE) <= 4


def test_enter_sub_one_release_deadlines():
    """1.25 - 1/2 = 0.75 packets: releases every 200 / 0.75 = 266.67 cycles, at t + 267, 534,
    800 (ceil(k x 266.67)), the overshoot 1/4, 1/2, 0 packets."""
    d = Dp()
    t0 = 1000
    o = d.ack(d.state(q16(1.25)), t0, nm=1)
    s = o.next_state
    assert unpack_wr(s["wr"]) == (q16(0.75), 0)
    assert (s["on"], s["dl"], s["ovr"]) == (1, t0 + 267, q16(0.25))
    assert o.wake == t0 + 267
    # a pop before the deadline changes nothing
    o = d.pop(s, t0 + 266)
    assert o.next_state == s and not o.expired
    for k, (dl, ovr) in enumerate([(t0 + 534, q16(0.5)), (t0 + 800, 0), (t0 + 1067, q16(0.25))]):
        o = d.pop(s, s["dl"])
        s = o.next_state
        assert o.expired and o.late == 0
        assert unpack_wr(s["wr"]) == (q16(0.75), k + 1)
        assert (s["dl"], s["ovr"]) == (dl, ovr)


def test_window_change_mid_period_keeps_phase():
    """At 0.75 from t0, an unmarked ACK at t0 + 100 (0.75 + gamma = 0.875): the phase
    100 x 0.75 is kept, the rest 200 - 75 = 125 packets-cycles at 0.875 take 142.86 -> 143
    cycles: release at t0 + 243 (and the overshoot 143 x 0.875 - 125 = 0.125)."""
    d = Dp()
    t0 = 50
    s = d.ack(d.state(q16(1.25)), t0, nm=1).next_state
    o = d.ack(s, t0 + 100, nu=1)
    s = o.next_state
    assert unpack_wr(s["wr"])[0] == q16(0.875)
    assert (s["dl"], s["ovr"]) == (t0 + 243, q16(0.125))
    # a late pop (3 cycles) reloads from the deadline: the next one is still on the grid
    o = d.pop(s, t0 + 246)
    assert o.expired and o.late == 3
    # (200 - 0.125) / 0.875 = 228.43 -> 229 cycles after t0 + 243
    assert o.next_state["dl"] == t0 + 243 + 229


def test_exit_sub_one_and_release_on_the_same_cycle():
    """0.75 + 2 gamma = 1.0: the window regime again, the timer off; a release due at the same
    cycle is applied first (as of its deadline)."""
    d = Dp()
    s = d.ack(d.state(q16(1.25)), 0, nm=1).next_state
    o = d.ack(s, 267, nu=2)
    assert o.expired and o.late == 0
    assert unpack_wr(o.next_state["wr"]) == (ONE, 1)
    assert o.next_state["on"] == 0 and o.wake is None


def test_floor_gamma_and_cap():
    d = Dp()
    # at the floor: a marked ACK halves 1/8 to 1/16 -> clamped to gamma; the window does not
    # change, nor does the release deadline (the phase is kept)
    s = d.ack(d.state(q16(0.25)), 0, nm=1).next_state        # 0.125 = gamma
    assert unpack_wr(s["wr"])[0] == q16(0.125)
    assert s["dl"] == 1600 and s["ovr"] == 0                   # 200 / 0.125
    o = d.ack(s, 700, nm=3)
    assert o.next_state == s
    # at the cap: an unmarked ACK at cw_max = 16 stays at 16
    o = d.ack(d.state(16 * ONE), 0, nu=1)
    assert unpack_wr(o.next_state["wr"])[0] == 16 * ONE
    # a crossing up from below one that lands above the cap: cw_max
    d2 = Dp(cw_max=q16(1.5))
    o = d2.ack(d2.state(q16(0.75)), 0, nu=7)
    assert unpack_wr(o.next_state["wr"])[0] == q16(1.5)


def test_largest_coalesced_counts():
    """The ACK payload's counts at their largest (2**event_n_width - 1 = 127 packets): no
    wrap: 1.0 + 127 alpha / 1 caps at 16; 8 - 127 beta lands on the floor gamma."""
    d = Dp()
    top = (1 << d.nw) - 1
    assert top == 127
    assert unpack_wr(d.ack(d.state(ONE), 0, nu=top).next_state["wr"])[0] == 16 * ONE
    o = d.ack(d.state(8 * ONE), 0, nm=top)
    assert unpack_wr(o.next_state["wr"])[0] == q16(0.125)
    assert o.next_state["dl"] == 1600


def test_interval_saturates():
    """RTT 10000 cycles at gamma = 1/8: 80000 cycles > 2**(W-3) = 8192 (W = 16): the interval
    saturates at 8192 cycles with no overshoot kept."""
    d = Dp(rtt=10000)
    o = d.ack(d.state(q16(0.25)), 10, nm=1)
    assert (o.next_state["dl"], o.next_state["ovr"]) == (10 + 8192, 0)


def test_interval_saturation_boundary():
    """RTT 4096 cycles, W = 16 (at most 2**13 = 8192 cycles): a window of 32768 / 2**16 = 1/2
    needs exactly 8192 cycles (no saturation, no overshoot); one LSB less (32767) needs
    8192.25 -> 8193: saturated at 8192."""
    d = Dp(rtt=4096)
    for cw_before, want in ((98304, 8192), (98303, 8192)):
        o = d.ack(d.state(cw_before), 0, nm=2)             # - 2 x 1/2
        assert unpack_wr(o.next_state["wr"])[0] == cw_before - ONE
        assert (o.next_state["dl"], o.next_state["ovr"]) == (want, 0)
    # and one cycle inside: RTT 4095 at 1/2 = 8190 cycles
    d = Dp(rtt=4095)
    assert d.ack(d.state(98304), 0, nm=2).next_state["dl"] == 8190


def test_rel_counter_wraps_to_one():
    d = Dp()
    s = d.state(q16(0.5), on=1, dl=40, rel=255)
    o = d.pop(s, 40)
    assert unpack_wr(o.next_state["wr"])[1] == 1      # 0 is START/RESET's, never a release


# -- the engine model: release times against the phase accumulator ------------------------------

def _engine_model(cfg):
    m = FlowEngineModel(cfg.engine, LdcpDatapathModel(LdcpDatapath(cfg)))
    lates = {}
    first_late = {}
    update = m.dpm.update
    cur = {}

    def recording(regs, state, kind, payload, t):
        out = update(regs, state, kind, payload, t)
        if out.expired:
            f = cur["flow"]
            lates[f] = max(lates.get(f, 0), out.late)
            if out.late and f not in first_late:
                first_late[f] = t - out.late          # the deadline of its first late release
        return out
    m.dpm.update = recording
    issue = m._issue

    def issuing(src, flow, payload, t):
        cur["flow"] = flow
        return issue(src, flow, payload, t)
    m._issue = issuing
    m.first_late = first_late
    m.pure_update = update
    return m, lates


def _run_random_acks(cfg, flows, cycles, seed, p_ack=0.01, p_marked=0.4):
    """Random ACKs (marked with probability ``p_marked``, 1 ... 3 packets) to ``flows`` on the
    engine model; returns the model, its per-flow lateness and the rate records (cycle, flow,
    cw, rel)."""
    rng = random.Random(seed)
    m, lates = _engine_model(cfg)
    nw = cfg.window.event_n_width
    ctl = [(f, CtlOp.START, 0, 0) for f in flows]
    cn = []
    recs = []
    fmask = (1 << cfg.engine.flow_width) - 1
    shift = m.lay["rate"]["rate"].offset
    for c in range(cycles):
        if not cn and rng.random() < p_ack:
            n = rng.randrange(1, 4)
            cn.append((rng.choice(flows), n if rng.random() < p_marked else n << nw))
        o = m.step(ctl=ctl[0] if ctl else None, cn=cn[0] if cn else None)
        if ctl and o.ctl_ready:
            ctl.pop(0)
        elif cn and o.cn_ready:
            cn.pop(0)
        if o.rate is not None:
            cw, rel = unpack_wr(o.rate >> shift)
            recs.append((c, o.rate & fmask, cw, rel))
    return m, lates, recs


def test_release_times_equal_phase_accumulator():
    """Eight flows (cw_init 1.5: a few marked ACKs take them below one packet, unmarked ones
    back), random ACKs over 60000 cycles: for every flow, the release cycles up to its first
    late one (a release that met an ACK of its flow in the pipeline, or another flow's) are
    exactly those of the phase accumulator driven by the flow's windows."""
    cfg = config(cw_init=1.5)
    flows = [0, 3, 5, 7, 8, 10, 13, 15]
    m, lates, recs = _run_random_acks(cfg, flows, 60_000, f"{SEED}-phase")
    back = pipe_depth(cfg.latency) + 1      # a record at c belongs to an update at c - back
    checked = total = 0
    for f in flows:
        mine = [(c - back, cw, rel) for c, fl, cw, rel in recs if fl == f]
        windows = [(t, cw) for t, cw, _ in mine]
        rels = [t for (t, _, rel), (_, _, prev) in zip(mine[1:], mine, strict=False)
                if rel != prev]
        until = min(mine[-1][0], m.first_late.get(f, 1 << 62) - 1)
        rels = [r for r in rels if r <= until]
        total += len(rels)
        assert rels == phase_releases(cfg.window.registers().rtt, windows, until), f
        checked += rels != []
    assert checked >= 6 and total > 100, (checked, total, lates)
    print(f"seed {SEED}: {total} releases, {checked} flows on time checked, lateness {lates}")


def test_lateness_zero_equals_single_flow_model():
    """One flow, ACKs at least 40 cycles apart (no coalescing in the one-flow model, no wait
    in the engine) and never offered in the L + 8 cycles before a release is due, nor when it
    would move the deadline that near, nor when the flow has 3 wheel entries (an ACK in the
    modify stage holds the release's pop, a deadline nearer than reeval(L) is inserted too
    late, a fifth entry is not inserted: lateness; a stale pop can still make the flow busy
    when its release is due, so the releases are compared up to the first late one): the
    engine's windows are the one-flow model's committed windows in the
    same order, and its releases are the one-flow timer's firings shifted by one constant."""
    cfg = config(cw_init=1.5)
    win = cfg.window
    rng = random.Random(f"{SEED}-single")
    m, lates = _engine_model(cfg)
    single = LdcpWindowModel(win)
    nw = win.event_n_width
    back = pipe_depth(cfg.latency) + 1
    shift = m.lay["rate"]["rate"].offset
    ctl = [(0, CtlOp.START, 0, 0)]
    pending = None
    next_ack = 200
    recs, ticks, taken = [], [], []
    for c in range(40_000):
        if pending is None and c >= next_ack:
            n = rng.randrange(1, 4)
            pending = (rng.random() < 0.5, n)
            next_ack = c + rng.randrange(40, 400)
        cn = None
        if pending is not None:
            st = m.flows[0].algo
            payload = pending[1] if pending[0] else pending[1] << nw
            # (the update it would make now: its new deadline must not be that near either)
            wake = m.pure_update(m.regs, st, EventKind.CN, payload, c).wake
            near = any(w is not None and ((w - c) & m.mask) <= cfg.latency + 8
                       for w in (st["dl"] if st["on"] else None, wake))
            # (and the flow must have room for one more wheel entry: an ACK that moves the
            # deadline earlier leaves a stale one; with 4 the new one is not inserted)
            cn = None if near or m.flows[0].q_cnt >= 3 else (0, payload)
        o = m.step(ctl=ctl[0] if ctl else None, cn=cn)
        ack = None
        if ctl and o.ctl_ready:
            ctl.pop(0)
        elif cn is not None and o.cn_ready:
            ack = Ack(ece=pending[0], n=pending[1])
            taken.append(c)
            pending = None
        single.edge(ack=ack)
        if single.tick:
            ticks.append(c)
        if o.rate is not None:
            recs.append((c - back,) + unpack_wr(o.rate >> shift))
    eng_cw = [cw for _, cw, _ in recs]
    eng_cw = [x for i, x in enumerate(eng_cw) if i == 0 or x != eng_cw[i - 1]]
    one_cw = [win.registers().cw_init] + [u.cw for _, u in single.issued]
    one_cw = [x for i, x in enumerate(one_cw) if i == 0 or x != one_cw[i - 1]]
    # the windows (ACK by ACK, lateness plays no part): the whole run
    assert eng_cw == one_cw[:len(eng_cw)] and len(eng_cw) >= len(one_cw) - 1
    assert any(cw < ONE for cw in eng_cw) and any(cw > ONE for cw in eng_cw)
    # the releases: up to the first late one
    cut = m.first_late.get(0, 1 << 62)
    rels = [t for (t, _, rel), (_, _, prev) in zip(recs[1:], recs, strict=False)
            if rel != prev and t < cut]
    assert len(rels) > 20, (len(rels), cut)
    off = ticks[0] - rels[0]
    assert [r + off for r in rels] == [tk for tk in ticks if tk < cut + off]
    print(f"seed {SEED}: {len(taken)} ACKs, {len(eng_cw)} windows, {len(rels)} releases on "
          f"time (of {len(ticks)}), offset {off}")


# -- RTL against the model, every cycle ------------------------------------------------------------

def _datapath_vectors(cfg, rng, count):
    """Random states and events, weighted to the sub-1 regime and small windows (divisors),
    so that the division meets partial remainders equal to the divisor, exact quotients and
    the saturation."""
    W = cfg.engine.time_width
    nw = cfg.window.event_n_width
    out = []
    for _ in range(count):
        t = rng.randrange(1 << W)
        r = rng.random()
        cw = (rng.randrange(q16(0.125), ONE) if r < 0.6 else rng.choice([
            rng.randrange(ONE, q16(3)), q16(0.125), q16(0.5), ONE, ONE - 1, 16 * ONE,
            rng.randrange(1, q16(0.125))]))
        on = int(rng.random() < 0.8)
        dl = (t + rng.randrange(-40, 3000)) & ((1 << W) - 1)
        ovr = rng.randrange(max(1, cw & (ONE - 1))) if cw < ONE else rng.randrange(ONE)
        if rng.random() < 0.05:
            # the saturation's edge: a deadline j_max or j_max + 1 cycles ahead (a WRITE can
            # put it there), the window unchanged: need - 1 >> (W - 3) lands on the divisor
            cw = rng.randrange(1, 8192)
            on, ovr = 1, rng.randrange(cw)
            dl = (t + cfg.j_max + rng.randrange(2)) & ((1 << W) - 1)
            out.append(({"wr": pack_wr(cw, 0), "on": on, "dl": dl, "ovr": ovr},
                        EventKind.TX, 0, t))
            continue
        state = {"wr": pack_wr(cw, rng.randrange(256)), "on": on, "dl": dl, "ovr": ovr}
        k = rng.random()
        if k < 0.6:
            nm = rng.randrange(0, 3) if rng.random() < 0.4 else 0
            nu = rng.randrange(0, 6) if rng.random() < 0.95 else (1 << nw) - 1
            out.append((state, EventKind.CN, nm | nu << nw, t))
        elif k < 0.8:
            out.append((state, EventKind.TX, 0, t))
        else:
            out.append((state, EventKind.TIMER, None, t))
    return out


@pytest.mark.parametrize("div_steps,rtt,default", [(2, RTT, False), (3, 1000, False),
                                                   (1, 4095, False), (2, 1562, True)])
def test_rtl_datapath_vectors(div_steps, rtt, default):
    """The datapath alone (no engine), one random vector per clock for 800 clocks: its
    outputs L - 1 cycles later equal the model's (W = 16, L = 21 / 19 / 27; and the top's
    build, W = 26, L = 26)."""
    cfg = (LdcpEngineConfig() if default else
           LdcpEngineConfig(engine=config().engine.replace(out_fifo_depth=40),
                            window=window(), div_steps=div_steps))
    dp = LdcpDatapath(cfg)
    model = LdcpDatapathModel(dp)
    regs = model.regs_reset()
    regs["rtt"] = rtt
    rng = random.Random(f"{SEED}-vectors-{div_steps}")
    vectors = _datapath_vectors(cfg, rng, 800)
    wants = harness.check_vectors(dp, model, regs, vectors)
    model_mask = (1 << cfg.engine.time_width) - 1
    sat = sum(bool(w.next_state["on"]) and ((w.next_state["dl"] - t) & model_mask) == cfg.j_max
              for (_, _, _, t), w in zip(vectors, wants, strict=True))
    print(f"seed {SEED}: {len(vectors)} vectors, L = {dp.latency}, {sat} saturated intervals")


def test_rtl_random_many_flows():
    """A 1024-flow table (W = 14, the division in 6 cycles, L = 20): random ACKs (single and
    coalesced counts, up to the payload's largest), TX, READs, WRITEs of the window and of the
    timer fields, register writes (alpha, beta, RTT), hot flows, back-pressure on rate and rd;
    every output every cycle equal to the model's.  Default: 256 flows spread over the table
    (the first and the last included); CC_LONG=1: every flow and 10^5 events
    (CC_LDCP_EVENTS overrides the count)."""
    cfg = config(n_flows=1024, time_width=14, horizon=1024, slots=4096, cw_init=1.25)
    rng = random.Random(SEED)
    h = harness.engine_harness(cfg, LdcpDatapath, LdcpDatapathModel)
    h.p_valid = {"tx": 0.5, "cn": 0.6, "ctl": 0.3, "csr_w": 0.05}
    h.p_rate_ready, h.p_rd_ready = 0.8, 0.6
    nw = cfg.window.event_n_width
    flows = list(range(1024)) if LONG else sorted({0, 1023, *rng.sample(range(1024), 254)})
    events = int(os.environ.get("CC_LDCP_EVENTS", 100_000 if LONG else 400))
    chunk = 500

    async def body(ctx):
        await h.wait_ready(ctx)
        h.start_all(flows)
        done = 0
        hot = flows[0]
        while done < events:
            for _ in range(min(chunk, events - done)):
                if rng.random() < 0.02:
                    hot = rng.choice(flows)
                f = hot if rng.random() < 0.3 else rng.choice(flows)
                r = rng.random()
                if r < 0.6:
                    nm = rng.randrange(0, 4) if rng.random() < 0.3 else 0
                    nu = rng.randrange(0, 9) if rng.random() < 0.9 else (1 << nw) - 1
                    h.queues["cn"].append((f, nm | nu << nw))
                elif r < 0.85:
                    h.queues["tx"].append((f, 0))
                elif r < 0.95:
                    h.queues["ctl"].append((f, CtlOp.READ, 0, 0))
                else:
                    field = rng.choice([WR, WR, ON, DL, OVR])
                    value = {WR: rng.randrange(q16(0.125), q16(3)), ON: 1,
                             DL: rng.randrange(1 << 14), OVR: rng.randrange(1 << 12)}[field]
                    h.queues["ctl"].append((f, CtlOp.WRITE, field, value))
                if rng.random() < 0.002:
                    reg = rng.choice([(0, rng.randrange(1 << 12, 1 << 16)),
                                      (1, rng.randrange(1 << 12, 1 << 16)),
                                      (4, rng.randrange(50, 400))])
                    h.queues["csr_w"].append(reg)
            done += chunk
            await harness.run_queues(h, ctx, 100)
        await harness.finish(h, ctx, 300)
    c = harness.simulate(h, body)
    assert c["ev_cn"] > events // 2 and c["expiries"] > 10, c
    print(f"seed {SEED}: {len(flows)} flows, {h.cycle} cycles, {h.model.issued} events, "
          f"{c['expiries']} releases, late_max {c['late_max']}")


# -- ACK coalescing in front of the engine --------------------------------------------------------

def test_ack_merge_model_directed():
    """The one-flow coalescing rule, by hand (m = 8, 7-bit counts): 3 unmarked, then 2 marked
    (absorbs the 3: 5 marked), then 4 unmarked; an ACK of another flow waits until the merged
    event leaves, and loads in the cycle it leaves; n = 0 is dropped; n > m counts m."""
    from sim.models.ldcp_engine import LdcpAckMergeModel
    cfg = config()
    nw = cfg.window.event_n_width
    g = LdcpAckMergeModel(cfg)
    assert g.step((5, 0, 3), False) == (True, None)
    assert g.step((5, 1, 2), False) == (True, (5, 3 << nw))
    assert g.step((5, 0, 4), False) == (True, (5, 5))
    assert g.step((5, 0, 0), False) == (True, (5, 5 | 4 << nw))     # n = 0: dropped
    assert g.step((6, 0, 1), False) == (False, (5, 5 | 4 << nw))    # another flow waits
    assert g.step((6, 0, 1), True) == (True, (5, 5 | 4 << nw))      # leaves; 6 loads
    assert g.step((6, 1, 30), False) == (True, (6, 1 << nw))        # n 30 -> m = 8
    assert g.head == [6, 9, 0]
    # up to the counts' width (127): 9 + 13 x 8 = 113, then 8 more would make 121, then 129
    for _ in range(13):
        assert g.step((6, 1, 8), False)[0]
    assert g.head == [6, 113, 0]
    assert g.step((6, 1, 8), False)[0] and g.head == [6, 121, 0]
    assert g.step((6, 1, 8), False)[0] is False and g.head == [6, 121, 0]


def test_ack_merge_rtl_against_model():
    """The merge register (RTL) against its model every cycle: random ACKs of 3 flows (n 0 ...
    m + 3, marked 1 in 3) and random engine readiness, and stalls of the engine in which the
    counts of one flow fill up to their largest value (127) and the next ACK waits."""
    from amaranth.sim import Simulator

    from hw.nic.ldcp_engine import LdcpAckMerge, ack_layout
    from sim.models.ldcp_engine import LdcpAckMergeModel
    cfg = config()
    dut = LdcpAckMerge(cfg)
    g = LdcpAckMergeModel(cfg)
    lay = ack_layout(cfg)
    rng = random.Random(f"{SEED}-merge")
    taken = [0, 0]

    async def bench(ctx):
        ack = None
        for c in range(3000):
            stall = c % 400 >= 150          # the engine refuses 230 cycles: one flow, n = 1,
            if ack is None and rng.random() < 0.8:  # so the counts fill to exactly 127
                ack = ((0, int(rng.random() < 0.5), 1) if stall else
                       (rng.randrange(3), int(rng.random() < 0.3), rng.randrange(0, 12)))
            # (the first 20 cycles of a stall flush what the other flows left in the register)
            ready = (c % 400 < 170) and (stall or rng.random() < (0.2 if (c // 200) % 2
                                                                    else 0.9))
            ctx.set(dut.ack.valid, ack is not None)
            if ack is not None:
                ctx.set(dut.ack.payload.as_value(),
                        lay.const({"flow": ack[0], "ece": ack[1], "n": ack[2]}).as_bits())
            ctx.set(dut.cn.ready, ready)
            want_ready, want_offer = g.step(ack, ready)
            assert bool(ctx.get(dut.cn.valid)) == (want_offer is not None), c
            if want_offer is not None:
                bits = ctx.get(dut.cn.payload.as_value())
                fw = cfg.engine.flow_width
                assert (bits & ((1 << fw) - 1), bits >> fw) == want_offer, c
                taken[1] += ready
            if ack is not None:
                assert bool(ctx.get(dut.ack.ready)) == want_ready, c
                if want_ready:
                    ack, taken[0] = None, taken[0] + 1
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert taken[0] > 1000 and taken[1] > 500, taken


def test_ack_merge_hot_flow_conserves_packets():
    """One flow, an ACK every cycle for 2000 cycles, through the merge register into the
    engine model: the engine takes one event per L cycles (its hazard rule), every packet
    confirmed reaches it once (the counts add up), and the window follows the merged events
    exactly (``update`` on each, in order)."""
    from sim.models.ldcp_engine import LdcpAckMergeModel
    from sim.models.ldcp_window import update
    cfg = config()
    nw = cfg.window.event_n_width
    rng = random.Random(f"{SEED}-hot")
    m, _ = _engine_model(cfg)
    g = LdcpAckMergeModel(cfg)
    ctl = [(0, CtlOp.START, 0, 0)]
    offered = taken = 0
    events = []
    ack = None
    for c in range(2300):
        if ack is None and c < 2000:
            ack = (0, int(rng.random() < 0.2), rng.randrange(1, 9))
        offer = g.head and (g.head[0], g.head[1] | g.head[2] << nw)
        o = m.step(ctl=ctl[0] if ctl else None, cn=offer or None)
        if ctl and o.ctl_ready:
            ctl.pop(0)
        ready, got = g.step(ack, bool(o.cn_ready))
        assert got == (offer or None)
        if got is not None and o.cn_ready:
            events.append(got[1])
            taken += (got[1] & ((1 << nw) - 1)) + (got[1] >> nw)
        if ack is not None and ready:
            offered += ack[2]
            ack = None
    assert taken == offered and len(events) < 2000 // (cfg.latency - 1) + 2
    regs = m.regs
    p = type("P", (), dict(alpha=regs["alpha"], beta=regs["beta"], gamma=regs["gamma"],
                           cw_max=regs["cw_max"]))
    cw = regs["cw_init"]
    for e in events:
        cw = update(p, cw, e & ((1 << nw) - 1), e >> nw).cw
    assert unpack_wr(m.flows[0].algo["wr"])[0] == cw
    print(f"seed {SEED}: {offered} packets in 2000 ACKs -> {len(events)} engine events")
