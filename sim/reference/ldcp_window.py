"""Float reference of LDCP's per-ACK window adjustment (draft-dai-tsvwg-pfc-free-congestion-
control-00 §2.2, eqs. 1 and 2 and the sub-1 rules) and of the sub-1 pacing timer.

Written from the draft's equations in floating point, with the project's documented decisions
for what the draft leaves open (``docs/ldcp-window.md``), and no code shared with the bit-exact
model: it is the yardstick the fixed-point datapath is measured against.

Decisions taken (the draft is silent on them):

- the regime is chosen by the window before the ACK (``cw >= 1``: eq. 2; ``cw < 1``: sub-1);
- an ACK confirming ``n`` packets counts as ``n`` per-packet steps of its regime, without
  splitting between regimes: ``cw + n alpha / cw``, ``cw - n beta``, ``cw + n gamma``,
  ``cw eta**n``;
- the window never goes below ``gamma`` (``max(gamma, .)``) nor above ``cw_max`` (``min``);
  a decrease from ``cw >= 1`` may land anywhere in ``[gamma, 1)``, an increase from ``cw < 1``
  anywhere in ``[1, cw_max]``.
"""

from __future__ import annotations

import math

ETA = 0.5  # the draft: "We choose eta = 1/2"


def pawa_ack(cw: float, ece: bool, n: int, alpha: float, beta: float, gamma: float,
             cw_max: float) -> float:
    """The window after one ACK with ECN-Echo ``ece`` confirming ``n`` packets."""
    if cw >= 1.0:
        if ece:
            new = cw - n * beta          # eq. (2), ECE = 1
        else:
            new = cw + n * alpha / cw    # eq. (2), ECE = 0
    else:
        if ece:
            new = cw * ETA ** n          # max{gamma, eta * cw}, n times
        else:
            new = cw + n * gamma         # cw + gamma, n times
    return min(cw_max, max(gamma, new))


def pawa_event(cw: float, n_marked: int, n_unmarked: int, alpha: float, beta: float,
               gamma: float, cw_max: float) -> float:
    """A coalesced event: ``n_marked`` packets with ECE, then ``n_unmarked`` without."""
    if n_marked:
        cw = pawa_ack(cw, True, n_marked, alpha, beta, gamma, cw_max)
    if n_unmarked:
        cw = pawa_ack(cw, False, n_unmarked, alpha, beta, gamma, cw_max)
    return cw


def continuous_increase(cw0: float, acks: float, alpha: float) -> float:
    """Solution of the continuous limit ``dcw/dack = alpha / cw``: ``sqrt(cw0**2 + 2 alpha
    acks)``."""
    return math.sqrt(cw0 * cw0 + 2.0 * alpha * acks)


def timer_releases(cw_per_cycle, rtt_cycles: float) -> float:
    """Packets a timer of period ``RTT / cw`` releases over the given cycles (a fluid count:
    each cycle contributes ``cw / RTT`` of a packet)."""
    return sum(cw_per_cycle) / rtt_cycles


def timer_period(cw: float, rtt_cycles: float) -> float:
    """The draft's timeout ``RTT / cw`` in cycles."""
    return rtt_cycles / cw
