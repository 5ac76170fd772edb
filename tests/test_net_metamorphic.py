"""Metamorphic properties of the simulator, for every algorithm: a run must not depend on
things the modelled hardware would not see.

* **Spurious wake-ups.**  Every sender (and the LDCP receiver's delayed-ACK timer) is woken
  at hundreds of random times on top of its own schedule.  A wake-up that is not due must
  change nothing: the ``RunResult`` is identical (every flow record, counter and series; the
  event count larger by exactly the number of injected wake-ups).
* **A timer that never fires.**  The retransmission timeout set to two values, neither of which
  fires in the run (``timeouts == 0``): identical ``RunResult``, events included.

The scenario: a 100 Gb/s dumbbell, three long flows and, at 100 us, an incast of short flows
into the same receiver, so that the marker marks (and LDCP's fast start drops at K), windows go
below one packet and the pacing timers run.  For LDCP, TIMELY and Swift the incast is larger
(37 senders): LDCP's fast start then loses packets at K and some windows go below one packet
(the sub-1 timer runs, and the senders' measured time below one packet must not move either);
the delay-based senders, which the switches do not mark, overflow the queue (NAKs, go-back-N),
and Swift's delay targets are low enough that its windows go below one packet (its pacer).
"""

from __future__ import annotations

import dataclasses
import os
import random

import pytest

from sim.net.algorithms import DcqcnParams, DctcpParams, LdcpParams, QcnParams
from sim.net.engine import PS_PER_US
from sim.net.network import FlowSpec, Network, PfcConfig, SwitchConfig
from sim.net.swift import SwiftParams
from sim.net.timely import TimelyParams
from sim.net.topology import dumbbell


def seed(default: int) -> int:
    s = int(os.environ.get("CC_SEED", default))
    print(f"seed {s}")
    return s

DURATION = 400 * PS_PER_US
#: the sender's wake-up handler (what its own alarms call)
WAKE = {"ldcp": "_pump", "dctcp": "_pump", "dcqcn": "_release", "qcn": "_release",
        "timely": "_release", "swift": "_pump"}
#: (params with a timeout, the same with another timeout); neither fires in the run
TIMERS = {
    "ldcp": (LdcpParams(rto_ns=200_000), LdcpParams(rto_ns=400_000)),
    "dctcp": (DctcpParams(rto_ns=1_000_000), DctcpParams(rto_ns=300_000)),
    "dcqcn": (DcqcnParams(profile="hpcc-mlx", rto_ns=1_000_000),
              DcqcnParams(profile="hpcc-mlx", rto_ns=300_000)),
    "qcn": (QcnParams(rto_ns=1_000_000), QcnParams(rto_ns=300_000)),
    "timely": (TimelyParams(rto_ns=1_000_000), TimelyParams(rto_ns=300_000)),
    # (delay targets low enough for the incast to take windows below one packet: the pacer)
    "swift": (SwiftParams(base_target_us=2.0, fs_range_us=2.0, rto_ns=1_000_000),
              SwiftParams(base_target_us=2.0, fs_range_us=2.0, rto_ns=300_000)),
}
#: (senders, switch queue limit in bytes) where the default (12, 2 MB) exercises too little:
#: the delay-based senders do not mark; 37 incast senders overflow the queue (NAK, go back N);
#: LDCP's take a few windows below one packet (the sub-1 timer, the measured time below one)
SETUP = {"timely": (40, 2_000_000), "swift": (40, 100_000), "ldcp": (40, 2_000_000)}


def exercised(algorithm: str, res) -> bool:
    """The run went through the algorithm's reaction to congestion (marks, CNMs; losses and
    go-back-N for the delay-based senders; Swift's sub-one pacer)."""
    c = res.counters
    if algorithm == "timely":
        return c["retransmitted_packets"] > 0
    if algorithm in ("swift", "ldcp"):
        return c["retransmitted_packets"] > 0 and c["flows_below_one_packet"] > 0 and \
            (algorithm == "swift" or c["marks"] > 0)
    return c["marks"] + c["cnms"] > 0


def run(algorithm: str, params, inject_seed: int | None = None):
    pfc = PfcConfig(enabled=algorithm in ("dcqcn", "qcn"))
    senders, queue = SETUP.get(algorithm, (12, 2_000_000))
    net = Network(algorithm, params, SwitchConfig(queue_bytes=queue, pfc=pfc),
                  sample_ps=2 * PS_PER_US)
    topo = dumbbell(net, senders=senders, rate_bps=100 * 10**9, delay_ps=PS_PER_US)
    rx = topo.groups["receivers"][0]
    for i, src in enumerate(topo.groups["senders"]):
        if i < 3:
            net.add_flow(FlowSpec(i, src, rx, None, start_ps=i * 10 * PS_PER_US, track=True))
        else:
            net.add_flow(FlowSpec(i, src, rx, 24_000 + 1000 * i, start_ps=100 * PS_PER_US,
                                  tag="incast", track=i == 3))
    injected = 0
    if inject_seed is not None:
        rng = random.Random(inject_seed)
        for f in net.flows:
            targets = [getattr(net.sender(f.flow_id), WAKE[algorithm])]
            if algorithm == "ldcp":
                targets.append(net.receiver(f.flow_id)._poll)
            for fn in targets:
                for _ in range(150):
                    # (not on a nanosecond: the models' own wake-ups are on clock edges, and an
                    # injected one at the same picosecond would take their place in the order)
                    t = rng.randrange(DURATION // 1000) * 1000 + rng.randrange(1, 1000)
                    net.sim.at(t, fn)
                    injected += 1
    net.run(DURATION)
    return net.result(), injected, measured(net)


def measured(net) -> dict:
    """The senders' per-flow measurements (LDCP: time below one packet, fast start), which
    must not depend on wake-ups either."""
    return {f.flow_id: net.sender(f.flow_id).measured() for f in net.flows
            if hasattr(net.sender(f.flow_id), "measured")}


@pytest.mark.parametrize("algorithm", sorted(WAKE))
def test_spurious_wakeups_change_nothing(algorithm):
    s = seed(20261125)
    params = TIMERS[algorithm][0]
    base, _, base_m = run(algorithm, params)
    assert exercised(algorithm, base), base.counters
    assert sum(f.finish_ps is not None for f in base.flows) >= 5
    woken, n, woken_m = run(algorithm, params, inject_seed=s)
    assert n > 1000
    assert woken.events == base.events + n, (woken.events - base.events, n)
    assert dataclasses.replace(woken, events=base.events) == base
    assert woken_m == base_m


@pytest.mark.parametrize("algorithm", sorted(TIMERS))
def test_a_timer_that_never_fires_changes_nothing(algorithm):
    a, _, a_m = run(algorithm, TIMERS[algorithm][0])
    b, _, b_m = run(algorithm, TIMERS[algorithm][1])
    assert a.counters["timeouts"] == 0 and b.counters["timeouts"] == 0
    assert a == without_rto(b, a)
    assert a_m == b_m


def without_rto(res, like):
    """``res`` with the timeout its flows report (LDCP's settings) replaced by ``like``'s."""
    flows = [dataclasses.replace(f, settings={**f.settings, "rto_us": g.settings["rto_us"]})
             if "rto_us" in f.settings else f for f, g in zip(res.flows, like.flows, strict=True)]
    return dataclasses.replace(res, flows=flows)
