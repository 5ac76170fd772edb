"""Bit-exact model of DCTCP's sender and receiver (Linux ``net/ipv4/tcp_dctcp.c`` arithmetic),
with the TCP transport around it: NewReno loss recovery, the RFC 6298 retransmission timer and
the receiver's delayed ACKs.

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

**Reduction round** (``cwr_freeze``, Linux's CWR state): after an ECN cut at ``snd_nxt = H``
the window neither grows nor is cut again until an ACK acknowledges beyond ``H``
(``tcp_fastretrans_alert``: "CWR is to be held until something *above* high_seq is ACKed"; in
CWR ``tcp_cong_control`` never calls ``cong_avoid``).  Linux also spreads the cut over that
round (PRR); the model cuts at once, as the paper does.  ``cwr_freeze = False`` (the default
for now) is the paper's idealisation: the window keeps growing on unmarked ACKs of that round.

**Loss recovery** (``recovery = "newreno"``): the receiver keeps out-of-order packets and
answers each with an immediate duplicate ACK; the third duplicate ACK starts fast retransmit /
fast recovery (RFC 5681 §3.2, RFC 6582): ``ssthresh = max(cwnd / 2, 2)`` (a loss halves the
window, RFC 8257 §3.4; Linux ``dctcp_react_to_loss``), the lost packet is retransmitted,
``cwnd = ssthresh + 3`` and +1 per further duplicate ACK; a partial ACK (below ``recover``, the
highest packet sent when recovery started) retransmits the next hole and deflates the window by
the packets it acknowledges, less one; the full ACK ends recovery with ``cwnd = ssthresh``
(RFC 6582 §3.2 step 5, option 2, which is also Linux's ``tcp_end_cwnd_reduction``).  No new
fast retransmit starts until ``recover`` is acknowledged (RFC 6582 §3.2 step 1).  A timeout
halves ``ssthresh`` (once per loss: a repeated timeout of the same packet keeps it, RFC 5681
§3.1), sets ``cwnd = 1`` and the host goes back to the first unacknowledged packet.

``recovery = "gobackn"`` (a setting; the default is ``newreno``) is the earlier, idealised
model: the receiver discards out-of-order packets, duplicate ACKs are ignored, only the
timeout recovers (go back N), and the timeout's ``ssthresh`` is DCTCP's (``dctcp_ssthresh``,
Linux before 5.1).

Receiver: the two-state ECE machine of RFC 8257 §3.2: ACKs carry the CE state of the packets they
cover; when the state changes, the pending delayed ACK leaves at once with the old state, then
an immediate ACK with the new state.  ``ack_every = 1`` acknowledges every packet; with
``ack_every = m >= 2`` an ACK covers m packets, and the host's delayed-ACK timer sends a pending
one at the latest ``delack`` after its first packet arrived (:meth:`DctcpReceiverModel.on_delack`).
A packet out of order (or a duplicate) is acknowledged at once, and so is one that fills a gap.

:class:`Rfc6298Rto` is the retransmission timer's value: SRTT/RTTVAR (RFC 6298 §2), Karn's
rule (one timed packet at a time, no sample across a retransmission), a minimum and maximum,
exponential backoff on expiry.

Units are packets (the simulator gives every packet of a flow the same size), so bytes-marked
fractions equal packets-marked fractions; times are integer picoseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hw.params import BlockConfig, check_bool, check_choice, check_int

ALPHA_ONE = 1024
DUPTHRESH = 3                 #: duplicate ACKs that start fast retransmit (RFC 5681)
RECOVERY = ("newreno", "gobackn")
RTO_MODES = ("rfc6298", "fixed")


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


def loss_ssthresh(cwnd: int) -> int:
    """The window after a loss (``dctcp_react_to_loss``; RFC 5681 eq. 4 with the window)."""
    return max(cwnd >> 1, 2)


@dataclass(frozen=True)
class DctcpConfig(BlockConfig):
    """``shift_g`` (g = 2**-shift_g), initial window and ssthresh (packets), window cap, the
    receiver's ``ack_every`` (1: an ACK per packet; 2: delayed ACK of two), the loss
    ``recovery`` (``newreno`` or the idealised ``gobackn``) and ``cwr_freeze`` (Linux's
    reduction round; False: the paper's window that grows through it)."""

    shift_g: int = 4
    init_cwnd: int = 10
    init_ssthresh: int = 1 << 30
    cwnd_max: int = 1 << 20
    ack_every: int = 1
    recovery: str = "newreno"
    cwr_freeze: bool = False

    def __post_init__(self):
        check_int(self, "shift_g", self.shift_g, 1, 10)
        check_int(self, "init_cwnd", self.init_cwnd, 2, self.cwnd_max, hi_name="cwnd_max")
        check_int(self, "init_ssthresh", self.init_ssthresh, 2)
        check_int(self, "cwnd_max", self.cwnd_max, 2, 1 << 30)
        check_int(self, "ack_every", self.ack_every, 1, 64)
        check_choice(self, "recovery", self.recovery, RECOVERY)
        check_bool(self, "cwr_freeze", self.cwr_freeze)


@dataclass
class DctcpSenderModel:
    """Window state of one DCTCP flow, updated per ACK.

    The host sends packet ``next_seq`` while :meth:`can_send` (then :meth:`on_send`), and
    calls ``on_ack(acked_upto, ece)`` with each cumulative ACK (number of packets delivered in
    order) and its ECE flag.  The model updates alpha at each window boundary, the window on
    ECE (once per window), Reno growth otherwise, and NewReno's loss recovery: after an ACK,
    ``retransmit`` (if not None) is a packet the host must send at once.  ``on_ack`` returns
    whether the host restarts its retransmission timer (RFC 6298 §5.3; in fast recovery only
    the first partial ACK restarts it, RFC 6582 §3.2 step 4).
    """

    cfg: DctcpConfig = field(default_factory=DctcpConfig)
    cwnd: int = 0
    ssthresh: int = 0
    cwnd_cnt: int = 0
    alpha: int = ALPHA_ONE
    acked: int = 0                # cumulative packets acknowledged (snd_una)
    window_end: int = 0           # alpha is updated when acked passes this sequence
    delivered: int = 0            # packets acknowledged in the current window
    delivered_ce: int = 0         # of which with ECE
    cwr_until: int = -1           # no further ECN cut until acked passes this sequence
    freeze_until: int = -1        # reduction round: no growth until acked passes this sequence
    next_seq: int = 0             # next packet to send (snd_nxt; moved back by a timeout)
    high: int = 0                 # highest packet sent + 1 (snd_max)
    cuts: int = 0
    # NewReno
    dupacks: int = 0
    in_recovery: bool = False
    recover: int = 0              # snd_max at the last loss event (RFC 6582 ``recover``)
    partial_acks: int = 0         # in the current fast recovery
    retransmit: int | None = None # a packet to retransmit now (set by on_ack)
    fast_retransmits: int = 0
    timeouts: int = 0
    rto_repeat: bool = False      # a timeout since the last progress (same loss: keep ssthresh)

    def __post_init__(self):
        self.cwnd = self.cfg.init_cwnd
        self.ssthresh = self.cfg.init_ssthresh

    def can_send(self) -> bool:
        return self.next_seq - self.acked < self.cwnd

    def on_send(self) -> int:
        """The host sends packet ``next_seq``: returns it and moves on."""
        seq = self.next_seq
        self.next_seq += 1
        if self.next_seq > self.high:
            self.high = self.next_seq
        return seq

    def outstanding(self) -> bool:
        return self.high > self.acked

    def on_timeout(self) -> None:
        """Retransmission timeout (Linux ``tcp_enter_loss``): ``ssthresh`` from the loss rule
        (DCTCP's cut under ``gobackn``), the window to one packet (the loss window), and the
        host goes back to ``acked`` (``next_seq = acked``)."""
        if not self.rto_repeat:
            if self.cfg.recovery == "gobackn":
                self.ssthresh = ssthresh(self.cwnd, self.alpha)
            else:
                self.ssthresh = loss_ssthresh(self.cwnd)
        self.rto_repeat = True
        self.cwnd = 1
        self.cwnd_cnt = 0
        self.cwr_until = self.high if self.cfg.recovery == "newreno" else self.next_seq
        self.recover = self.high
        self.in_recovery = False
        self.dupacks = 0
        self.timeouts += 1
        self.next_seq = self.acked

    def _dupack(self) -> None:
        if self.cfg.recovery != "newreno" or not self.outstanding():
            return
        if self.in_recovery:
            self.cwnd = min(self.cwnd + 1, self.cfg.cwnd_max)    # RFC 6582 step 3
            return
        self.dupacks += 1
        if self.dupacks == DUPTHRESH and self.acked >= self.recover:
            # RFC 6582 step 2: fast retransmit, enter fast recovery
            self.ssthresh = loss_ssthresh(self.cwnd)
            self.cwnd = min(self.ssthresh + DUPTHRESH, self.cfg.cwnd_max)
            self.cwnd_cnt = 0
            self.recover = self.high
            self.cwr_until = self.high       # the loss is this window's reduction
            self.in_recovery = True
            self.partial_acks = 0
            self.retransmit = self.acked
            self.fast_retransmits += 1

    def on_ack(self, acked_upto: int, ece: bool) -> bool:
        newly = acked_upto - self.acked
        if newly <= 0:
            if newly == 0:
                self._dupack()
            return False
        self.acked = acked_upto
        if self.next_seq < acked_upto:       # after going back N: the receiver had these
            self.next_seq = acked_upto
        self.dupacks = 0
        self.rto_repeat = False
        self.delivered += newly
        if ece:
            self.delivered_ce += newly
        if self.acked >= self.window_end:
            self.alpha = update_alpha(self.alpha, self.delivered, self.delivered_ce,
                                      self.cfg.shift_g)
            self.delivered = self.delivered_ce = 0
            self.window_end = self.next_seq
        if self.in_recovery:
            if self.acked >= self.recover:                       # full ACK: step 5
                self.in_recovery = False
                self.cwnd = self.ssthresh
                self.cwnd_cnt = 0
                return True
            self.partial_acks += 1                               # partial ACK: step 4
            self.retransmit = self.acked
            self.cwnd = max(self.cwnd - newly + 1, 1)
            return self.partial_acks == 1
        if ece and self.acked > self.cwr_until:
            self.ssthresh = ssthresh(self.cwnd, self.alpha)
            self.cwnd = self.ssthresh
            self.cwnd_cnt = 0
            self.cwr_until = self.next_seq
            if self.cfg.cwr_freeze:
                self.freeze_until = self.next_seq
            self.cuts += 1
            return True
        if ece or (self.cfg.cwr_freeze and self.acked <= self.freeze_until):
            return True
        if self.cwnd < self.ssthresh:
            self.cwnd = min(self.cwnd + newly, self.cfg.cwnd_max)
        else:
            self.cwnd_cnt += newly
            if self.cwnd_cnt >= self.cwnd:
                self.cwnd_cnt -= self.cwnd
                self.cwnd = min(self.cwnd + 1, self.cfg.cwnd_max)
        return True


@dataclass
class DctcpReceiverModel:
    """The receiver's ACK policy: returns, for each packet, the ACKs to send as
    ``(acked_upto, ece)`` pairs (possibly none while an ACK is being delayed: ``pending`` > 0,
    and the host's delayed-ACK timer then calls :meth:`on_delack`).  Under ``newreno`` it keeps
    out-of-order packets (``ooo``) and delivers them when the gap is filled."""

    cfg: DctcpConfig = field(default_factory=DctcpConfig)
    expected: int = 0
    ce_state: bool = False
    pending: int = 0
    ooo: set = field(default_factory=set)

    def _ack(self) -> tuple[int, bool]:
        self.pending = 0
        return (self.expected, self.ce_state)

    def _ce(self, ce: bool, acks: list) -> bool:
        """RFC 8257 §3.2: a CE change sends the pending ACK (of the packets before this one)
        with the old state; returns whether the state changed."""
        if ce == self.ce_state:
            return False
        if self.pending:
            acks.append(self._ack())
        self.ce_state = ce
        return True

    def on_packet(self, seq: int, ce: bool) -> list[tuple[int, bool]]:
        acks: list[tuple[int, bool]] = []
        if seq != self.expected:
            if self.cfg.recovery == "newreno" and seq > self.expected:
                self.ooo.add(seq)
                self._ce(ce, acks)
            return acks + [self._ack()]      # out of order or a duplicate: ACK at once
        changed = self._ce(ce, acks)
        self.expected += 1
        if self.ooo:                         # fills (part of) a gap: deliver what was held
            while self.expected in self.ooo:
                self.ooo.discard(self.expected)
                self.expected += 1
            return acks + [self._ack()]      # ... and ACK at once (RFC 5681 §4.2)
        if changed:
            return acks + [self._ack()]      # immediate ACK, new state
        self.pending += 1
        if self.pending >= self.cfg.ack_every:
            acks.append(self._ack())
        return acks

    def on_delack(self) -> list[tuple[int, bool]]:
        """The delayed-ACK timer expired: the pending ACK, if any."""
        return [self._ack()] if self.pending else []


@dataclass
class Rfc6298Rto:
    """The retransmission timeout of one flow (RFC 6298), in picoseconds.

    ``adaptive`` (``rto_mode = "rfc6298"``): before the first RTT sample ``rto = init_ps``
    (clamped as below); the first sample R gives ``SRTT = R, RTTVAR = R/2``, each later one R'
    ``RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - R'|`` then ``SRTT = 7/8 SRTT + 1/8 R'``;
    ``RTO = SRTT + 4 RTTVAR`` (the clock
    granularity G is the simulator's picosecond: no term), clamped to ``[min_ps, max_ps]``
    (integer picoseconds, rounded down).  Not adaptive (``"fixed"``): ``rto = init_ps``.
    ``backoff``: each expiry doubles the RTO up to ``max_ps`` (RFC 6298 §5.5) until the next
    valid sample.  Karn's rule: one packet is timed at a time (:meth:`on_send` of a new packet
    when none is timed), a retransmission or an expiry cancels the timing, so no sample spans a
    retransmission (§3)."""

    init_ps: int
    min_ps: int
    max_ps: int
    adaptive: bool = True
    backoff: bool = True
    srtt: int | None = None
    rttvar: int | None = None
    rto: int = 0
    timed_seq: int | None = None
    timed_at: int = 0
    samples: int = 0

    def __post_init__(self):
        self.rto = min(max(self.init_ps, self.min_ps), self.max_ps) if self.adaptive \
            else self.init_ps

    def on_send(self, seq: int, now: int, retx: bool) -> None:
        if retx:
            self.timed_seq = None
        elif self.timed_seq is None:
            self.timed_seq, self.timed_at = seq, now

    def on_ack(self, acked_upto: int, now: int) -> int | None:
        """A cumulative ACK: the RTT sample it gives (the timed packet acknowledged), if any."""
        if self.timed_seq is None or acked_upto <= self.timed_seq:
            return None
        r = now - self.timed_at
        self.timed_seq = None
        self.sample(r)
        return r

    def sample(self, r: int) -> None:
        if self.srtt is None:
            self.srtt, self.rttvar = r, r // 2
        else:
            self.rttvar = (3 * self.rttvar + abs(self.srtt - r)) // 4
            self.srtt = (7 * self.srtt + r) // 8
        self.samples += 1
        if self.adaptive:
            self.rto = min(max(self.srtt + 4 * self.rttvar, self.min_ps), self.max_ps)
        else:
            self.rto = self.init_ps

    def on_expiry(self) -> None:
        self.timed_seq = None
        if self.backoff:
            self.rto = min(2 * self.rto, self.max_ps)
