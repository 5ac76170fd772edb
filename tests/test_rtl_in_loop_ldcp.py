"""LDCP with its Verilated RTL in the simulator's loop (``--engine rtl``, :mod:`sim.rtl.ldcp`).

A small LDCP scenario runs with the golden cycle models, the fast twins and the Verilated
sender (:class:`hw.nic.ldcp_transport.LdcpSender` on :class:`hw.nic.ldcp_window.LdcpWindow`)
and receiver (:class:`hw.nic.ldcp_transport.LdcpReceiver`), one instance each per flow; the
three ``RunResult`` must be identical, and the engines' logs too (every start, ACK, released
packet, reported next wake-up, with the sender's registers after each; every receiver's ACKs).
The scenario must exercise what could differ (checked on the golden run): RED marking,
fast-start drops (Not-ECT past K) and the NAKs and exits they cause, retransmission timeouts
(an 8 us RTO under a queue that holds packets longer), and the sub-one-packet regime (12
incast flows on a 23-packet BDP: windows at the floor gamma = 1/8, paced by the sub-1 timer).
A planted RTL bug (the RTO register one cycle short, written through the RTL's register port:
no second build) must make the runs diverge, and the test names where (flow, cycle, field).
``CC_LONG=1``: the same with delayed ACKs (m = 2: the receiver's flush timer) and a larger
incast (a second pair of builds).

Builds: the sender (~60 s on a loaded 2-core machine) and the receiver, cached under
``build/rtl/``; marked ``cocotb`` (Verilator) like the testbenches.
"""

from __future__ import annotations

import functools
import os

import pytest

from hw.nic.ldcp_window_config import ONE
from sim.models.ldcp_transport import TAck
from sim.rtl import engines
from sim.rtl.diff import first_divergence, run_logged
from sim.scenario import runner
from tests.rtl_in_loop_scenarios import dumbbell, load

LONG = os.environ.get("CC_LONG", "") not in ("", "0")

pytestmark = pytest.mark.cocotb

#: 2 long flows (10 us apart) and at 40 us a 12 x 48 KB incast into one 40 Gb/s port (base
#: RTT 4.4 us, BDP 23 packets = the IW): fast start overflows K = 20 KB (Not-ECT drops, NAKs,
#: exit 1), the ramp 5-30 KB marks, the windows fall to the floor (sub-1 pacing), and an RTO
#: of 8 us fires behind the queue
SCENARIO = dumbbell("rtl_diff_ldcp", "ldcp",
                    {"kmin_bytes": 5000, "kmax_bytes": 30000, "pmax": 0.3, "k_bytes": 20000,
                     "rto_ns": 8000},
                    senders=14, n_long=2, stagger_us=10, incast_kb=48, incast_at_us=40,
                    duration_us=150)


def scenario(**ldcp):
    return load(SCENARIO, "rtl_diff_ldcp",
                algo={"ldcp": {**SCENARIO["algo"]["ldcp"], **ldcp}})


@functools.cache
def golden_run(m: int = 1):
    return run_logged(scenario(m=m), "ldcp", "golden")


def _exercised(result, log):
    """From the golden run (a broken RTL cannot make this pass)."""
    c = result.counters
    assert c["marks"] > 20 and c["drops_not_ect"] > 20, c
    assert c["timeouts"] > 5 and c["flows_below_one_packet"] >= 10, c
    assert sum(f.measured["naks"] for f in result.flows) > 5
    assert sum(f.measured["fast_start_exit"] == 1 for f in result.flows) > 5
    snaps = [s for _, _, kind, s in log if kind == "ack"]
    assert min(s["cw"] for s in snaps) == ONE // 8          # the floor gamma: sub-1 pacing
    assert sum(1 for _, _, kind, s in log if kind == "wakeup" and s["at"] is not None) > 500


def _same(scn, m=1):
    golden, glog = golden_run(m)
    _exercised(golden, glog)
    fast, _ = run_logged(scn, "ldcp", "fast", record=False)
    assert fast == golden
    rtl, rlog = run_logged(scn, "ldcp", "rtl")
    div = first_divergence(golden, rtl, glog, rlog)
    assert div is None, str(div)
    assert rtl == golden and rlog == glog


def test_sender_engine_alone():
    """The Verilated sender on its own (the scenario's flows' configuration: their build, no
    second one), against hand-derived values: a message started at cycle 10 is taken at the
    edge that ends it, so the first packet is offered at cycle 11 (LSN 0, the MTU of 1000
    bytes, Not-ECT: fast start before the first ACK); the packets go back to back up to the
    IW, the last one the 904 bytes left; the RTO register read back is the configuration's
    (8 us = 2000 cycles); a look-ahead leaves the state as it was."""
    from sim.rtl.ldcp import RtlLdcpSender

    net, _, _ = runner.build(scenario(), "ldcp")
    spec = net.flows[0]
    cfg = net.hosts[spec.src].senders[spec.flow_id].cfg
    assert cfg.window.mtu == 1000 and cfg.window.clk_hz == 250_000_000
    e = RtlLdcpSender(cfg)
    assert e._rto == 2000
    e.start_message(10, 4904)
    assert e.next_wakeup() == 11
    p = e.release(11)
    assert (p.lsn, p.length, p.ect, p.retx, p.last) == (0, 1000, False, False, False)
    before = e.snapshot()
    assert e.next_wakeup() == 12 and e.snapshot() == before
    for c in range(12, 16):
        p = e.release(c)
    assert (p.lsn, p.length, p.last, p.ect) == (4000, 904, True, True)   # (the last: ECT)
    # nothing more to send: the timeout (2000 cycles counted from the first packet's edge)
    assert e.next_wakeup() == 11 + 2000 + 1
    e.on_ack(40, TAck(4904, False, 1))
    assert e.next_wakeup() == 41 and not e.done      # the ACK taken at 40's edge: done
    e.advance(41)
    assert e.done and e.stats.packets == 5


def test_ldcp_rtl_run_is_the_golden_run():
    _same(scenario())


def _rto_one_short(inst, cfg):
    """Plant a bug: the RTO register one cycle short (written through the csr port, as a
    driver would between messages)."""
    regmap = cfg.register_map()
    inst.csr_write(regmap.addr("RTO"), cfg.registers().rto - 1, addr_width=regmap.addr_width)


def test_planted_bug_diverges_and_says_where(monkeypatch):
    monkeypatch.setitem(engines.AFTER_RESET, "ldcp_sender", _rto_one_short)
    golden, glog = golden_run()
    rtl, rlog = run_logged(scenario(), "ldcp", "rtl")
    div = first_divergence(golden, rtl, glog, rlog)
    print(div)
    assert div is not None and rtl != golden
    # first seen in a sender's log: a wake-up (the timeout) one cycle early
    assert div.where == "engine" and div.flow is not None and div.cycle > 0, str(div)
    assert div.field == "wakeup -> at" and div.rtl == div.golden - 1, str(div)


@pytest.mark.skipif(not LONG, reason="CC_LONG=1: delayed ACKs (a second pair of builds)")
def test_delayed_acks_flush_timer():
    _, glog = golden_run(2)
    assert sum(1 for _, _, kind, _ in glog if kind == "poll") > 20     # flush-timer ACKs
    _same(scenario(m=2), m=2)


@pytest.mark.skipif(not LONG, reason="CC_LONG=1: bundled LDCP scenarios (0.9-1 ms of traffic "
                                     "each, a minute or more of CPU with the RTL)")
@pytest.mark.parametrize("name, duration_us", [("default", None), ("ldcp_incast", 900)])
def test_bundled_scenarios(name, duration_us):
    """Bundled scenarios as a user runs them (``python -m sim run <name> --engine rtl``): the
    RTL run's RunResult equals the golden run's, first divergence named otherwise."""
    from sim.rtl.diff import run_both
    from sim.scenario import config

    over = {} if duration_us is None else {"duration_us": duration_us}
    scn = config.load(name, over, ["ldcp"])
    g, r, div = run_both(scn, "ldcp", record=False)
    assert div is None, str(div)
    assert r == g
    assert g.counters["marks"] > 0, g.counters                # the ramp was reached
