"""The switches' egress markers as Verilated RTL in the network simulator's loop
(``--engine rtl``: :mod:`sim.rtl.marker`, one :class:`hw.switch.marker.EgressMarker` per switch).

A small DCQCN scenario whose bottleneck queue is limited to 80 KB: the 3 x 100 KB incast fills
it, so packets are marked on the RED ramp and dropped at the queue limit (go-back-N resends
them).  The golden run and the RTL run (markers and reaction points Verilated) must give an
identical ``RunResult`` and identical marker decisions, descriptor by descriptor.  Planted
bugs: the ramp's end K_max one byte low, written through the marker's register port after
its reset (no second build), and every switch's LFSR reset to one seed; each must make the
runs diverge and the test names the switch, the cycle and the decision field.

Build: one marker configuration (the dumbbell's switch: 7 ports x 2 priorities), about 30 s
the first time, cached under ``build/rtl/``; marked ``cocotb`` (Verilator) like the
other RTL-in-the-loop tests.
"""

from __future__ import annotations

import pytest

from hw.layouts import DropReason, Ecn
from hw.switch.marker_config import CSR_ADDR_WIDTH, MarkerReg
from sim.models.marker import Descriptor
from sim.rtl import engines
from sim.rtl.diff import first_divergence, run_both, run_logged
from sim.scenario import runner
from tests.rtl_in_loop_scenarios import DCQCN, load

pytestmark = pytest.mark.cocotb

#: tests/test_rtl_in_loop.py's DCQCN scenario (3 long flows, a 3 x 100 KB incast at 100 us
#: into one 40 Gb/s port; RED ramp 5 KB..60 KB, P_max 0.2) with an 80 KB queue limit
SCENARIO = {**DCQCN, "name": "rtl_marker", "switch": {"queue_kb": 80}}


def scenario(**over):
    return load(SCENARIO, "rtl_marker", **over)


def _marker_log(log):
    return log.markers


def test_rtl_markers_are_the_golden_markers():
    scn = scenario()
    golden, glog = run_logged(scn, "dcqcn", "golden")
    # what must be exercised (from the golden run, so a broken RTL cannot make this pass)
    c = golden.counters
    assert c["marks"] > 50 and c["drops_buffer"] > 20, c
    decisions = [s for _, _, _, s in _marker_log(glog)]
    assert {s["reason"] for s in decisions} >= {DropReason.NONE, DropReason.QUEUE_FULL}
    assert sum(s["marked"] for s in decisions) > 50
    g, r, div = run_both(scn, "dcqcn")
    assert g == golden
    assert div is None, str(div)
    assert r == g
    assert len(_marker_log(glog)) > 1000


def test_rtl_marker_by_hand():
    """One switch's RTL marker (the scenario's build) against values derived by hand from its
    registers: the pipeline latency the top declares, no mark below K_min, a certain mark at
    K_max, Not-ECT never marked, the queue limit, an underflow rejected."""
    from hw.switch.marker import EgressMarker
    from sim.rtl.marker import RtlMarker

    net, _, _ = runner.build(scenario(engine="rtl"), "dcqcn")
    cfg = net.switches[0].marker.cfg
    regs = cfg.registers()
    m = RtlMarker(cfg)
    # (the DCQCN profile, sampled at enqueue, compare q > K)
    assert (regs.k_min, regs.k_max, regs.buf_max) == (5000, 60000, 80000)
    assert (cfg.sample_at, cfg.compare) == ("enqueue", "gt")
    d = m.step(Descriptor.enqueue(1000, Ecn.ECT0, port=1, prio=1))
    assert (d.drop, d.marked, d.qlen, d.ecn) == (False, False, 0, Ecn.ECT0)
    assert m.measured_latency == EgressMarker.LATENCY
    for _ in range(60):                        # 61 000 bytes queued: q > K_max
        m.step(Descriptor.enqueue(1000, Ecn.NOT_ECT, port=1, prio=1))
    assert m.queue(1, 1) == 61_000
    d = m.step(Descriptor.enqueue(1000, Ecn.ECT1, port=1, prio=1))
    assert (d.drop, d.marked, d.qlen, d.ecn) == (False, True, 61_000, Ecn.CE)
    d = m.step(Descriptor.enqueue(1000, Ecn.NOT_ECT, port=1, prio=1))
    assert (d.drop, d.marked, d.ecn) == (False, False, Ecn.NOT_ECT)
    for _ in range(2):                         # q = 80 000
        m.step(Descriptor.enqueue(8_500, Ecn.NOT_ECT, port=1, prio=1))
    d = m.step(Descriptor.enqueue(1, Ecn.ECT0, port=1, prio=1))
    assert (d.drop, d.reason, d.qlen) == (True, DropReason.QUEUE_FULL, 80_000)
    d = m.step(Descriptor.dequeue(1000, Ecn.ECT0, port=0, prio=1))
    assert (d.drop, d.reason) == (True, DropReason.UNDERFLOW)
    assert m.queue(1, 1) == 80_000 and m.queue(0, 1) == 0
    assert m.counters[MarkerReg.CNT_MARKED] == 1


def _k_max_one_low(inst, cfg):
    """Plant a bug: the ramp's end one byte low (through the csr port, as a driver would): a
    packet sampled at exactly q = K_max = 60 000 (compare q > K) is then marked for certain,
    instead of with the ramp's P_max.  (K_min one byte high, tried too, takes effect (read back) but
    shifts the ramp by 1/55 000: no decision of this scenario flips.)"""
    inst.csr_write(MarkerReg.K_MAX, cfg.registers().k_max - 1, addr_width=CSR_ADDR_WIDTH)


def test_planted_threshold_bug_says_where(monkeypatch):
    monkeypatch.setitem(engines.AFTER_RESET, "marker", _k_max_one_low)
    g, r, div = run_both(scenario(), "dcqcn")
    print(div)
    assert div is not None and g != r
    # the first difference: a ramp decision of the bottleneck's marker (switch, cycle, field)
    assert div.where == "marker" and div.flow.startswith("switch ") and div.cycle > 0
    assert div.field.endswith("-> marked") and (div.golden, div.rtl) == (False, True), str(div)
    assert str(div).startswith("first divergence (marker): switch ")


def test_switch_seed_reaches_the_rtl(monkeypatch):
    """Planted: the switch's RTL LFSR reset to a fixed seed (its port's value ignored)."""
    from sim.rtl.marker import configure

    def same_seed(inst, cfg):
        inst.poke("lfsr_seed", 12345)
        inst.reset(1)
        inst.step(4 * cfg.queues + 8)            # (the occupancies cleared again)
        configure(inst, cfg)                     # (and the knobs written again)
    monkeypatch.setitem(engines.AFTER_RESET, "marker", same_seed)
    g, glog = run_logged(scenario(), "dcqcn", "golden")
    r, rlog = run_logged(scenario(), "dcqcn", "rtl")
    div = first_divergence(g, r, glog, rlog)
    print(div)
    assert div is not None and div.where == "marker"
