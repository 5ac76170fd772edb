"""Bit-exact integer model of TIMELY's per-flow rate computation (Mittal et al., SIGCOMM 2015).

One :meth:`TimelyModel.complete` per completion event (the ACK of one segment).  Every value is
an integer in the formats of :mod:`hw.nic.timely_config`; the order of operations, the rounding
(floor everywhere: arithmetic shifts, floor division) and the saturations are the ones the RTL
must reproduce.  Per completion:

1. ``rtt = (t_completion - t_send) mod 2**32 - floor(seg_bytes * ser_per_byte / 2**24)``,
   clamped to ``[0, 2**rtt_width - 1]`` (the segment's serialization at the line rate is not
   part of the RTT);
2. the first completion of a flow only sets ``prev_rtt``; afterwards ``new_diff = rtt -
   prev_rtt`` and ``rtt_diff += ((new_diff << 8) - rtt_diff) * alpha >> 16`` (EWMA, saturating);
3. ``gradient = rtt_diff * inv_min_rtt >> 24`` (Q.16, = rtt_diff / minRTT; saturating at
   ±GRAD_MAX); ``neg`` counts consecutive completions with ``gradient <= 0`` (saturating at
   ``hai_thresh``; a positive gradient clears it);
4. ``rtt < T_low``: ``R += delta``; else ``rtt > T_high``: ``q = floor(2**16 T_high / rtt)``
   (a 16-step restoring division: ``q < 2**16`` because ``rtt > T_high``),
   ``R = R (2**16 - (beta (2**16 - q) >> 16)) >> 16``; else ``gradient <= 0``: ``R += N delta``
   (N = ``hai_mult`` once ``neg`` reached ``hai_thresh``, else 1); else
   ``R = R max(0, 2**16 - (beta gradient >> 16)) >> 16``;
5. an increase (steps 4's additive branches) happens only if the application is not limited:
   ``app_bytes * 2**40 >= R * app_cycles * app_k`` (the flow sent at least ``app_limit_pct`` %
   of ``R`` over the completion interval);
6. ``R`` is clamped to ``[min_rate, max_rate]``.
"""

from __future__ import annotations

from dataclasses import dataclass

from hw.nic.timely_config import (
    APP_FRAC,
    DIFF_FRAC,
    FRAC16,
    GRAD_FRAC,
    GRAD_MAX,
    INV_FRAC,
    ONE16,
    SER_FRAC,
    TS_BITS,
    TimelyConfig,
)
from sim.models.divider import udiv_sat

__all__ = ["TimelyModel", "TimelyState", "TimelyCompletion", "TimelyOutcome",
           "REGION_LOW", "REGION_HIGH", "REGION_GRAD_INC", "REGION_GRAD_DEC", "REGION_FIRST"]

TS_MASK = (1 << TS_BITS) - 1
REGION_LOW, REGION_HIGH, REGION_GRAD_INC, REGION_GRAD_DEC = range(4)
REGION_FIRST = REGION_GRAD_INC    # the first completion has gradient 0: the gradient rule


@dataclass
class TimelyState:
    rate: int             #: UQ.10 Mb/s
    prev_rtt: int = 0     #: cycles
    rtt_diff: int = 0     #: signed, cycles * 2**DIFF_FRAC
    neg: int = 0          #: consecutive completions with gradient <= 0 (saturating)
    valid: bool = False   #: a first RTT was seen


@dataclass(frozen=True)
class TimelyCompletion:
    """A completion event: NIC timestamps of the segment's first transmission and of its ACK
    (cycles, modulo 2**32), the segment's bytes, and what the application sent since the
    previous completion (``app_bytes`` over ``app_cycles``) for the application-limited rule."""
    t_send: int
    t_completion: int
    seg_bytes: int
    app_bytes: int = 1 << 30
    app_cycles: int = 0


@dataclass(frozen=True)
class TimelyOutcome:
    rtt: int
    gradient: int
    region: int
    rate: int


class TimelyModel:
    def __init__(self, cfg: TimelyConfig):
        self.cfg = cfg
        self.r = cfg.registers()
        self.diff_max = (1 << (cfg.rtt_width + DIFF_FRAC)) - 1
        self.state = TimelyState(rate=self.r.init_rate)

    def rtt_of(self, ev: TimelyCompletion) -> int:
        r = self.r
        elapsed = (ev.t_completion - ev.t_send) & TS_MASK
        ser = (ev.seg_bytes * r.ser_per_byte) >> SER_FRAC
        return min(max(elapsed - ser, 0), r.rtt_max)

    def app_ok(self, ev: TimelyCompletion) -> bool:
        r, s = self.r, self.state
        if r.app_k == 0:
            return True
        cycles = min(ev.app_cycles, r.rtt_max)     # the interval counter saturates too
        return (ev.app_bytes << APP_FRAC) >= s.rate * cycles * r.app_k

    def complete(self, ev: TimelyCompletion) -> TimelyOutcome:
        r, s = self.r, self.state
        rtt = self.rtt_of(ev)
        if s.valid:
            new_diff = (rtt - s.prev_rtt) << DIFF_FRAC
            d = s.rtt_diff + (((new_diff - s.rtt_diff) * r.alpha) >> FRAC16)
            s.rtt_diff = min(max(d, -self.diff_max), self.diff_max)
        s.prev_rtt = rtt
        s.valid = True
        g = (s.rtt_diff * r.inv_min_rtt) >> (DIFF_FRAC + INV_FRAC - GRAD_FRAC)
        g = min(max(g, -GRAD_MAX), GRAD_MAX)
        s.neg = min(s.neg + 1, r.hai_thresh) if g <= 0 else 0
        inc_ok = self.app_ok(ev)
        rate = s.rate
        if rtt < r.t_low:
            region = REGION_LOW
            if inc_ok:
                rate += r.delta
        elif rtt > r.t_high:
            region = REGION_HIGH
            q = udiv_sat(r.t_high << FRAC16, rtt, FRAC16)
            rate = (rate * (ONE16 - ((r.beta * (ONE16 - q)) >> FRAC16))) >> FRAC16
        elif g <= 0:
            region = REGION_GRAD_INC
            if inc_ok:
                rate += r.delta * (r.hai_mult if s.neg >= r.hai_thresh else 1)
        else:
            region = REGION_GRAD_DEC
            rate = (rate * max(ONE16 - ((r.beta * g) >> FRAC16), 0)) >> FRAC16
        s.rate = min(max(rate, r.min_rate), r.max_rate)
        return TimelyOutcome(rtt, g, region, s.rate)
