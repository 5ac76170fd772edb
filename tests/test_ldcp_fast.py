"""The transaction-level LDCP transport models (:mod:`sim.models.ldcp_transport_fast`) against
the cycle models (:mod:`sim.models.ldcp_transport`): the same random call sequences drive both
and every return value and observable must be equal after every call.

A random channel per flow: per-packet drop, delay with jitter (reordering), CE marking, ACK
loss and delay (bursts of ACKs in one cycle), bogus and duplicate ACKs, NAKs from the
receiver; random message lengths (1 byte .. several BDPs, several messages per sender) and
random IW / m / alpha / beta / gamma / RTT / RTO configurations, including heavy marking (sub-1
windows) and short timeouts (RTO expiries), plus calls at arbitrary cycles (``advance``,
``next_wakeup``, ``release``).  ``CC_SEED`` overrides the seed.  The last test runs the network
simulator with either class and compares the whole RunResult.
"""

from __future__ import annotations

import heapq
import os
import random
from collections import Counter

import pytest

from hw.layouts import LdcpTxStage
from hw.nic.ldcp_transport_config import LdcpTransportConfig
from hw.nic.ldcp_window_config import GAMMAS, ONE, LdcpWindowConfig
from hw.params import ConfigError
from sim.models.ldcp_transport import LdcpReceiverModel, LdcpSenderModel, RxPacket, TAck
from sim.models.ldcp_transport_fast import FastLdcpReceiverModel, FastLdcpSenderModel


def seed(default: int) -> int:
    s = int(os.environ.get("CC_SEED", default))
    print(f"seed {s}")
    return s


def tx_view(s) -> tuple:
    return (s.cycle, s.done, s.active, s.stage, s.cw, s.stats)


def rx_view(r) -> tuple:
    return (r.s, r.delivered, r.malformed, r.duplicates, r.out_of_order, r.next_wakeup())


class Twin:
    """Calls the cycle model and the fast model alike and checks results and observables."""

    def __init__(self, ref, fast, view):
        self.ref, self.fast, self.view = ref, fast, view
        self.calls = 0

    def __call__(self, name: str, *args):
        a = getattr(self.ref, name)(*args)
        b = getattr(self.fast, name)(*args)
        self.calls += 1
        assert a == b, f"{name}{args}: cycle model {a}, fast model {b}"
        va, vb = self.view(self.ref), self.view(self.fast)
        assert va == vb, f"after {name}{args}: cycle model {va}, fast model {vb}"
        return a


def random_config(rng: random.Random) -> LdcpTransportConfig:
    mtu = rng.choice([64, 100, 256, 1000, 1024, 1500])
    gamma = rng.choice(GAMMAS)
    cw_max = rng.choice([1.0, 1.5, 2.0, 4.0, 8.0, 16.0, 40.0])
    w = LdcpWindowConfig(
        alpha=rng.choice([2.0 ** -16, 1 / 16, 0.25, 0.5, 1.0, rng.uniform(0.01, 1.0)]),
        beta=rng.choice([2.0 ** -16, 1 / 8, 0.5, 1.0, rng.uniform(0.01, 1.0)]),
        gamma=gamma, m=rng.choice([1, 1, 2, 3, 8, 32]), cw_max=cw_max,
        cw_init=rng.choice([gamma, 0.5 if cw_max >= 0.5 else gamma, 1.0, cw_max,
                            rng.uniform(gamma, cw_max)]),
        rtt_us=rng.choice([0.004, 0.05, 0.2, 0.4, 1.0, 3.0]), mtu=mtu)
    return LdcpTransportConfig(
        window=w, line_rate_gbps=rng.choice([1.0, 10.0, 100.0, 400.0]),
        iw=rng.choice([None, 1, 2, 3, 5, 16]),
        bdp=rng.choice([None, 1.0, rng.uniform(1.0, cw_max)]),
        rto_us=rng.choice([None, 0.02, 0.2, 0.5, 1.0, 2.0]),
        ack_delay_us=rng.choice([None if w.rtt_us > 0.01 else 0.008, 0.004, 0.1, 0.5]),
        lsn_width=rng.choice([16, 24, 32]))


def run_flows(rng: random.Random, cfg: LdcpTransportConfig, messages: int,
              seen: Counter) -> int:
    """One sender pair and one receiver pair through a random channel for ``messages``
    messages; returns the number of calls and counts what happened in ``seen``."""
    tx = Twin(LdcpSenderModel(cfg), FastLdcpSenderModel(cfg), tx_view)
    rx = Twin(LdcpReceiverModel(cfg), FastLdcpReceiverModel(cfg), rx_view)
    regs = cfg.registers()
    rtt = cfg.window.registers().rtt
    mtu = regs.mtu
    bdp_bytes = max(1, cfg.bdp_packets) * mtu
    drop = rng.choice([0.0, 0.0, 0.02, 0.1, 0.3])
    ce = rng.choice([0.0, 0.1, 0.5, 0.9, 1.0])
    ack_loss = rng.choice([0.0, 0.0, 0.05, 0.3])
    delay = rng.choice([0, 1, 5, rtt // 2, rtt])
    jitter = rng.choice([0, 0, 3, rtt])
    ack_quantum = rng.choice([1, 1, 4, 16])     # > 1: ACKs arrive in bursts
    ser = rng.choice([0, 1, 1, 2, 8])           # cycles between releases
    probe = rng.choice([0.0, 0.05, 0.3])
    heap: list = []
    seq = 0

    pump_at = None                              # the one pending sender wakeup

    def at(cycle, kind, data=None):
        nonlocal seq
        seq += 1
        heapq.heappush(heap, (cycle, seq, kind, data))

    def pump(cycle):
        nonlocal pump_at
        if pump_at is None or not now <= pump_at <= cycle:
            pump_at = cycle
            at(cycle, "pump", cycle)

    now = 0
    for _ in range(messages):
        cap = min(24 * mtu, cfg.max_message)
        length = min(rng.choice([1, rng.randint(1, mtu), mtu, mtu + 1, 3 * bdp_bytes,
                                 rng.randint(1, cap), rng.randint(cap // 2, cap)]), cap)
        tx("start_message", now, length)
        seen["messages"] += 1
        rx.ref.clear()
        rx.fast.clear()
        pump(now)
        limit = now + 400 * rtt + 20 * regs.rto + 10_000
        while heap and not (tx.ref.done and tx.ref._start is None):  # (started and done)
            now, _, kind, data = heapq.heappop(heap)
            if now > limit:
                break
            if kind == "pump" and data is not None and data != pump_at:
                continue                        # superseded by an earlier wakeup
            if kind == "pump":
                if data is not None:
                    pump_at = None
                p = tx("release", now)
                if p is not None:
                    seen["packets"] += 1
                    seen["sub-1 releases"] += tx.ref.cw < ONE and tx.ref.stage == LdcpTxStage.STABLE
                    pump(now + ser)
                    if rng.random() >= drop:
                        at(now + delay + rng.randint(0, jitter),
                           "data", RxPacket(p.lsn, p.length, p.ect and rng.random() < ce,
                                            p.last))
                else:
                    w = tx("next_wakeup")
                    if w is not None:
                        assert w > now
                        pump(w)
            elif kind == "data":
                for a in rx("receive", now, data):
                    if rng.random() >= ack_loss:
                        t = now + delay + rng.randint(0, jitter)
                        at(t + (-t) % ack_quantum, "ack", a)
                w = rx("next_wakeup")
                if w is not None:
                    at(w, "poll")
            elif kind == "poll":
                for a in rx("poll", now):
                    at(now + delay, "ack", a)
            elif kind == "ack":
                tx("on_ack", now, data)
                if rng.random() < 0.005:  # a flood of duplicates (next_wakeup's 64-edge search)
                    for _ in range(rng.randint(30, 90)):
                        tx("on_ack", now, data)
                if rng.random() < 0.02:   # a bogus ACK (beyond snd_max) or a duplicate
                    tx("on_ack", now, TAck(data.lsn + rng.choice([0, mtu, 1 << 15]),
                                           rng.random() < 0.5, rng.randint(0, 40),
                                           rng.random() < 0.2))
                pump(now)
            if rng.random() < probe:
                t = now + rng.choice([0, 1, 2, 7, rtt, regs.rto])
                at(t, rng.choice(["advance", "wakeup", "pump"]))
            if kind == "advance":
                tx("advance", now)
            elif kind == "wakeup":
                tx("next_wakeup")
        late = [(t, a) for t, _, k, a in heap if k == "ack"]
        heap.clear()
        if not (tx.ref.done and tx.ref._start is None):   # out of time: run on, then stop
            tx("advance", now + 2 * regs.rto + 100)
            tx("next_wakeup")
            now = tx.ref.cycle
            if tx.ref.active or tx.ref._start is not None:
                break
        late += [(now + rng.randint(0, 9), TAck(rng.randint(0, length), rng.random() < 0.5,
                                                rng.randint(0, 2), rng.random() < 0.2))
                 for _ in range(rng.choice([0, 0, 1, 3]))]
        for t, a in sorted(late, key=lambda x: x[0])[:3]:
            now = max(now, t)             # ACKs of the finished message (ignored, inactive)
            tx("on_ack", now, a)
            tx("next_wakeup")
            seen["late acks"] += 1
        now += rng.choice([0, 1, 5, 50])
    st = tx.ref.stats
    seen["rtos"] += st.rtos
    seen["naks"] += st.naks
    seen["bad acks"] += st.bad_acks
    seen["exit 1"] += st.exits[1]
    seen["exit 2"] += st.exits[2]
    return tx.calls + rx.calls


def test_fast_equals_cycle_model_random():
    s = seed(20261122)
    rng = random.Random(s)
    seen: Counter = Counter()
    calls = 0
    configs = 200
    for _ in range(configs):
        cfg = random_config(rng)
        for _ in range(3):
            calls += run_flows(random.Random(rng.random()), cfg, rng.choice([1, 1, 2, 4]),
                               seen)
    print(f"{configs} configurations, {calls} calls compared, {dict(seen)}")
    assert seen["messages"] > 1000 and calls > 50_000
    assert min(seen.values()) > 50, "a behaviour the comparison must cover did not happen"


@pytest.mark.parametrize("cw_max", [4.0, 64.0])
def test_ack_floods_around_the_wakeup_search_limit(cw_max):
    """``n`` ACKs queued in one cycle keep the sender busy about ``n`` edges; ``next_wakeup``
    searches through all of them and its answer is the same from every cycle before it (so a
    simulator may ask at any time).  Floods of 44..63 ACKs (around the 64 busy edges after
    which the search once gave up) at every phase of an update in flight, with the window at
    its cap (the last update commits an unchanged window, so the state is quiet right after the
    commit) and below it."""
    w = LdcpWindowConfig(m=1, mtu=256, rtt_us=0.4, cw_max=cw_max, cw_init=min(4.0, cw_max))
    cfg = LdcpTransportConfig(window=w, iw=2, bdp=4.0, rto_us=2.0)
    for n in range(44, 64, 1 if cw_max < 8 else 4):
        for phase in range(13):
            tx = Twin(LdcpSenderModel(cfg), FastLdcpSenderModel(cfg), tx_view)
            tx("start_message", 0, 40 * 256)
            for c in range(3):
                tx("release", c)
            tx("on_ack", 100, TAck(512, False, 1))
            for c in range(101, 140):
                tx("release", c)
            assert tx.ref.s.nxt == 512 + 4 * 256      # stable, window 4 packets, all sent
            tx("on_ack", 200, TAck(512, False, 1))    # duplicates: the window stays full
            for _ in range(n):
                tx("on_ack", 200 + phase, TAck(512, False, 1))
            first = tx("next_wakeup")
            assert first is not None and first > 200 + phase
            for c in range(201 + phase, min(first, 330), 7):
                tx("advance", c)
                assert tx("next_wakeup") == first
            for c in (330, 400):
                tx("advance", c)
                tx("next_wakeup")
                tx("release", c)


def test_receiver_rejects_and_counts_like_cycle_model():
    cfg = LdcpTransportConfig(window=LdcpWindowConfig(m=4, mtu=256, rtt_us=0.4))
    rx = Twin(LdcpReceiverModel(cfg), FastLdcpReceiverModel(cfg), rx_view)
    for c, p in enumerate([RxPacket(0, 0, False, False), RxPacket(0, 257, False, False),
                           RxPacket(cfg.max_message - 10, 20, False, False),
                           RxPacket(0, 256, False, False), RxPacket(512, 256, True, False),
                           RxPacket(512, 256, False, False), RxPacket(0, 256, False, False),
                           RxPacket(256, 256, True, False), RxPacket(512, 256, False, True)]):
        rx("receive", c * 3, p)
    assert rx.ref.malformed == 3 and rx.ref.duplicates == 1 and rx.ref.out_of_order == 2


def test_sender_errors_like_cycle_model():
    cfg = LdcpTransportConfig(window=LdcpWindowConfig(m=1, mtu=256, rtt_us=0.4))
    for cls in (LdcpSenderModel, FastLdcpSenderModel):
        s = cls(cfg)
        with pytest.raises(ConfigError):
            s.start_message(0, 0)
        s.start_message(5, 1000)
        with pytest.raises(RuntimeError):
            s.start_message(6, 1000)
        with pytest.raises(ValueError):
            s.advance(3)


def test_network_run_identical():
    """The simulator's LDCP endpoints give the identical RunResult with either class."""
    from sim.net.engine import PS_PER_US
    from sim.net.network import FlowSpec, Network
    from sim.net.topology import dumbbell

    def run(kind):
        net = Network("ldcp", sample_ps=PS_PER_US)
        net.engine = kind           # the engine implementation (sim.net.engine_api)
        topo = dumbbell(net, 3)
        rxh = topo.groups["receivers"][0]
        for i, src in enumerate(topo.groups["senders"]):
            net.add_flow(FlowSpec(i, src, rxh, size_bytes=None if i else 200_000))
        net.run(100 * PS_PER_US)
        return net

    results = []
    for kind, sender, receiver in (("golden", LdcpSenderModel, LdcpReceiverModel),
                                   ("fast", FastLdcpSenderModel, FastLdcpReceiverModel)):
        net = run(kind)
        tx, rx = net.sender(0).model, net.receiver(0).model
        assert isinstance(tx, sender) and isinstance(rx, receiver)
        fast = kind == "fast"
        assert isinstance(tx, FastLdcpSenderModel) == fast
        assert isinstance(rx, FastLdcpReceiverModel) == fast
        results.append(net.result())
    print(results[0].events, results[0].flows, results[0].counters)
    assert results[0].events > 1000
    assert results[0] == results[1]
