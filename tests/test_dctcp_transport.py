"""DCTCP's TCP transport (issue #15): known answers worked by hand for each rule of
``sim.models.dctcp`` (the pure models; the network-level checks are in
``tests/test_net_dctcp.py``).

* RFC 6298 retransmission timeout: SRTT/RTTVAR on worked numbers, the minimum, exponential
  backoff up to the maximum, Karn's rule, the fixed mode;
* NewReno fast retransmit / fast recovery (RFC 5681 §3.2, RFC 6582) on a scripted loss pattern:
  cwnd and ssthresh after every ACK, the partial and the full ACK, no second fast retransmit
  before ``recover``; the timeout's window and ssthresh (once per loss);
* Linux's reduction round (CWR): no growth until an ACK passes the sequence at the cut, against
  the paper's window that grows through it;
* the receiver: delayed ACK released by the timer, out-of-order packets kept and a filled gap
  acknowledged at once (newreno) or discarded (gobackn).
"""

from __future__ import annotations

import pytest

from hw.params import ConfigError
from sim.models.dctcp import DctcpConfig, DctcpReceiverModel, DctcpSenderModel, Rfc6298Rto

US = 10**6            # picoseconds


# --------------------------------------------------------------------------------------------
# RFC 6298
# --------------------------------------------------------------------------------------------


def test_rfc6298_worked_numbers():
    """RFC 6298 §2.2-2.3 by hand, samples 100, 200, 112.5 us (K = 4, alpha 1/8, beta 1/4):
    R=100: SRTT 100, RTTVAR 50, RTO 100 + 4*50 = 300;
    R=200: RTTVAR 3/4*50 + 1/4*|100-200| = 62.5 (with the old SRTT), SRTT 7/8*100 + 1/8*200
           = 112.5, RTO 112.5 + 250 = 362.5;
    R=112.5: RTTVAR 3/4*62.5 + 0 = 46.875, SRTT 112.5, RTO 112.5 + 187.5 = 300."""
    t = Rfc6298Rto(init_ps=1000 * US, min_ps=1 * US, max_ps=60_000_000 * US)
    assert t.rto == 1000 * US                                   # before any sample
    seen = []
    for r in (100 * US, 200 * US, 112_500_000):
        t.sample(r)
        seen.append((t.srtt, t.rttvar, t.rto))
    assert seen == [(100_000_000, 50_000_000, 300_000_000),
                    (112_500_000, 62_500_000, 362_500_000),
                    (112_500_000, 46_875_000, 300_000_000)]


def test_rfc6298_minimum_and_initial_value():
    t = Rfc6298Rto(init_ps=500 * US, min_ps=1000 * US, max_ps=60_000_000 * US)
    assert t.rto == 1000 * US                 # the initial value is clamped to the minimum too
    for r in (100 * US, 200 * US):
        t.sample(r)
        assert t.rto == 1000 * US             # 300 and 362.5 us computed, 1 ms applied
    t.sample(900 * US)  # RTTVAR (3*62.5 + |112.5-900|)/4 = 243.75, SRTT (7*112.5+900)/8 = 210.9375
    assert (t.srtt, t.rttvar, t.rto) == (210_937_500, 243_750_000, 1_185_937_500)


def test_rfc6298_backoff_doubles_up_to_the_maximum_until_a_valid_sample():
    t = Rfc6298Rto(init_ps=1000 * US, min_ps=1 * US, max_ps=2000 * US)
    for r in (100 * US, 200 * US, 112_500_000):
        t.sample(r)
    assert t.rto == 300 * US
    seen = []
    for _ in range(4):
        t.on_expiry()
        seen.append(t.rto)
    assert seen == [600 * US, 1200 * US, 2000 * US, 2000 * US]      # 2400 capped at 2000
    # a valid sample (100 us) ends the backoff: RTTVAR (3*46.875 + 12.5)/4 = 38.28125,
    # SRTT (7*112.5 + 100)/8 = 110.9375, RTO 110.9375 + 153.125 = 264.0625 us
    t.sample(100 * US)
    assert (t.srtt, t.rttvar, t.rto) == (110_937_500, 38_281_250, 264_062_500)


def test_rfc6298_without_backoff_and_fixed_mode():
    t = Rfc6298Rto(init_ps=1000 * US, min_ps=1 * US, max_ps=60_000_000 * US, backoff=False)
    t.sample(100 * US)
    t.on_expiry()
    assert t.rto == 300 * US
    fixed = Rfc6298Rto(init_ps=1000 * US, min_ps=1 * US, max_ps=60_000_000 * US,
                       adaptive=False, backoff=False)
    fixed.sample(100 * US)
    fixed.on_expiry()
    assert (fixed.srtt, fixed.rto) == (100 * US, 1000 * US)        # the earlier fixed RTO
    fixed_b = Rfc6298Rto(init_ps=1000 * US, min_ps=1 * US, max_ps=60_000_000 * US,
                         adaptive=False)
    fixed_b.on_expiry()
    fixed_b.on_expiry()
    assert fixed_b.rto == 4000 * US
    fixed_b.sample(100 * US)
    assert fixed_b.rto == 1000 * US


def test_karn_one_timed_packet_and_no_sample_across_a_retransmission():
    t = Rfc6298Rto(init_ps=1000 * US, min_ps=1 * US, max_ps=60_000_000 * US)
    t.on_send(0, 0, retx=False)                 # timed
    t.on_send(1, 10 * US, retx=False)           # not timed: packet 0 is
    assert t.on_ack(1, 100 * US) == 100 * US    # ACK of packet 0: R = 100 us
    assert t.on_ack(2, 150 * US) is None        # packet 1 was not timed
    t.on_send(2, 200 * US, retx=False)          # timed
    t.on_send(2, 300 * US, retx=True)           # retransmitted: the timing is void
    assert t.on_ack(3, 400 * US) is None
    t.on_send(3, 500 * US, retx=False)
    t.on_expiry()                               # an expiry voids it too
    assert t.on_ack(4, 600 * US) is None
    assert (t.samples, t.srtt) == (1, 100 * US)
    t.on_send(4, 700 * US, retx=False)
    assert t.on_ack(4, 800 * US) is None        # does not cover packet 4 yet
    assert t.on_ack(5, 900 * US) == 200 * US


# --------------------------------------------------------------------------------------------
# NewReno
# --------------------------------------------------------------------------------------------


def sender(**cfg) -> DctcpSenderModel:
    return DctcpSenderModel(DctcpConfig(**{"init_cwnd": 10, "init_ssthresh": 10,
                                           "recovery": "newreno", **cfg}))


def send(s: DctcpSenderModel, n: int | None = None) -> list[int]:
    """What the host sends: ``n`` packets, or while the window allows."""
    out = []
    while (len(out) < n) if n is not None else s.can_send():
        out.append(s.on_send())
    return out


def test_newreno_fast_retransmit_partial_and_full_ack():
    """Ten packets in congestion avoidance (cwnd = ssthresh = 10); 3 and 6 are lost.
    ACKs 1, 2, 3: cwnd 10 (cwnd_cnt 3).  Dup ACKs of 3 from 4, 5, 7: the third one (RFC 5681)
    sets ssthresh = 10/2 = 5, cwnd = 5 + 3 = 8, retransmits 3, recover = 10.  Dup ACKs from 8
    and 9: cwnd 9, 10, so 3 new packets (10, 11, 12: 7 + 3 in flight) go out.  The
    retransmitted 3 gives ACK 6, partial (< 10): retransmit 6, cwnd 10 - 3 + 1 = 8.  Dup ACKs
    from 10, 11, 12: cwnd 9, 10, 11 (4 new packets, 13..16).  The retransmitted 6 gives ACK 13,
    full (>= 10): cwnd = ssthresh = 5, recovery over."""
    s = sender()
    assert send(s, 10) == list(range(10))
    restarts = [s.on_ack(a, False) for a in (1, 2, 3)]
    assert (s.cwnd, s.cwnd_cnt, restarts) == (10, 3, [True] * 3)
    assert s.on_ack(3, False) is False and s.on_ack(3, False) is False
    assert s.retransmit is None and (s.cwnd, s.ssthresh) == (10, 10)     # two: not yet
    assert s.on_ack(3, False) is False                                   # third
    assert (s.retransmit, s.cwnd, s.ssthresh, s.recover, s.in_recovery) == (3, 8, 5, 10, True)
    s.retransmit = None
    for cwnd in (9, 10):
        s.on_ack(3, False)
        assert s.cwnd == cwnd
    assert send(s) == [10, 11, 12]
    assert s.on_ack(6, False) is True                   # the first partial ACK restarts
    assert (s.retransmit, s.cwnd, s.in_recovery) == (6, 8, True)
    s.retransmit = None
    for cwnd in (9, 10, 11):
        s.on_ack(6, False)
        assert s.cwnd == cwnd
    assert send(s) == [13, 14, 15, 16]                  # 13 - 6 = 7 in flight, cwnd 11
    assert s.on_ack(13, False) is True
    assert (s.cwnd, s.ssthresh, s.in_recovery, s.retransmit) == (5, 5, False, None)
    assert (s.fast_retransmits, s.cuts, s.timeouts) == (1, 0, 0)


def test_newreno_second_partial_ack_does_not_restart_the_timer():
    s = sender()
    send(s, 10)
    for _ in range(3):
        s.on_ack(0, False)
    assert (s.retransmit, s.cwnd, s.ssthresh) == (0, 8, 5)
    assert s.on_ack(2, False) is True                    # first partial: cwnd 8 - 2 + 1 = 7
    assert (s.retransmit, s.cwnd) == (2, 7)
    assert s.on_ack(5, False) is False                   # second partial: cwnd 7 - 3 + 1 = 5
    assert (s.retransmit, s.cwnd) == (5, 5)


def test_no_fast_retransmit_before_recover_is_acknowledged_and_timeout_rules():
    """A timeout at acked = 2 with 10 sent: ssthresh = max(10 // 2, 2) = 5 (the window was 10),
    cwnd 1, back to 2, recover = 10.  Three dup ACKs of 2 (from packets sent before the timeout)
    start no fast retransmit (RFC 6582 step 1: 2 < recover).  A second timeout without progress
    keeps ssthresh (RFC 5681 §3.1: same loss)."""
    s = sender()
    send(s, 10)
    s.on_ack(2, False)
    s.on_timeout()
    assert (s.cwnd, s.ssthresh, s.next_seq, s.recover, s.timeouts) == (1, 5, 2, 10, 1)
    assert send(s) == [2]
    for _ in range(4):
        s.on_ack(2, False)
    assert s.retransmit is None and s.fast_retransmits == 0 and s.cwnd == 1
    s.on_timeout()
    assert (s.cwnd, s.ssthresh, s.next_seq, s.timeouts) == (1, 5, 2, 2)
    send(s)
    s.on_ack(8, False)                 # the receiver kept 3..7: next_seq jumps to 8
    assert (s.next_seq, s.cwnd) == (8, 7)                # slow start: 1 + 6
    assert send(s) == [8, 9, 10, 11, 12, 13, 14]
    s.cwnd = 12
    s.on_timeout()                     # a new loss after progress: ssthresh from the window
    assert (s.ssthresh, s.next_seq) == (6, 8)


def test_gobackn_keeps_the_earlier_model():
    """``gobackn``: duplicate ACKs do nothing, the timeout's ssthresh is DCTCP's:
    alpha 1024 -> 960 after the first window's update (ACK 1, nothing marked), then
    10 - (10 * 960 >> 11) = 10 - 4 = 6."""
    s = sender(recovery="gobackn")
    send(s, 10)
    s.on_ack(1, False)
    assert s.alpha == 960
    for _ in range(5):
        s.on_ack(1, False)
    assert s.retransmit is None and s.cwnd == 10
    s.on_timeout()
    assert (s.cwnd, s.ssthresh, s.next_seq) == (1, 6, 1)


# --------------------------------------------------------------------------------------------
# Reduction round (Linux CWR)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("freeze", [True, False])
def test_reduction_round(freeze):
    """cwnd = ssthresh = 10, ten packets out.  ACK 1 with ECE: alpha 1024 - 64 + 64 = 1024,
    cut to 10 - (10 * 1024 >> 11) = 5, H = 10.  ACKs 2..10 without ECE: frozen (Linux, cwnd 5,
    cwnd_cnt 0; ACK 10 does not pass H) or growing (the paper: cnt 5 at ACK 6 -> cwnd 6, then
    cnt 4).  Packets 10..14 then go out; ACK 11 passes H: growth resumes (cnt 1)."""
    s = sender(cwr_freeze=freeze)
    send(s, 10)
    s.on_ack(1, True)
    assert (s.alpha, s.cwnd, s.ssthresh, s.cuts) == (1024, 5, 5, 1)
    for a in range(2, 11):
        s.on_ack(a, False)
    assert (s.cwnd, s.cwnd_cnt) == ((5, 0) if freeze else (6, 4))
    assert send(s) == list(range(10, 10 + s.cwnd))
    s.on_ack(11, False)
    assert (s.cwnd, s.cwnd_cnt) == ((5, 1) if freeze else (6, 5))
    s.on_ack(12, True)                 # past the cut's round: a second cut
    assert s.cuts == 2


# --------------------------------------------------------------------------------------------
# Receiver
# --------------------------------------------------------------------------------------------


def test_delayed_ack_timer_releases_a_lone_packet():
    rx = DctcpReceiverModel(DctcpConfig(ack_every=2))
    assert rx.on_packet(0, False) == [] and rx.pending == 1
    assert rx.on_delack() == [(1, False)] and rx.pending == 0
    assert rx.on_delack() == []                      # nothing pending: no ACK
    assert rx.on_packet(1, False) == [] and rx.on_packet(2, False) == [(3, False)]
    assert rx.on_delack() == []
    rx4 = DctcpReceiverModel(DctcpConfig(ack_every=4))
    assert [rx4.on_packet(i, True) for i in range(3)] == [[(1, True)], [], []]
    assert rx4.on_delack() == [(3, True)]            # the state it covers


def test_receiver_keeps_out_of_order_packets_and_acks_a_filled_gap_at_once():
    rx = DctcpReceiverModel(DctcpConfig(ack_every=2, recovery="newreno"))
    assert rx.on_packet(0, False) == []
    assert rx.on_packet(2, False) == [(1, False)]    # out of order: at once (covers 0)
    assert rx.on_packet(3, False) == [(1, False)]
    assert rx.on_packet(5, False) == [(1, False)]
    assert rx.on_packet(1, False) == [(4, False)]    # fills the first gap: 1..3, at once
    assert rx.on_packet(4, False) == [(6, False)]    # the second: 4, 5
    assert rx.on_packet(6, False) == [] and rx.pending == 1
    assert rx.on_packet(2, False) == [(7, False)]    # a duplicate: at once
    # a CE change on an out-of-order packet: the pending ACK with the old state first
    assert rx.on_packet(7, False) == []
    assert rx.on_packet(9, True) == [(8, False), (8, True)]
    assert rx.on_packet(8, True) == [(10, True)]


def test_gobackn_receiver_discards_out_of_order_packets():
    rx = DctcpReceiverModel(DctcpConfig(recovery="gobackn"))
    assert rx.on_packet(0, False) == [(1, False)]
    assert rx.on_packet(2, True) == [(1, False)]     # discarded, its CE ignored
    assert rx.on_packet(1, False) == [(2, False)]
    assert rx.on_packet(3, False) == [(2, False)]


def test_invalid_transport_configuration():
    with pytest.raises(ConfigError, match=r"DctcpConfig\.recovery = 'sack'"):
        DctcpConfig(recovery="sack")
    with pytest.raises(ConfigError, match=r"DctcpConfig\.cwr_freeze = 1"):
        DctcpConfig(cwr_freeze=1)
