"""Bit-exact model of DCTCP's sender and receiver (Linux ``net/ipv4/tcp_dctcp.c`` arithmetic).

DCTCP is the window-based baseline LDCP is compared with: it reacts once per window of data with
a cut proportional to the fraction of CE-marked bytes, where LDCP's PAWA reacts on every ACK.

Sender (per window of data, about one RTT)::

    alpha -= min_not_zero(alpha, alpha >> shift_g)
    if delivered_ce:
        alpha = min(alpha + (delivered_ce << (10 - shift_g)) // max(1, delivered), 1024)

and on the first ECE of a window: ``ssthresh = max(cwnd - ((cwnd * alpha) >> 11), 2)``,
``cwnd = ssthresh``.  alpha is in 1/1024 units, ``shift_g = 4`` (g = 1/16), initial alpha 1024.
Window growth is Reno's: +1 packet per acknowledged packet below ``ssthresh`` (slow start),
otherwise +1 per window (integer ``cwnd_cnt`` as Linux counts it).

Receiver: the two-state ECE machine of RFC 8257 §3.2: ACKs carry the CE state of the packets they
cover; when the state changes, the pending delayed ACK leaves at once with the old state, then
an immediate ACK with the new state.  ``ack_every = 1`` acknowledges every packet.

Units are packets (the simulator gives every packet of a flow the same size), so bytes-marked
fractions equal packets-marked fractions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hw.params import BlockConfig, check_int

ALPHA_ONE = 1024


def min_not_zero(a: int, b: int) -> int:
    """Linux ``min_not_zero``: the smaller of the two, ignoring a zero."""
    if a == 0:
        return b
    if b == 0:
        return a
    return min(a, b)


def update_alpha(alpha: int, delivered: int, delivered_ce: int, shift_g: int = 4) -> int:
    """One per-window alpha update (``dctcp_update_alpha``)."""
    alpha -= min_not_zero(alpha, alpha >> shift_g)
    if delivered_ce:
        alpha = min(alpha + (delivered_ce << (10 - shift_g)) // max(1, delivered), ALPHA_ONE)
    return alpha


def ssthresh(cwnd: int, alpha: int) -> int:
    """``dctcp_ssthresh``: the window after a cut."""
    return max(cwnd - ((cwnd * alpha) >> 11), 2)


@dataclass(frozen=True)
class DctcpConfig(BlockConfig):
    """``shift_g`` (g = 2**-shift_g), initial window and ssthresh (packets), window cap, and
    the receiver's ``ack_every`` (1: an ACK per packet; 2: delayed ACK of two)."""

    shift_g: int = 4
    init_cwnd: int = 10
    init_ssthresh: int = 1 << 30
    cwnd_max: int = 1 << 20
    ack_every: int = 1

    def __post_init__(self):
        check_int(self, "shift_g", self.shift_g, 1, 10)
        check_int(self, "init_cwnd", self.init_cwnd, 2, self.cwnd_max, hi_name="cwnd_max")
        check_int(self, "init_ssthresh", self.init_ssthresh, 2)
        check_int(self, "cwnd_max", self.cwnd_max, 2, 1 << 30)
        check_int(self, "ack_every", self.ack_every, 1, 64)


@dataclass
class DctcpSenderModel:
    """Window state of one DCTCP flow, updated per ACK.

    ``on_ack(acked_upto, ece)`` takes the cumulative ACK (number of packets delivered in order)
    and the ECE flag, and updates alpha at each window boundary, the window on ECE (once per
    window), and Reno growth otherwise.  ``can_send(next_seq)`` is the window gate.
    """

    cfg: DctcpConfig = field(default_factory=DctcpConfig)
    cwnd: int = 0
    ssthresh: int = 0
    cwnd_cnt: int = 0
    alpha: int = ALPHA_ONE
    acked: int = 0                # cumulative packets acknowledged
    window_end: int = 0           # alpha is updated when acked passes this sequence
    delivered: int = 0            # packets acknowledged in the current window
    delivered_ce: int = 0         # of which with ECE
    cwr_until: int = -1           # no further cut until acked passes this sequence
    next_seq: int = 0             # next packet to send (set by the host)
    cuts: int = 0

    def __post_init__(self):
        self.cwnd = self.cfg.init_cwnd
        self.ssthresh = self.cfg.init_ssthresh

    def can_send(self) -> bool:
        return self.next_seq - self.acked < self.cwnd

    def on_timeout(self) -> None:
        """Retransmission timeout (Linux ``tcp_enter_loss``): ``ssthresh`` from DCTCP's rule,
        the window to one packet (the loss window), and the caller goes back N."""
        self.ssthresh = ssthresh(self.cwnd, self.alpha)
        self.cwnd = 1
        self.cwnd_cnt = 0
        self.cwr_until = self.next_seq

    def on_ack(self, acked_upto: int, ece: bool) -> None:
        newly = acked_upto - self.acked
        if newly <= 0:
            return
        self.acked = acked_upto
        self.delivered += newly
        if ece:
            self.delivered_ce += newly
        if self.acked >= self.window_end:
            self.alpha = update_alpha(self.alpha, self.delivered, self.delivered_ce,
                                      self.cfg.shift_g)
            self.delivered = self.delivered_ce = 0
            self.window_end = self.next_seq
        if ece and self.acked > self.cwr_until:
            self.ssthresh = ssthresh(self.cwnd, self.alpha)
            self.cwnd = self.ssthresh
            self.cwnd_cnt = 0
            self.cwr_until = self.next_seq
            self.cuts += 1
            return
        if ece:
            return
        if self.cwnd < self.ssthresh:
            self.cwnd = min(self.cwnd + newly, self.cfg.cwnd_max)
        else:
            self.cwnd_cnt += newly
            if self.cwnd_cnt >= self.cwnd:
                self.cwnd_cnt -= self.cwnd
                self.cwnd = min(self.cwnd + 1, self.cfg.cwnd_max)


@dataclass
class DctcpReceiverModel:
    """The receiver's ACK policy: returns, for each in-order packet, the ACKs to send as
    ``(acked_upto, ece)`` pairs (possibly none while an ACK is being delayed)."""

    cfg: DctcpConfig = field(default_factory=DctcpConfig)
    expected: int = 0
    ce_state: bool = False
    pending: int = 0

    def on_packet(self, seq: int, ce: bool) -> list[tuple[int, bool]]:
        if seq != self.expected:       # out of order (loss): duplicate ACK of what we have
            return [(self.expected, self.ce_state)]
        acks = []
        if ce != self.ce_state:
            if self.pending:
                acks.append((self.expected, self.ce_state))   # old state for the old packets
                self.pending = 0
            self.ce_state = ce
            self.expected += 1
            acks.append((self.expected, ce))                  # immediate ACK, new state
            return acks
        self.expected += 1
        self.pending += 1
        if self.pending >= self.cfg.ack_every:
            acks.append((self.expected, ce))
            self.pending = 0
        return acks
