"""The multi-flow engine in the network simulator's loop, one per NIC (``--engine engine``, its
golden model; ``--engine engine-rtl``, its Verilated RTL: :mod:`sim.rtl.engine_host`).

Two hosts with four flows each (a long flow, a later long flow, two incast flows) share a
40 Gb/s bottleneck: RED-ECN marking, CNPs, cuts, the rate-increase timer T = 4 us (1000
cycles at the 250 MHz engine clock, inside the 1024-cycle wheel horizon) and the alpha timer
K = 6 us (1500 cycles: parked at the horizon and re-evaluated), the byte counter.  The RTL run's
``RunResult`` and every rate output must equal the golden model's; a planted RTL bug (the T
register written one cycle short at start-up, no second build) must diverge, named by flow,
cycle and field.  The engine's timing itself is checked against hand-derived cycles.

The first RTL run builds the library (Verilator, about a minute of CPU), cached under
``build/rtl/``; those tests are marked ``cocotb`` like the other Verilated ones.  With
``CC_LONG=1``: a longer run and QCN.
"""

from __future__ import annotations

import functools
import os

import pytest

from hw.nic.dcqcn_config import RATE_FRAC
from hw.params import ConfigError
from sim.net.algos.dcqcn import DcqcnParams
from sim.net.engine_api import RateEngine
from sim.rtl import engine_host as eh
from sim.rtl.diff import first_divergence
from sim.scenario import config
from sim.scenario.fields import ScenarioError

LONG = os.environ.get("CC_LONG", "") not in ("", "0")

SCENARIO = {
    "name": "engine_diff", "seed": 3, "duration_us": 150, "sample_us": 2,
    "algorithms": ["dcqcn"],
    "topology": {"kind": "dumbbell", "senders": 2, "receivers": 1, "rate_gbps": 40,
                 "delay_us": 1},
    "algo": {"dcqcn": {"profile": "paper", "kmin_bytes": 5000, "kmax_bytes": 60000,
                       "pmax": 0.2, "cnp_interval_ns": 4000, "rpg_time_reset": 4,
                       "dce_tcp_rtt": 6, "rpg_byte_reset": 10000}},
    "workload": [{"name": "long", "kind": "long", "src": "senders", "dst": "receivers",
                  "stagger_us": 5},
                 {"name": "late", "kind": "long", "src": "senders", "dst": "receivers",
                  "start_us": 12, "stagger_us": 3},
                 {"name": "incast", "kind": "incast", "src": "senders", "dst": "receivers",
                  "size_kb": 100, "at_us": 30},
                 {"name": "incast2", "kind": "incast", "src": "senders", "dst": "receivers",
                  "size_kb": 60, "at_us": 70}],
}


def scenario(**over):
    return config.from_dict({**SCENARIO, **over}, "<test>")


def _nic(kind: str, flows: int = 3):
    params = DcqcnParams(profile="paper", rpg_time_reset=4, dce_tcp_rtt=4,
                         rpg_byte_reset=10000)
    cfg = params.rp_config(40_000, 250_000_000)
    nic = eh.NicEngine(kind, "dcqcn", eh._dcqcn, 250_000_000, 0)
    views = [eh.NicFlowEngine(nic, nic.add_flow(i, cfg)) for i in range(flows)]
    nic.log = []
    return nic, views


def _hand_derived(kind: str):
    """The engine's timing by hand: the table sweep (8 cycles, 8 flows), then the 25 register
    writes (one per cycle, cycles 8 ... 32), then one START per slot from cycle 33; an event
    taken at cycle c has its rate on the stream at c + 17 (the 12-cycle pipelined DCQCN
    datapath: pipe_depth 16, then the rate FIFO) and in the flow's register from c + 18.
    Paper profile, alpha = 1: the first CNP halves Rc (40 -> 20 Gb/s); every T = 1000 cycles
    the increase timer pops (lateness 0: one flow) and fast recovery takes Rc halfway to
    Rt = 40 Gb/s: 30, 35, 37.5 Gb/s."""
    nic, f = _nic(kind)
    gbps = 1000 << RATE_FRAC
    f[1].on_notification(1000, 0)
    f[1].advance(1017)
    assert f[1].rate() == 40 * gbps            # (the output is on the stream at 1017)
    f[1].advance(1018)
    assert f[1].rate() == 20 * gbps
    f[1].advance(4100)
    assert nic.log == [(33 + 17, 0, "rate output", {"rate": 40 * gbps}),
                       (34 + 17, 1, "rate output", {"rate": 40 * gbps}),
                       (35 + 17, 2, "rate output", {"rate": 40 * gbps}),
                       (1017, 1, "rate output", {"rate": 20 * gbps}),
                       (2017, 1, "rate output", {"rate": 30 * gbps}),
                       (3017, 1, "rate output", {"rate": 35 * gbps}),
                       (4017, 1, "rate output", {"rate": 75 * gbps // 2})]
    assert f[0].rate() == f[2].rate() == 40 * gbps
    assert isinstance(f[0], RateEngine)
    assert f[1].snapshot() == {"cycle": 4100, "rate": 75 * gbps // 2}


def test_engine_timing_hand_derived():
    _hand_derived("engine")


def _exercised(result, log, net):
    """What the scenario must exercise (from the golden run, so that a broken RTL cannot make
    this pass): marks and CNPs, cuts and recoveries on flows of both NICs, several flows per
    NIC, timer expiries, parked (stale or re-evaluating) pops and late pops."""
    c = result.counters
    assert c["marks"] > 50 and c["cnps"] > 30, c
    outs = [(cyc, f, s["rate"]) for cyc, f, kind, s in log if kind == "rate output"]
    by_flow: dict = {}
    for _, f, r in outs:
        by_flow.setdefault(f, []).append(r)
    changed = [f for f, rs in by_flow.items() if len(set(rs)) > 3]
    assert len(changed) >= 6, by_flow
    nics = list(net.nic_engines.values())
    assert len(nics) == 2 and all(len(n.flows) == 4 for n in nics)
    m = [n.backend.m for n in nics]
    assert sum(x.counters["expiries"] for x in m) > 100
    assert sum(x.counters["ev_timer"] - x.counters["expiries"] for x in m) > 10   # re-evaluations
    assert max(x.counters["late_max"] for x in m) > 0                             # a late pop


def test_idle_skip_is_exact(monkeypatch):
    """The golden model's idle skip (:func:`sim.rtl.engine_host._skip_golden`) against the
    model stepped every cycle: the same run, the same rate outputs."""
    scn = scenario(duration_us=80)
    g, glog, _ = eh.run_logged(scn, "dcqcn", "engine")
    monkeypatch.setattr(eh, "SKIP_IDLE", False)
    s, slog, _ = eh.run_logged(scn, "dcqcn", "engine")
    assert g == s
    assert list(glog) == list(slog)
    assert sum(1 for e in glog if e[2] == "rate output") > 40


def _model_state(nic):
    m = nic.backend.m
    w = dict(vars(m.wheel))
    w.pop("cfg")
    return (m.now, m.cycle, m.sweep, [m.state(i) for i in range(m.cfg.n_flows)],
            dict(m.counters), m.hist, list(m.pipe), w)


def test_idle_skip_leaves_the_model_as_stepping_does(monkeypatch):
    """After every idle stretch the skipped model's every register (the wheel's cursor among
    them) is the stepped model's, at checkpoints inside and after stretches of every length."""
    skip, _ = _nic("engine")
    monkeypatch.setattr(eh, "SKIP_IDLE", False)
    step, _ = _nic("engine")
    for nic, skipping in ((skip, True), (step, False)):
        monkeypatch.setattr(eh, "SKIP_IDLE", skipping)
        for c in (1000, 1700, 2600):
            nic.on_cn(c % 3, c, 0)
    points = [0, 37, 500, 1001, 1500, 2003, 2100, 2999, 3333, 4100, 7000, 12_345]
    steps = [0]
    m = skip.backend.m
    plain = m.step

    def counted(*args, **kw):
        steps[0] += 1
        return plain(*args, **kw)
    m.step = counted
    for c in points:
        monkeypatch.setattr(eh, "SKIP_IDLE", True)
        skip.advance(c)
        monkeypatch.setattr(eh, "SKIP_IDLE", False)
        step.advance(c)
        assert _model_state(skip) == _model_state(step), c
    assert skip.log == step.log and len(skip.log) > 8
    # (the skip did skip: the skipping model stepped a small part of the cycles)
    assert skip.backend.m.cycle == step.backend.m.cycle == points[-1]
    assert steps[0] < points[-1] // 4, steps


def test_engine_kinds_are_checked():
    with pytest.raises(ScenarioError) as e:
        scenario(engine="engine", algorithms=["dctcp"])
    assert "\n" not in str(e.value) and "engine" in str(e.value)
    nic, _ = _nic("engine", 1)
    other = DcqcnParams(profile="paper").rp_config(40_000, 250_000_000)
    with pytest.raises(ConfigError):
        nic.add_flow(9, other)                  # one engine, one configuration per NIC


# -- the Verilated engine ---------------------------------------------------------------------


@pytest.mark.cocotb
def test_engine_rtl_timing_hand_derived():
    _hand_derived("engine-rtl")


@functools.cache
def _golden():
    """The test scenario's ``engine`` run (result, log, network), once per session."""
    return eh.run_logged(scenario(), "dcqcn", "engine")


def _rtl_against_golden():
    golden, glog, _ = _golden()
    rtl, rlog, _ = eh.run_logged(scenario(), "dcqcn", "engine-rtl")
    return golden, rtl, first_divergence(golden, rtl, glog, rlog)


@pytest.mark.cocotb
def test_engine_rtl_run_is_the_engine_golden_run():
    golden, glog, net = _golden()
    _exercised(golden, glog, net)
    g, r, div = _rtl_against_golden()
    assert div is None, str(div)
    assert r == g


def _t_cycles_short(writes, dp):
    """Plant a bug: the rate-increase period T written one cycle short (RTL only)."""
    names = [name for name, _, _ in dp.regs]
    return [(a, v - 1 if names[a] == "t_cycles" else v) for a, v in writes]


@pytest.mark.cocotb
def test_planted_bug_diverges_and_says_where(monkeypatch):
    monkeypatch.setitem(eh.AFTER_RESET, "dcqcn", _t_cycles_short)
    g, r, div = _rtl_against_golden()
    print(div)
    assert div is not None and g != r
    # the first difference: a flow's first increase after its first cut, one cycle early
    # (1000 cycles after the cut's event; the rate output 15 cycles after that)
    assert div.where == "engine" and isinstance(div.flow, int) and div.cycle > 1000
    assert div.field == "input", str(div)          # the output came at another cycle
    (gc, gk), (rc, rk) = div.golden, div.rtl
    assert gk == rk == "rate output" and rc == gc - 1, str(div)


@pytest.mark.cocotb
@pytest.mark.skipif(not LONG, reason="CC_LONG=1: 1 ms")
def test_engine_rtl_long_run():
    g, r, div = eh.run_both(scenario(duration_us=1000), "dcqcn", record=False)
    assert div is None, str(div)


#: QCN: the same flows, congestion points at every egress (set point 10 KB), T = 5 us,
#: BC = 20 KB with 30 % reload jitter (the engine's one LFSR)
QCN = {**SCENARIO, "name": "engine_diff_qcn", "seed": 5, "algorithms": ["qcn"],
       "algo": {"qcn": {"time_reset_us": 5, "byte_reset": 20000, "rp_jitter": 0.3,
                        "q_eq_bytes": 10000}}}


@pytest.mark.cocotb
@pytest.mark.skipif(not LONG, reason="CC_LONG=1: a second Verilator build (QCN)")
def test_qcn_engine_rtl_run_is_the_engine_golden_run():
    scn = config.from_dict(QCN, "<test>")
    golden, glog, _ = eh.run_logged(scn, "qcn", "engine")
    assert golden.counters["cnms"] > 10
    g, r, div = eh.run_both(scn, "qcn")
    assert div is None, str(div)
    assert r == g == golden
