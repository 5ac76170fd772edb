"""The Verilated RTL in the network simulator's loop (``--engine rtl``, :mod:`sim.rtl`).

A small DCQCN scenario runs with the golden engines and with the Verilated reaction point
(:class:`hw.nic.dcqcn_rp.DcqcnRp`, one instance per flow); the two ``RunResult`` must be
identical (every flow record, counter, series and trace row), and the scenario must exercise
what could differ: RED-ECN marking, CNPs, cuts, the rate-increase and alpha timers, the byte
counter.  A planted RTL bug (a knob off by one, written through the RTL's register port, so
the test needs no second build) must make the runs diverge, and the test names where (flow,
cycle, field).  With ``CC_LONG=1``: a bug planted in the generated Verilog itself (a second
build) and a longer bundled scenario.

The first run builds the library (Verilator, about 20 s on 2 cores), cached under
``build/rtl/``; marked ``cocotb`` (Verilator) like the testbenches, so ``make test-fast`` skips it.
"""

from __future__ import annotations

import os
import re

import pytest

from sim.rtl import engines
from sim.rtl.diff import run_both
from sim.scenario import config
from sim.scenario.fields import ScenarioError
from tests.rtl_in_loop_scenarios import DCQCN, load

LONG = os.environ.get("CC_LONG", "") not in ("", "0")

pytestmark = pytest.mark.cocotb

#: tests/rtl_in_loop_scenarios.py's DCQCN scenario: 3 long flows and at 100 us a 3 x 100 KB
#: incast into one 40 Gb/s port (RED marking, CNPs, cuts; the rate-increase and alpha timers
#: and the byte counter expire hundreds of times).  Long flows are traced (their engines stepped
#: expiry by expiry, their trace rows compared too), the incast's are not (the fast path: idle
#: cycles and the event in one call)
SCENARIO = DCQCN


def scenario(**over):
    return load(SCENARIO, "rtl_diff", **over)


def _exercised(result, log):
    """What the scenario must exercise for the comparison to mean something (from the golden
    run, so that a broken RTL cannot make this pass)."""
    c = result.counters
    assert c["marks"] > 20 and c["cnps"] > 20, c
    snaps = [s for _, _, _, s in log]
    assert max(s["t_stage"] for s in snaps) >= 3        # timer-driven increases
    assert max(s["b_stage"] for s in snaps) >= 1        # byte-counter increases
    assert min(s["alpha"] for s in snaps) < max(s["alpha"] for s in snaps)   # alpha timer
    assert {r[2] for r in result.trace} >= {"cut", "increase"}
    # the untraced incast flows (3..5) are cut and recover too
    incast = [s for _, f, _, s in log if f >= 3]
    assert min(s["rc"] for s in incast) < max(s["rc"] for s in incast)
    assert max(s["t_stage"] for s in incast) >= 1


def test_bridge_steps_exact_cycles():
    """The bridge on its own, against hand-derived values (the scenario's configuration: the
    same build): a first CNP with alpha = 1 halves Rc (40 -> 20 Gb/s) and starts the increase
    timer at T = 4 us = 1000 cycles; 500 idle cycles later it holds 500; the snapshot's cycle
    is the engine's."""
    from hw.nic.dcqcn_config import RATE_FRAC
    from sim.net.algos.dcqcn import DcqcnParams
    from sim.rtl.engines import dcqcn_rp_rtl

    params = config.from_dict(SCENARIO, "<test>").params["dcqcn"]
    assert isinstance(params, DcqcnParams)
    e = dcqcn_rp_rtl(params.rp_config(40_000, 250_000_000))
    assert e.rate() == 40_000 << RATE_FRAC
    e.advance(100)                        # quiet: skipped, nothing changes
    e.on_notification(100, 0)
    assert e.rate() == 20_000 << RATE_FRAC
    s = e.snapshot()
    assert (s["cycle"], s["t_cnt"], s["rt"]) == (101, 1000, 40_000 << RATE_FRAC)
    e.advance(601)
    assert e.snapshot()["t_cnt"] == 500 and e.snapshot()["cycle"] == 601
    e.on_tx(601, 1000)                    # a packet: the byte counter takes 1000 bytes
    assert e.snapshot()["bc"] == s["bc"] - 1000
    assert e.snapshot()["t_cnt"] == 499 and e.snapshot()["cycle"] == 602


def test_rtl_run_is_the_golden_run():
    from sim.rtl.diff import run_logged
    scn = scenario()
    golden, glog = run_logged(scn, "dcqcn", "golden")
    _exercised(golden, glog)
    g, r, div = run_both(scn, "dcqcn")
    assert g == golden
    assert div is None, str(div)
    assert r == g


def test_quiet_cycles_may_be_skipped(monkeypatch):
    """The engines skip the idle cycles of a quiet reaction point (no timer running); running
    every one of them instead gives the same run (the RTL holds its state there)."""
    monkeypatch.setattr(engines, "SKIP_QUIET", False)
    for scn, algo in ((scenario(), "dcqcn"), (config.from_dict(QCN, "<test>"), "qcn")):
        g, r, div = run_both(scn, algo, record=False)
        assert div is None, str(div)


def _t_cycles_off_by_one(inst, cfg):
    """Plant a bug: the rate-increase period register one cycle short (through the csr
    port, as a driver would write it)."""
    regmap = cfg.register_map()
    reg = regmap["T_CYCLES"]
    inst.csr_write(regmap.addr("T_CYCLES"), reg.pack(t_cycles=cfg.registers().t_cycles - 1),
                   addr_width=regmap.addr_width)


def test_planted_bug_diverges_and_says_where(monkeypatch):
    monkeypatch.setitem(engines.AFTER_RESET, "dcqcn_rp", _t_cycles_off_by_one)
    g, r, div = run_both(scenario(), "dcqcn")
    print(div)
    assert div is not None and g != r
    # the first difference is in a reaction point's state, at the first timer expiry after
    # a cut: the increase timer's counter (flow and cycle named)
    assert div.where == "engine" and div.flow is not None and div.cycle > 0
    assert "t_cnt" in div.field or "t_stage" in div.field or "rc" in div.field, str(div)


@pytest.mark.skipif(not LONG, reason="a second Verilator build (CC_LONG=1)")
def test_bug_in_the_verilog_diverges(monkeypatch):
    """A constant changed in the generated Verilog: the reset value (power-up and reset
    assignment) of the 1000-cycle periods (T and K, 4 us at 250 MHz) one cycle short."""
    def patch(text):
        new, n = re.subn(r"(=\s*24'h)0003e8;", r"\g<1>0003e7;", text)
        assert n >= 2, n
        return new
    monkeypatch.setitem(engines.PATCHES, "dcqcn_rp", patch)
    g, r, div = run_both(scenario(), "dcqcn")
    print(div)
    assert div is not None and div.where == "engine"


@pytest.mark.skipif(not LONG, reason="CC_LONG=1: bundled scenarios, 1-3 ms each")
@pytest.mark.parametrize("name, algo, duration_us", [
    ("dcqcn_fairness", "dcqcn", 2000), ("l3qcn_chain", "l3qcn", 1000),
    ("default", "dcqcn", None), ("default", "qcn", None)])
def test_bundled_scenarios(name, algo, duration_us):
    over = {} if duration_us is None else {"duration_us": duration_us}
    scn = config.load(name, over, [algo])
    g, r, div = run_both(scn, algo, record=False)
    assert div is None, str(div)
    assert g.counters["cnps"] + g.counters["cnms"] > 0


#: QCN: 3 long flows, congestion points at every egress (set point 10 KB), the timer T = 5 us
#: and byte counter BC = 20 KB with 30 % reload jitter (so each flow's LFSR seed matters)
QCN = {**SCENARIO, "name": "rtl_diff_qcn", "seed": 5, "algorithms": ["qcn"],
       "algo": {"qcn": {"time_reset_us": 5, "byte_reset": 20000, "rp_jitter": 0.3,
                        "q_eq_bytes": 10000}}}


def test_qcn_rtl_run_is_the_golden_run():
    from sim.rtl.diff import run_logged
    scn = config.from_dict(QCN, "<test>")
    golden, glog = run_logged(scn, "qcn", "golden")
    assert golden.counters["cnms"] > 10
    snaps = [s for _, _, _, s in glog]
    assert max(s["t_stage"] for s in snaps) >= 3 and max(s["b_stage"] for s in snaps) >= 1
    assert len({s["bc"] for s in snaps if s["active"]}) > 10       # jittered reloads
    g, r, div = run_both(scn, "qcn")
    assert g == golden
    assert div is None, str(div)
    assert r == g


def test_qcn_lfsr_seed_reaches_each_flow(monkeypatch):
    """Planted: every flow's RTL LFSR reset to one seed (the port's value ignored)."""
    def same_seed(inst, cfg):
        inst.poke("lfsr_seed", 12345)
        inst.reset(1)
    monkeypatch.setitem(engines.AFTER_RESET, "qcn_rp", same_seed)
    g, r, div = run_both(config.from_dict(QCN, "<test>"), "qcn")
    print(div)
    assert div is not None and div.where == "engine" and div.flow is not None


def test_engine_key_errors_are_one_line():
    with pytest.raises(ScenarioError) as e:
        scenario(engine="rtl", algorithms=["dctcp"])
    msg = str(e.value)
    assert "\n" not in msg and "engine" in msg and "dctcp" in msg and "rtl" in msg, msg
    with pytest.raises(ScenarioError) as e:
        scenario(engine="verilog")
    assert "\n" not in str(e.value) and "golden" in str(e.value)
    assert scenario(engine="rtl").engine == "rtl"
