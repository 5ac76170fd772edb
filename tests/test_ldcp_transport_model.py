"""LDCP transport golden models: configuration, receiver rules, directed fast-start / loss /
timeout scenarios through a channel, the event-level interface against the cycle-level one, and
seeded random runs with drops, marks and back-pressure in which nothing may be lost.

Expected values are written from the draft's rules (docs/ldcp-transport.md), not computed by the
models.  ``CC_SEED`` overrides the random seeds; ``CC_LDCP_LONG=1`` runs a longer random run.
"""

from __future__ import annotations

import os
import random

import pytest

from hw.layouts import LdcpTxLoad, LdcpTxStage
from hw.nic.ldcp_transport_config import LdcpTransportConfig, LdcpTransportReg
from hw.nic.ldcp_window_config import ONE, LdcpWindowConfig
from hw.params import ConfigError
from sim.models.ldcp_loop import Channel, ChannelConfig, Loop
from sim.models.ldcp_transport import (
    LdcpReceiverCycleModel,
    LdcpReceiverModel,
    LdcpSenderModel,
    RxPacket,
    RxState,
    TAck,
    rx_core,
)
from sim.models.ldcp_window import LdcpWindowModel

MTU = 256
#: 100 Gb/s, 0.4 us base RTT, 256-byte packets: BDP = ceil(19.53) = 20 packets; 100 cycles at
#: an explicit 250 MHz clock (the cycle counts below are written for it)
WIN = LdcpWindowConfig(alpha=1.0, beta=0.5, gamma=1 / 8, m=1, cw_max=64.0, cw_init=4.0,
                       rtt_us=0.4, clk_hz=250_000_000, mtu=MTU)
CFG = LdcpTransportConfig(window=WIN, line_rate_gbps=100.0)
IW = 20
DELAY = 40       # one way, cycles


def seed(default: int) -> int:
    s = int(os.environ.get("CC_SEED", default))
    print(f"seed {s}")
    return s


PLAIN = ChannelConfig(delay=DELAY)


def make_loop(cfg=CFG, data_drop=None, ack_drop=None, data=PLAIN, acks=PLAIN, rng=None, **kw):
    rng = rng or random.Random(1)
    return Loop(LdcpSenderModel(cfg), LdcpReceiverCycleModel(cfg),
                Channel(data, random.Random(rng.random()), data_drop),
                Channel(acks, random.Random(rng.random()), ack_drop), rng, **kw)


def check_delivered(loop: Loop, length: int) -> None:
    """Every byte exactly once and in order."""
    at = 0
    for d in loop.delivered:
        assert d.lsn == at, f"delivered {d} out of order, expected lsn {at}"
        at += d.length
    assert at == length, f"delivered {at} bytes of {length}"
    assert loop.delivered[-1].last


def released(loop):
    return [p for _, p in loop.released]


# ------------------------------------------------------------------------------ config -------
def test_config_defaults_and_bdp():
    r = CFG.registers()
    assert (r.iw, r.iw_bytes, r.cw_bdp, r.rto) == (20, 20 * MTU, 20 * ONE, 800)
    # 100 Gb/s x 10 us / (8 x 1024 B) = 122.07 -> 123 packets
    big = LdcpTransportConfig()
    assert big.bdp_packets == 123 and big.registers().iw == 123
    # the default clock, 156.25 MHz: RTO 8 x 10 us = 12500 cycles, ACK delay 2.5 us = 390.625
    assert big.registers().rto == 12_500 and big.registers().ack_delay == 391
    assert LdcpTransportConfig.from_json(CFG.to_json()) == CFG


@pytest.mark.parametrize("field,value", [
    ("iw", 0), ("iw", 1 << 16), ("lsn_width", 7), ("lsn_width", 49), ("rto_us", 0.0),
    ("rto_us", 1e8), ("ack_delay_us", 1e6), ("line_rate_gbps", 0.0), ("bdp", 65.0),
    ("bdp", 0.5), ("window", 3)])
def test_config_rejects(field, value):
    with pytest.raises(ConfigError, match=field):
        CFG.replace(**{field: value})


def test_config_iw_must_fit_lsn():
    with pytest.raises(ConfigError, match="iw"):
        CFG.replace(lsn_width=8, iw=2)          # 2 x 256 > 255


def test_message_length_limits():
    s = LdcpSenderModel(CFG.replace(lsn_width=16))
    for bad in (0, 1 << 16, -1):
        with pytest.raises(ConfigError, match="length"):
            s.start_message(0, bad)
    s.start_message(0, (1 << 16) - 1)


# ------------------------------------------------------------------------------ receiver -----
def rx(lsn, length=MTU, ce=False, last=False):
    return RxPacket(lsn, length, ce, last)


def test_rx_in_order_gap_duplicate_malformed():
    cfg = CFG
    s = RxState()
    s, a, d, bad = rx_core(cfg, s, rx(0))
    assert a == [TAck(256, False, 1)] and d.lsn == 0 and not bad
    s, a, d, _ = rx_core(cfg, s, rx(512))                 # gap: one NAK at the expected LSN
    assert a == [TAck(256, False, 0, True)] and d is None and s.nak_sent
    s, a, d, _ = rx_core(cfg, s, rx(768))                 # still the same gap: silent
    assert a == [] and d is None
    s, a, d, _ = rx_core(cfg, s, rx(0))                   # duplicate: dup ACK, n = 0
    assert a == [TAck(256, False, 0)] and d is None
    s, a, d, _ = rx_core(cfg, s, rx(256, ce=True))        # in order again, CE echoed
    assert a == [TAck(512, True, 1)] and not s.nak_sent
    for p in (rx(512, 0), rx(512, MTU + 1), rx((1 << 32) - 100, 200)):
        s2, a, d, bad = rx_core(cfg, s, p)
        assert bad and a == [] and s2 == s


def test_rx_delayed_ack_and_ce_flush():
    cfg = CFG.replace(window=WIN.replace(m=4))
    s = RxState()
    acks = []
    for i in range(6):
        s, a, _, _ = rx_core(cfg, s, rx(i * MTU))
        acks += a
    assert acks == [TAck(4 * MTU, False, 4)] and s.pending == 2
    s, a, _, _ = rx_core(cfg, s, rx(6 * MTU, ce=True))    # flush 2, then the ECE ACK
    assert a == [TAck(6 * MTU, False, 2), TAck(7 * MTU, True, 1)] and s.pending == 0
    s, a, _, _ = rx_core(cfg, s, rx(7 * MTU))
    s, a, _, _ = rx_core(cfg, s, rx(8 * MTU, length=10, last=True))  # last: flush at once
    assert a == [TAck(8 * MTU + 10, False, 2)]
    s, a, _, _ = rx_core(cfg, s, rx(9 * MTU))             # a gap with pending 0
    assert a == [TAck(8 * MTU + 10, False, 0, True)]


def test_rx_flush_timer_cycle_and_event_agree():
    cfg = CFG.replace(window=WIN.replace(m=8), ack_delay_us=0.04)   # 10 cycles
    d = cfg.registers().ack_delay
    assert d == 10
    cyc, ev = LdcpReceiverCycleModel(cfg), LdcpReceiverModel(cfg)
    arrivals = {3: rx(0), 6: rx(MTU), 40: rx(2 * MTU), 41: rx(3 * MTU, ce=True)}
    got_c, got_e = [], []
    for c in range(80):
        p = arrivals.get(c)
        o = cyc.outputs(True)
        if o.ack:
            got_c.append((c, o.ack))
        if p is None:
            got_e += [(c, a) for a in ev.poll(c)]
        else:
            got_e += [(c, a) for a in ev.receive(c, p)]
        assert cyc.edge(p, True) == (p is not None)
    # the first packet (cycle 3) is flushed at cycle 3 + 1 + d, visible one cycle later
    assert got_c[0] == (3 + 1 + d + 1, TAck(2 * MTU, False, 2))
    assert got_e[0] == (3 + 1 + d, TAck(2 * MTU, False, 2))
    assert [a for _, a in got_c] == [a for _, a in got_e] == [
        TAck(2 * MTU, False, 2), TAck(3 * MTU, False, 1), TAck(4 * MTU, True, 1)]
    assert ev.next_wakeup() is None and ev.s.pending == 0


def test_rx_cycle_back_pressure_and_second_ack():
    cfg = CFG.replace(window=WIN.replace(m=4))
    r = LdcpReceiverCycleModel(cfg)
    r.edge(rx(0), True)
    assert r.edge(rx(MTU, ce=True), True)
    o = r.outputs(False)
    assert o.ack == TAck(MTU, False, 1) and not o.data_ready      # held second ACK
    assert not r.edge(rx(2 * MTU), False)
    assert r.outputs(True).ack == TAck(MTU, False, 1)
    r.edge(rx(2 * MTU), True)                                      # not taken: hold busy
    o = r.outputs(True)
    assert o.ack == TAck(2 * MTU, True, 1) and o.data_ready
    r.edge(None, True, clear=True)
    assert r.s == RxState() and r.outputs(True).ack is None


# ------------------------------------------------------------------------------ directed -----
def test_message_shorter_than_iw():
    loop = make_loop()
    length = 5 * MTU + 7                      # 6 packets < IW
    loop.run_message(length, 2000)
    pk = released(loop)
    assert [p.ect for p in pk] == [False] * 5 + [True]        # the last one is ECN-capable
    assert [p.length for p in pk] == [MTU] * 5 + [7] and pk[-1].last
    assert [c for c, _ in loop.released] == list(range(1, 7))  # back to back (line rate)
    assert loop.tx.stats.exits == {1: 0, 2: 0} and loop.tx.s.stage == LdcpTxStage.FAST
    check_delivered(loop, length)


def test_exactly_iw():
    loop = make_loop()
    loop.run_message(IW * MTU, 2000)
    pk = released(loop)
    assert len(pk) == IW and [p.ect for p in pk] == [False] * (IW - 1) + [True]
    assert loop.tx.stats.exits == {1: 0, 2: 1} and loop.tx.stats.retransmissions == 0
    check_delivered(loop, IW * MTU)


def test_longer_than_iw_no_loss_exit2_then_window_engine():
    loop = make_loop()
    n = 3 * IW
    loop.run_message(n * MTU, 5000)
    pk = released(loop)
    assert [p.ect for p in pk[:IW]] == [False] * (IW - 1) + [True]
    assert all(p.ect for p in pk[IW:]) and not any(p.retx for p in pk)
    # IW packets in the first RTT (cycles 1..20), the next only when the first ACK is back:
    # released at 1, at the receiver at 41, its ACK out of the output register at 42, at the
    # sender at 82, taken at that edge: the next packet is offered at 83
    assert loop.released[IW - 1][0] == IW and loop.released[IW][0] == 1 + DELAY + 1 + DELAY + 1
    assert loop.tx.stats.exits == {1: 0, 2: 1}
    check_delivered(loop, n * MTU)


def test_exit2_loads_bdp_into_the_window_engine():
    loop = make_loop()
    loop.start(3 * IW * MTU)
    while loop.tx.s.ev_exit != 2:
        loop.step()
    assert loop.tx.s.una == IW * MTU and loop.tx.s.load_pending
    assert loop.tx.s.load_kind == LdcpTxLoad.BDP
    for _ in range(3):
        loop.step()
    assert loop.tx.cw == 20 * ONE                     # cw = BDP after exit 2
    # the first stable-stage ACK (packet IW + 1's, one RTT later) reaches PAWA: + alpha / cw
    t0 = loop.cycle
    while loop.tx.cw == 20 * ONE:
        loop.step()
    assert loop.cycle - t0 < 2 * (DELAY + 1) + LdcpWindowModel.LATENCY
    assert abs(loop.tx.cw / ONE - (20 + 1 / 20)) < 1e-3


def loss_run(drop_lsns, n_pkts, cfg=CFG, max_cycles=20000, once=True):
    seen = set()

    def drop(p):
        if p.lsn in drop_lsns and (not once or p.lsn not in seen):
            seen.add(p.lsn)
            return True
        return False
    loop = make_loop(cfg, data_drop=drop)
    loop.run_message(n_pkts * MTU, max_cycles)
    check_delivered(loop, n_pkts * MTU)
    return loop


def exit_load(loop):
    """(exit, kind, the window loaded) from the released packets' history."""
    return loop.tx.stats.exits, loop.tx.s.load_kind


def test_loss_of_first_packet():
    loop = loss_run({0}, 2 * IW)
    pk = released(loop)
    # exit 1 with 0 packets acknowledged: the window floor gamma; go back to LSN 0
    assert loop.tx.stats.exits == {1: 1, 2: 0} and loop.tx.stats.naks == 1
    re = [p for p in pk if p.retx]
    assert re[0].lsn == 0 and all(p.ect for p in re)
    assert loop.tx.stats.rtos == 0


def test_loss_of_a_middle_packet_sets_cw_to_packets_acked():
    drop = {6 * MTU}
    seen = set()
    loop = make_loop(data_drop=lambda p: p.lsn in drop and not (p.lsn in seen or seen.add(p.lsn)))
    loop.start(2 * IW * MTU)
    while loop.tx.s.ev_exit != 1:
        loop.step()
    s = loop.tx.s
    assert s.fs_acked == 6 and s.nxt == 6 * MTU and s.stage == LdcpTxStage.STABLE
    while loop.tx.s.load_pending or loop.tx.s.settle:
        loop.step()
    assert loop.tx.cw == 6 * ONE
    while not loop.tx.s.done:
        loop.step()
    check_delivered(loop, 2 * IW * MTU)
    first_retx = next(p for p in released(loop) if p.retx)
    assert first_retx.lsn == 6 * MTU


def test_loss_of_the_iw_th_packet():
    # longer message: the (IW+1)-th packet reveals the gap -> NAK, exit 1 with IW - 1 acked
    loop = loss_run({(IW - 1) * MTU}, 2 * IW)
    assert loop.tx.stats.exits == {1: 1, 2: 0} and loop.tx.stats.rtos == 0
    # exactly IW packets: nothing follows the lost one -> the timeout, exit 1
    loop = loss_run({(IW - 1) * MTU}, IW)
    assert loop.tx.stats.exits == {1: 1, 2: 0} and loop.tx.stats.rtos == 1


def test_loss_of_every_not_ect_fast_start_packet():
    data = ChannelConfig(delay=DELAY, p_drop_not_ect=1.0)
    for n in (IW // 2, IW, 3 * IW):
        loop = make_loop(data=data)
        loop.run_message(n * MTU, 60000)
        check_delivered(loop, n * MTU)
        st = loop.tx.stats
        # the ECN-capable packet (the last, or the IW-th) reaches the receiver: a NAK, no RTO
        assert st.exits[1] == 1 and st.naks == 1 and st.rtos == 0
        assert loop.data.dropped == min(n, IW) - 1


def test_loss_during_stable_stage():
    loop = loss_run({2 * IW * MTU}, 4 * IW)
    st = loop.tx.stats
    assert st.exits == {1: 0, 2: 1} and st.naks == 1 and st.rtos == 0
    re = [p for p in released(loop) if p.retx]
    assert re[0].lsn == 2 * IW * MTU and all(p.ect for p in re)


def test_loss_of_acks():
    # every third ACK lost: the cumulative LSN covers it, nothing is resent
    k = [0]

    def drop(a):
        k[0] += 1
        return k[0] % 3 == 0 and a.lsn != 2 * IW * MTU
    loop = make_loop(ack_drop=drop)
    loop.run_message(2 * IW * MTU, 5000)
    assert loop.tx.stats.retransmissions == 0 and loop.tx.stats.rtos == 0
    check_delivered(loop, 2 * IW * MTU)
    # the final ACK lost: the timeout resends the last packet, the duplicate ACK ends the flow
    gone = []
    loop = make_loop(ack_drop=lambda a: a.lsn == 30 * MTU and not gone and not gone.append(1))
    cycles = loop.run_message(30 * MTU, 5000)
    st = loop.tx.stats
    assert st.rtos == 1 and released(loop)[-1].retx and released(loop)[-1].lsn == 29 * MTU
    assert cycles > CFG.registers().rto
    check_delivered(loop, 30 * MTU)


def test_rto_in_stable_stage_loads_min_cw_1():
    # after exit 2 (cw = 20), drop a window's worth of packets and their NAK
    loop = make_loop(data_drop=lambda p: 40 * MTU <= p.lsn < 60 * MTU and not p.retx,
                     ack_drop=lambda a: a.nak)
    loop.start(60 * MTU)
    while not loop.tx.s.ev_rto:
        loop.step()
    assert loop.tx.s.stage == LdcpTxStage.STABLE and loop.tx.s.load_kind == LdcpTxLoad.MIN1
    assert loop.tx.s.nxt == loop.tx.s.una == 40 * MTU
    while loop.tx.s.load_pending or loop.tx.s.settle:
        loop.step()
    assert loop.tx.cw == ONE
    while not loop.tx.s.done:
        loop.step()
    check_delivered(loop, 60 * MTU)


def test_rto_restarts_on_progress_and_register_write():
    s = LdcpSenderModel(CFG)
    s.edge(write=(LdcpTransportReg.RTO, 5))
    s.edge(write=(LdcpTransportReg.IW, 3))
    assert s.iw_bytes == 3 * MTU
    s.edge(start=10 * MTU)
    for _ in range(3):
        assert s.edge(pkt_ready=True)[1]
    assert not s.outputs().pkt                         # IW = 3
    assert s.outputs().pkt is None and s.s.rto_cnt == 2
    s.edge(ack=TAck(MTU, False, 1))                    # progress: restart
    assert s.s.rto_cnt == 0 and s.outputs().pkt.ect    # after the first ACK: ECN-capable
    for _ in range(4):
        s.edge()
    assert s.s.rto_cnt == 4
    s.edge()                                           # 5th edge without progress: fire
    assert s.s.ev_rto and s.s.nxt == MTU and s.s.stage == LdcpTxStage.STABLE
    assert s.s.load_kind == LdcpTxLoad.ACKED and s.s.fs_acked == 1
    assert not s.outputs().csr_ready                   # registers only between messages


def test_late_ack_after_go_back_n_skips_acknowledged_bytes():
    s = LdcpSenderModel(CFG)
    s.edge(write=(LdcpTransportReg.RTO, 4))
    s.edge(start=10 * MTU)
    for _ in range(3):
        assert s.edge(pkt_ready=True)[1]
    while not s.s.ev_rto:
        s.edge()
    assert s.s.nxt == 0 and s.s.snd_max == 3 * MTU          # went back to LSN 0
    while s.s.load_pending or s.s.settle:
        s.edge()
    s.edge(ack=TAck(2 * MTU, False, 2))                     # the ACK of the first sending
    assert s.s.una == s.s.nxt == 2 * MTU
    p = s.outputs().pkt
    assert p is None or (p.lsn == 2 * MTU and p.retx)


def test_bad_ack_and_stale_ack_ignored():
    s = LdcpSenderModel(CFG)
    s.edge(ack=TAck(5, False, 1))                      # inactive: ignored
    assert s.s == s.s.__class__()
    s.edge(start=4 * MTU)
    s.edge(pkt_ready=True)
    s.edge(ack=TAck(2 * MTU, False, 1))                # beyond snd_max: bad, ignored
    assert s.s.ev_bad_ack and s.s.una == 0 and not s.s.first_ack


def test_delayed_acks_and_marks_reach_the_window_engine():
    cfg = CFG.replace(window=WIN.replace(m=4))
    loop = make_loop(cfg, data=ChannelConfig(delay=DELAY, p_mark=0.3), rng=random.Random(7))
    loop.run_message(6 * IW * MTU, 20000)
    ns = [a.n for _, a in loop.ack_log]
    assert max(ns) == 4 and any(a.ece for _, a in loop.ack_log)
    assert loop.data.marked > 0 and loop.tx.cw < 20 * ONE
    check_delivered(loop, 6 * IW * MTU)


# ------------------------------------------------------------------------------ event level --
def event_replay(cfg, loop_released, ack_arrivals, length):
    """Drive the event-level interface only with the ACK arrival cycles; it must release the
    same packets at the same cycles as the cycle-level run (whose scheduler always took)."""
    s = LdcpSenderModel(cfg)
    s.start_message(0, length)
    out, i = [], 0
    while not s.done:
        w = s.next_wakeup()
        a = ack_arrivals[i][0] if i < len(ack_arrivals) else None
        t = min(x for x in (w, a) if x is not None)
        if a == t:
            s.on_ack(t, ack_arrivals[i][1])
            i += 1
            continue
        p = s.release(t)
        if p is not None:
            out.append((t, p))
        if len(out) > 10 * len(loop_released) + 100:
            raise AssertionError("event replay runs away")
        if w is None and a is None:
            s.advance(s.cycle + 1)
    assert out == loop_released
    return s


class ArrivalLog(Channel):
    """An ACK channel that logs each ACK's arrival cycle when the sender takes it."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.log = []

    def pop(self):
        self.log.append(self.q[0])
        super().pop()


@pytest.mark.parametrize("case", ["clean", "lossy", "sub1"])
def test_event_interface_matches_cycle_level(case):
    rng = random.Random(seed(11))
    cfg = CFG
    data = ChannelConfig(delay=DELAY, jitter=5)
    if case == "lossy":
        data = ChannelConfig(delay=DELAY, jitter=5, p_drop=0.05, p_drop_not_ect=0.3, p_mark=0.1)
    if case == "sub1":         # heavy marking: the window falls below 1, the timer paces
        data = ChannelConfig(delay=DELAY, p_mark=0.9, p_drop_not_ect=1.0)
        cfg = CFG.replace(window=WIN.replace(gamma=1 / 4))
    acks = ArrivalLog(ChannelConfig(delay=DELAY, jitter=3, p_drop=0.05 if case == "lossy"
                                    else 0.0), random.Random(rng.random()))
    loop = Loop(LdcpSenderModel(cfg), LdcpReceiverCycleModel(cfg),
                Channel(data, random.Random(rng.random())), acks, rng)
    length = 5 * IW * MTU + 77
    loop.run_message(length, 400000)
    check_delivered(loop, length)
    s = event_replay(cfg, loop.released, acks.log, length)
    assert s.stats.packets == len(loop.released)
    if case == "sub1":
        assert loop.tx.eng.sub1 or any(loop.tx.stats.exits.values())


def test_event_interface_skips_idle_cycles():
    cfg = CFG.replace(window=WIN.replace(rtt_us=40.0), rto_us=400.0)   # 10k-cycle RTT
    s = LdcpSenderModel(cfg)
    s.start_message(0, 3 * MTU)
    calls = [0]
    step = s._step

    def counted():
        calls[0] += 1
        step()
    s._step = counted
    for t in range(1, 4):
        assert s.release(t) is not None
    # all three lost: the next event is the timeout.  The counter runs from the edge after the
    # first release (cycle 2) and fires at its RTO-th edge, the end of cycle 2 + RTO - 1.
    rto = cfg.registers().rto
    w = s.next_wakeup()
    assert w == 2 + rto
    assert s.release(w) is None and s.s.ev_rto and s.s.nxt == 0 and s.cycle == w
    assert calls[0] < 100
    p = None
    while p is None:
        p = s.release(s.next_wakeup())
    # cw = min(fs_acked, ...) = 0 packets acknowledged -> gamma: the sub-1 timer, RTT / gamma
    assert p.retx and p.lsn == 0 and calls[0] < 200
    assert s.cycle - w > 8 * 10_000 - 100


# ------------------------------------------------------------------------------ random -------
def random_run(rng, n_messages):
    m = rng.choice([1, 1, 2, 4, 8])
    gamma = rng.choice([1 / 4, 1 / 8, 1 / 16])
    cfg = CFG.replace(window=WIN.replace(m=m, gamma=gamma, beta=rng.choice([0.5, 1.0])),
                      iw=rng.choice([4, 10, 20, 40]), rto_us=rng.choice([1.0, 2.0, 4.0]),
                      ack_delay_us=0.1)
    data = ChannelConfig(delay=rng.randint(5, 40), jitter=rng.randint(0, 8),
                         p_drop=rng.choice([0.0, 0.01, 0.05]),
                         p_drop_not_ect=rng.choice([0.0, 0.2, 0.6]),
                         p_mark=rng.choice([0.0, 0.05, 0.3]))
    acks = ChannelConfig(delay=rng.randint(5, 40), jitter=rng.randint(0, 8),
                         p_drop=rng.choice([0.0, 0.02, 0.1]))
    loop = make_loop(cfg, data=data, acks=acks, rng=rng, pkt_ready=rng.choice([1.0, 0.6]),
                     ack_ready=rng.choice([1.0, 0.7]))
    events = 0
    for _ in range(n_messages):
        length = rng.choice([1, rng.randint(1, MTU), rng.randint(1, 30 * MTU),
                             rng.randint(1, 120 * MTU)])
        loop.delivered.clear()
        loop.released.clear()
        loop.run_message(length, 2_000_000)
        check_delivered(loop, length)
        events += len(loop.released) + len(loop.ack_log)
        loop.ack_log.clear()
        # the connection is torn down between messages: stale packets and ACKs vanish
        loop.data.clear()
        loop.acks.clear()
        loop.rx.edge(None, True, clear=True)
        while loop.rx.outputs(True).ack is not None:
            loop.rx.edge(None, True)
    return events, loop


def test_random_nothing_lost():
    rng = random.Random(seed(2024))
    events = 0
    n = 200 if os.environ.get("CC_LDCP_LONG") else 12
    for _ in range(n):
        e, _ = random_run(rng, 8)
        events += e
    print(f"{events} packets + ACKs")
    assert events > 2_000
