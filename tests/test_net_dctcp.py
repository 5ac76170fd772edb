"""Reproduction 1 (DCTCP paper §3.3): N synchronized long flows through a step-marking switch
give a queue sawtooth with maximum K + N, amplitude A = 1/2 sqrt(2N(C RTT + K)) and period
T = 1/2 sqrt(2(C RTT + K)/N) RTTs.  The switch is the marker's bit-exact model, the hosts the
DCTCP golden model; 10 Gb/s, 1500-byte packets, 100 us base RTT, K = 65 packets (the paper's
10 Gb/s setting), N = 10, 30 ms simulated: the bundled scenario ``dctcp_sawtooth``.

Then the transport in the network (issue #15): the delayed-ACK timer, NewReno's fast
retransmit, the RFC 6298 timer's sample and backoff with times worked by hand, the new timers
under spurious wake-ups, and the knobs from a scenario (with their errors)."""

import dataclasses
import random

import pytest

from hw.params import ConfigError
from sim.net.algorithms import DctcpParams
from sim.net.analysis import DctcpAnalysis, sawtooth
from sim.net.engine import PS_PER_S, PS_PER_US
from sim.net.network import FlowSpec, Network, SwitchConfig
from sim.net.topology import dumbbell
from sim.scenario import load
from sim.scenario.fields import ScenarioError
from sim.scenario.runner import run

RATE, RTT_US, K, MTU, N = 10_000_000_000, 100, 65, 1500, 10


def dctcp_run(overrides=None):
    return run(load("dctcp_sawtooth", overrides), "dctcp").result


def test_dctcp_sawtooth_matches_the_analysis():
    r = dctcp_run()
    scn = load("dctcp_sawtooth")
    assert (scn.topology.senders, scn.topology.rate_bps, scn.switch.mtu) == (N, RATE, MTU)
    assert scn.params["dctcp"].k_bytes == K * MTU and scn.topology.delay_ps * 4 == RTT_US * 10**6
    queue = [b / MTU for b in next(iter(r.queue_series.values()))]
    s = sawtooth(queue[len(queue) // 3:], debounce=20)        # after 10 ms of start-up
    bdp = RATE * RTT_US * 1e-6 / 8 / MTU                        # 83.3 packets
    a = DctcpAnalysis(N, bdp, K)
    # No loss and full throughput: K = 65 > C x RTT / 7 (the paper's guideline).
    assert r.counters["drops_buffer"] == r.counters["drops_not_ect_at_k"] == 0
    delivered = sum(f.delivered_bytes for f in r.flows)
    assert delivered * 8 * PS_PER_S / (RATE * r.duration_ps) >= 0.97       # utilization
    assert r.counters["marks"] > 0
    # Q_max = K + N: each flow adds about one packet in the RTT before its marks arrive. The
    # simulated queue also counts the packet being serialized, and flows are not perfectly
    # synchronized: allow 3 packets either way.
    assert abs(s.q_max - a.q_max) <= 3, (s.q_max, a.q_max)
    # Amplitude: the analysis approximates the window cut by alpha/2 with alpha ~ sqrt(2/W*);
    # 25 % covers that approximation (measured 29 vs 27.2 packets).
    assert abs(s.amplitude - a.amplitude) <= 0.25 * a.amplitude, (s.amplitude, a.amplitude)
    # Period in RTTs, where an RTT includes the mean queueing delay (the analysis works on
    # windows, which span the whole RTT).  Desynchronization shortens the period against the
    # synchronized model: allow 30 % (measured 2.13 vs 2.72 RTTs).
    rtt_eff_us = RTT_US + s.mean * MTU * 8 / RATE * 1e6
    assert r.sample_ps == 10**6                                 # one sample per microsecond
    period_rtts = s.period_samples * 1.0 / rtt_eff_us
    assert abs(period_rtts - a.period_rtts) <= 0.30 * a.period_rtts, (period_rtts, a.period_rtts)


def test_simulation_is_deterministic():
    short = {"duration_us": 2000, "topology.senders": 3}
    a, b = dctcp_run(short), dctcp_run(short)
    assert a.queue_series == b.queue_series and a.flows == b.flows and a.events == b.events


# --------------------------------------------------------------------------------------------
# The transport in the network (issue #15): delayed-ACK timer, NewReno, RFC 6298 timer, knobs.
# The rules' known answers are in tests/test_dctcp_transport.py.
# --------------------------------------------------------------------------------------------

LEGACY = dict(recovery="gobackn", rto_mode="fixed", rto_backoff=False, cwr_freeze=False)


def lone_packet_run(delack_ns: int):
    """One long flow, three packets (init_cwnd 3) and then no more (it stops before the first
    ACK), ACK every 2: packet 1 is acknowledged with packet 0, packet 2 waits alone."""
    net = Network("dctcp", DctcpParams(init_cwnd=3, ack_every=2, delack_ns=delack_ns),
                  SwitchConfig(), sample_ps=PS_PER_US)
    topo = dumbbell(net, senders=1, rate_bps=10 * 10**9, delay_ps=PS_PER_US)
    src, dst = topo.groups["senders"][0], topo.groups["receivers"][0]
    net.add_flow(FlowSpec(0, src, dst, None, start_ps=0, stop_ps=PS_PER_US))
    rx = net.receiver(0)
    arrivals, acks = [], []
    on_data, send = rx.on_data, rx.host.nic.send

    def logged_data(pkt):
        arrivals.append((net.sim.now, pkt.seq))
        on_data(pkt)

    def logged_send(pkt):
        acks.append((net.sim.now, pkt.seq))
        send(pkt)
    rx.on_data, rx.host.nic.send = logged_data, logged_send
    net.run(3000 * PS_PER_US)
    return net, arrivals, acks


@pytest.mark.parametrize("delack_us", [40, 7])
def test_delayed_ack_timer_acknowledges_a_lone_packet(delack_us):
    """The known answer: the lone packet's ACK leaves exactly ``delack`` after it arrived (it
    was the first packet of the pending ACK); without the timer it waited for the sender's
    timeout (1 ms) and came back as a duplicate."""
    net, arrivals, acks = lone_packet_run(delack_us * 1000)
    assert [s for _, s in arrivals] == [0, 1, 2]
    assert acks == [(arrivals[1][0], 2), (arrivals[2][0] + delack_us * PS_PER_US, 3)]
    r = net.result()
    assert r.counters["timeouts"] == 0 and r.counters["retransmitted_packets"] == 0
    # the one RTT sample (packet 0, timed at 0, acknowledged by ACK 2): 1000-byte packets at
    # 10 Gb/s take 0.8 us per hop, links 1 us.  Packet 1 leaves the host at 0.8-1.6 us, reaches
    # the switch at 2.6, leaves it at 2.6-3.4 (after packet 0), reaches the receiver at 4.4;
    # ACK 2 (64 B, 51.2 ns per hop) is back at 4.4 + 2 x 1.0512 = 6.5024 us.
    rto = net.sender(0).rto
    assert (rto.samples, rto.srtt, rto.rttvar, rto.rto) == (1, 6_502_400, 3_251_200,
                                                             1_000_000_000)


@pytest.mark.parametrize("backoff, max_rto_ms, expect_ms", [
    (True, 60_000, [1, 3, 7]),            # RTO 1, 2, 4 ms
    (True, 2, [1, 3, 5, 7]),              # 1, 2, 2, 2 (the maximum)
    (False, 60_000, [1, 2, 3, 4, 5, 6, 7]),
])
def test_timeouts_back_off_exponentially(backoff, max_rto_ms, expect_ms):
    """A receiver that loses everything: the first packet goes out at 0 with no RTT sample
    (RTO = the initial 1 ms), and is sent again at each expiry."""
    params = DctcpParams(rto_backoff=backoff, max_rto_ns=max_rto_ms * 10**6)
    net = Network("dctcp", params, SwitchConfig(), sample_ps=PS_PER_US)
    topo = dumbbell(net, senders=1, rate_bps=10 * 10**9, delay_ps=PS_PER_US)
    net.add_flow(FlowSpec(0, topo.groups["senders"][0], topo.groups["receivers"][0], 50_000))
    net.receiver(0).on_data = lambda pkt: None
    tx = net.sender(0)
    sent, send = [], tx.host.nic.send

    def logged(pkt):
        sent.append((net.sim.now, pkt.seq))
        send(pkt)
    tx.host.nic.send = logged
    net.run(7_500 * PS_PER_US)
    assert sent[:10] == [(0, s) for s in range(10)]            # the initial window
    assert sent[10:] == [(ms * 10**9, 0) for ms in expect_ms]   # the loss window: packet 0
    assert net.result().counters["timeouts"] == len(expect_ms)


def test_fast_retransmit_in_the_network_and_karn():
    """A 10-packet message whose packet 0 is lost once: packets 1, 2, 3 each bring a duplicate
    ACK; the third starts fast retransmit.  Times by hand (1000 B at 10 Gb/s: 0.8 us per hop,
    1 us links, 64-byte ACKs 51.2 ns): packet k reaches the receiver at 0.8 (k + 2) + 2 us,
    packet 3 at 6.0 us, its duplicate ACK is at the sender at 6.0 + 2 x 1.0512 = 8.1024 us,
    and packet 0 goes again at once.  Its ACK (10, everything) gives no RTT sample: the timed
    packet (0) was retransmitted (Karn).  The receiver kept packets 1..9 (out of order)."""
    net = Network("dctcp", DctcpParams(**NEWRENO), SwitchConfig(), sample_ps=PS_PER_US)
    topo = dumbbell(net, senders=1, rate_bps=10 * 10**9, delay_ps=PS_PER_US)
    net.add_flow(FlowSpec(0, topo.groups["senders"][0], topo.groups["receivers"][0], 10_000))
    rx, tx = net.receiver(0), net.sender(0)
    on_data, lost = rx.on_data, []

    def lossy_link(pkt):
        if pkt.seq == 0 and not lost:
            lost.append(net.sim.now)
            return
        on_data(pkt)
    rx.on_data = lossy_link
    sent, send = [], tx.host.nic.send

    def logged(pkt):
        sent.append((net.sim.now, pkt.seq, pkt.retx))
        send(pkt)
    tx.host.nic.send = logged
    net.run(100 * PS_PER_US)
    assert sent[10:] == [(8_102_400, 0, True)]
    assert tx.measured() == {"fast_retransmits": 1, "timeouts": 0}
    # the retransmission reaches the switch at 8.1024 + 1.8 = 9.9024 us (the port is free:
    # packet 9 left it at 0.8 x 11 + 1 = 9.8), the receiver at 11.7024 us, and with the 9
    # packets it kept the message is complete then
    assert rx.done_ps == 11_702_400 and rx.delivered_bytes == 10_000 and tx.finished
    assert (tx.rto.samples, tx.rto.srtt) == (0, None)
    assert (tx.engine.cwnd, tx.engine.ssthresh) == (5, 5)     # 10 / 2 after the full ACK


def lossy(params: DctcpParams, inject_seed: int | None = None, duration_us: int = 600):
    """12 senders into one 100 Gb/s port with a 100 KB queue: three long flows, then an incast
    of nine short ones at 100 us.  The queue overflows: fast retransmits and timeouts."""
    net = Network("dctcp", params, SwitchConfig(queue_bytes=100_000), sample_ps=2 * PS_PER_US)
    topo = dumbbell(net, senders=12, rate_bps=100 * 10**9, delay_ps=PS_PER_US)
    rx = topo.groups["receivers"][0]
    for i, src in enumerate(topo.groups["senders"]):
        if i < 3:
            net.add_flow(FlowSpec(i, src, rx, None, start_ps=i * 10 * PS_PER_US, track=True))
        else:
            net.add_flow(FlowSpec(i, src, rx, 24_000 + 1000 * i, start_ps=100 * PS_PER_US,
                                  tag="incast"))
    injected = 0
    if inject_seed is not None:
        rng = random.Random(inject_seed)
        for f in net.flows:
            tx, rcv = net.sender(f.flow_id), net.receiver(f.flow_id)
            for fn in (tx._pump, tx._rto_wake, rcv._delack):
                for _ in range(100):
                    t = rng.randrange(duration_us * 1000) * 1000 + rng.randrange(1, 1000)
                    net.sim.at(t, fn)
                    # (a timer check that finds nothing due is not an event; the pump is)
                    injected += fn == tx._pump
    net.run(duration_us * PS_PER_US)
    measured = {f.flow_id: net.sender(f.flow_id).measured() for f in net.flows}
    return net.result(), injected, measured


FAST_RTO = dict(rto_ns=100_000, min_rto_ns=100_000)
NEWRENO = dict(recovery="newreno")


def test_newreno_recovers_losses_by_fast_retransmit():
    """Under the same losses, NewReno recovers most of them by fast retransmit and finishes
    every incast flow; go-back-N waits for timeouts for each loss."""
    new, _, m = lossy(DctcpParams(**FAST_RTO, **NEWRENO))
    old, _, m_old = lossy(DctcpParams(**FAST_RTO, **LEGACY))
    assert new.counters["drops_buffer"] > 0 and old.counters["drops_buffer"] > 0
    fast = sum(x["fast_retransmits"] for x in m.values())
    assert fast >= 5 and sum(x["fast_retransmits"] for x in m_old.values()) == 0
    assert sum(x["timeouts"] for x in m.values()) == new.counters["timeouts"]
    assert new.counters["timeouts"] < old.counters["timeouts"]
    assert all(f.finish_ps is not None for f in new.flows if f.size_bytes)


def test_spurious_wakeups_change_nothing_with_the_new_timers():
    """tests/test_net_metamorphic.py for the transport's timers: ACK every 2 (the delayed-ACK
    timer runs), losses (fast retransmits, timeouts with backoff); hundreds of wake-ups of each
    sender's pump and timeout check and each receiver's delayed-ACK timer change nothing."""
    params = DctcpParams(ack_every=2, cwr_freeze=True, **FAST_RTO, **NEWRENO)
    base, _, base_m = lossy(params)
    assert base.counters["timeouts"] > 0 and base.counters["marks"] > 0
    assert sum(x["fast_retransmits"] for x in base_m.values()) > 0
    woken, n, woken_m = lossy(params, inject_seed=20261125)
    assert n == 1200                    # and as many wake-ups of each timer
    assert woken.events == base.events + n, (woken.events - base.events, n)
    assert dataclasses.replace(woken, events=base.events) == base
    assert woken_m == base_m


def test_a_minimum_rto_that_never_fires_changes_nothing():
    """Without losses (the default 2 MB queue), two minimum RTOs (and initial RTOs) give the
    identical run: the RFC 6298 timer's checks are not events."""
    def run(**kw):
        net = Network("dctcp", DctcpParams(ack_every=2, **kw), SwitchConfig(),
                      sample_ps=2 * PS_PER_US)
        topo = dumbbell(net, senders=6, rate_bps=100 * 10**9, delay_ps=PS_PER_US)
        for i, src in enumerate(topo.groups["senders"]):
            net.add_flow(FlowSpec(i, src, topo.groups["receivers"][0],
                                  None if i < 2 else 40_000, start_ps=i * 20 * PS_PER_US))
        net.run(300 * PS_PER_US)
        return net.result()
    a = run(min_rto_ns=1_000_000, rto_ns=1_000_000)
    b = run(min_rto_ns=50_000, rto_ns=80_000)
    assert a.counters["timeouts"] == b.counters["timeouts"] == 0 and a.counters["marks"] > 0
    assert a == b


def test_legacy_settings_keep_the_earlier_sawtooth():
    """The earlier model (go-back-N, fixed RTO without backoff, growth through the reduction
    round) stays reachable, and on the lossless sawtooth the defaults give the same run
    (docs/results.md: 229,812 events over 30 ms; here 2 ms, 3 senders)."""
    short = {"duration_us": 2000, "topology.senders": 3}
    a = dctcp_run(short)
    b = dctcp_run({**short, **{f"algo.dctcp.{k}": v for k, v in LEGACY.items()}})
    assert a == b


def test_transport_knobs_are_reachable_from_a_scenario():
    scn = load("dctcp_sawtooth", {"algo.dctcp.min_rto_ms": 5, "algo.dctcp.delack_us": 25,
                                  "algo.dctcp.max_rto_ms": 500, "algo.dctcp.rto_backoff": False,
                                  "algo.dctcp.recovery": "gobackn", "algo.dctcp.cwr_freeze": True,
                                  "algo.dctcp.rto_mode": "fixed", "algo.dctcp.rto_ms": 2})
    p = scn.params["dctcp"]
    assert (p.min_rto_ns, p.delack_ns, p.max_rto_ns, p.rto_ns) == (5_000_000, 25_000,
                                                                   500_000_000, 2_000_000)
    assert (p.rto_backoff, p.recovery, p.cwr_freeze, p.rto_mode) == (False, "gobackn", True,
                                                                     "fixed")
    # the knob moves the run: with go-back-N recovery every loss waits for a timeout; a 20 us
    # minimum (and initial) RTO instead of 1 ms recovers the lossy incast within the 600 us run
    fast = lossy(DctcpParams(min_rto_ns=20_000, rto_ns=20_000, recovery="gobackn"))[0]
    slow = lossy(DctcpParams(recovery="gobackn"))[0]
    assert fast.counters["timeouts"] > 0 == slow.counters["timeouts"]
    incast = [f for f in fast.flows if f.size_bytes]
    assert all(f.finish_ps is not None for f in incast)
    assert all(f.finish_ps is None for f in slow.flows if f.size_bytes)


@pytest.mark.parametrize("key, value, expect", [
    ("min_rto_us", -1, "algo.dctcp.min_rto_us = -1: DctcpParams.min_rto_ns = -1000"),
    ("max_rto_us", 500, "algo.dctcp.max_rto_us = 500: DctcpParams.max_rto_ns = 500000"),
    ("delack_us", 0, "algo.dctcp.delack_us = 0: DctcpParams.delack_ns = 0"),
    ("recovery", "sack", "algo.dctcp.recovery = 'sack': DctcpParams.recovery = 'sack'"),
    ("rto_mode", "linux", "algo.dctcp.rto_mode = 'linux'"),
    ("cwr_freeze", 1, "algo.dctcp.cwr_freeze = 1: expected true or false"),
])
def test_bad_transport_settings_are_one_clear_error(key, value, expect):
    with pytest.raises(ScenarioError) as e:
        load("dctcp_sawtooth", {f"algo.dctcp.{key}": value})
    assert expect in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_bad_transport_params():
    with pytest.raises(ConfigError, match=r"DctcpParams\.min_rto_ns = -5 is out of range"):
        DctcpParams(min_rto_ns=-5)
    with pytest.raises(ConfigError, match=r"DctcpParams\.rto_ns = 2000000 .*max_rto_ns"):
        DctcpParams(rto_ns=2_000_000, max_rto_ns=1_500_000)
    with pytest.raises(ConfigError, match=r"DctcpParams\.rto_backoff = 1"):
        DctcpParams(rto_backoff=1)


def test_bad_min_rto_from_the_command_line_is_one_line(tmp_path, capsys):
    from sim.__main__ import main
    assert main(["run", "dctcp_sawtooth", "--out", str(tmp_path), "--param",
                 "algo.dctcp.min_rto_us=-1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "algo.dctcp.min_rto_us = -1" in err and "min_rto_ns" in err, err
