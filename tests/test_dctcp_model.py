"""DCTCP golden model: the Linux integer known answers (net/ipv4/tcp_dctcp.c arithmetic, worked by
hand), the receiver's ECE
state machine, and the sender's once-per-window cut."""

import pytest

from hw.params import ConfigError
from sim.models.dctcp import (
    DctcpConfig,
    DctcpReceiverModel,
    DctcpSenderModel,
    min_not_zero,
    ssthresh,
    update_alpha,
)


def test_alpha_known_answers():
    """Linux tcp_dctcp.c: alpha from 1024 (shift_g 4) through (delivered, delivered_ce) windows."""
    alpha = 1024
    seen = []
    for delivered, ce in [(10, 0), (10, 5), (10, 10), (10, 10), (20, 1), (10, 0)]:
        alpha = update_alpha(alpha, delivered, ce)
        seen.append(alpha)
    assert seen == [960, 932, 938, 944, 888, 833]


def test_alpha_small_values():
    assert update_alpha(15, 10, 0) == 0     # below 16 alpha drops to 0 in one step
    assert update_alpha(16, 10, 0) == 15
    assert min_not_zero(0, 5) == 5 and min_not_zero(5, 0) == 5 and min_not_zero(3, 5) == 3


@pytest.mark.parametrize("cwnd, alpha, expected", [(100, 1024, 50), (100, 512, 75),
                                                    (10, 64, 10), (3, 1024, 2)])
def test_ssthresh_known_answers(cwnd, alpha, expected):
    assert ssthresh(cwnd, alpha) == expected


def test_receiver_ece_state_machine_with_delayed_acks():
    """Delayed ACKs of 2; a CE change flushes the pending ACK with the old state, then an
    immediate ACK with the new state: the sender sees the exact count of marked packets."""
    rx = DctcpReceiverModel(DctcpConfig(ack_every=2))
    assert rx.on_packet(0, False) == []
    assert rx.on_packet(1, False) == [(2, False)]
    assert rx.on_packet(2, False) == []
    assert rx.on_packet(3, True) == [(3, False), (4, True)]
    assert rx.on_packet(4, True) == []
    assert rx.on_packet(5, True) == [(6, True)]
    assert rx.on_packet(6, False) == [(7, False)]          # nothing pending: only the new state
    assert rx.on_packet(9, False) == [(7, False)]          # a gap: duplicate ACK


def test_sender_cuts_once_per_window_and_counts_alpha():
    s = DctcpSenderModel(DctcpConfig(init_cwnd=100, init_ssthresh=100))
    s.next_seq = 100
    s.on_ack(1, True)                  # first window ends at 0: alpha updated, then a cut
    assert s.cuts == 1 and s.cwnd == ssthresh(100, s.alpha)
    cwnd = s.cwnd
    for a in range(2, 50):
        s.on_ack(a, True)              # more ECE in the same window: no second cut
    assert s.cuts == 1 and s.cwnd == cwnd
    s.next_seq = 200
    s.on_ack(101, True)                # past the CWR point: one more cut
    assert s.cuts == 2


def test_sender_reno_growth():
    s = DctcpSenderModel(DctcpConfig(init_cwnd=10, init_ssthresh=12))
    s.next_seq = 10
    s.on_ack(1, False)
    s.on_ack(2, False)                 # slow start: +1 per packet up to ssthresh
    assert s.cwnd == 12
    for a in range(3, 15):
        s.on_ack(a, False)             # congestion avoidance: +1 per cwnd packets
    assert s.cwnd == 13


def test_invalid_configuration():
    with pytest.raises(ConfigError, match="DctcpConfig.shift_g = 0"):
        DctcpConfig(shift_g=0)
    with pytest.raises(ConfigError, match="DctcpConfig.init_cwnd = 1"):
        DctcpConfig(init_cwnd=1)
