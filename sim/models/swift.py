"""Bit-exact integer model of Swift's per-flow window engine (Kumar et al., SIGCOMM 2020).

Events: :meth:`SwiftModel.on_ack` (per ACK), :meth:`SwiftModel.on_timeout` (retransmission
timeout) and :meth:`SwiftModel.on_fast_recovery` (loss detected by a NAK).  Every value is an
integer in the formats of :mod:`hw.nic.swift_config`; rounding is floor everywhere (shifts,
floor divisions that a restoring divider computes exactly) and every result saturates.

Per ACK (``now``, ``fabric`` and ``endpoint`` delays in cycles, ``hops``, ``num_acked``):

1. ``rtt = fabric + endpoint`` (saturating): the sample that times the once-per-RTT guard and
   the pacing delay; ``can_decrease`` = no cut yet, or ``(now - t_last_decrease) mod 2**32 >=
   rtt``; the retransmission counter clears;
2. each window ``w`` (``fcwnd`` against ``target = base + hops * h + fs_rom[fs_index(fcwnd)]``
   with the fabric delay, ``ecwnd`` against ``endpoint_target`` with the endpoint delay):
   ``delay < target``: ``w += floor(ai * num_acked * 2**16 / w)`` if ``w >= 1`` packet, else
   ``w += ai * num_acked``; otherwise, if ``can_decrease``:
   ``ratio = floor(2**16 (delay - target) / delay)`` (16-bit quotient),
   ``w = w * max(2**16 - (beta * ratio >> 16), 2**16 - max_mdf) >> 16``; then ``w`` is clamped
   to ``[min_cwnd, max_cwnd]``;
3. ``cwnd = min(fcwnd, ecwnd)``; a cwnd smaller than before the event stamps
   ``t_last_decrease = now`` (strictly smaller: the paper's ``<=`` would restamp on every ACK
   of a window held at ``max_cwnd`` and so forbid every later cut);
4. ``pace = floor(rtt * 2**16 / cwnd)`` cycles (saturating at ``2**32 - 1``) if ``cwnd`` < 1
   packet, else 0: the gap between two packets of a sub-one window.

A timeout increments the retransmission counter: at ``retx_reset`` both windows drop to
``min_cwnd``; otherwise, if ``can_decrease``, both are cut by ``max_mdf``.  A fast recovery
clears the counter and cuts by ``max_mdf`` if ``can_decrease``.  Steps 3-4 follow each event.
"""

from __future__ import annotations

from dataclasses import dataclass

from hw.nic.swift_config import (
    CW_FRAC,
    CW_ONE,
    FRAC16,
    ONE16,
    PACE_BITS,
    TS_BITS,
    SwiftConfig,
    fs_index,
)
from sim.models.divider import udiv_sat

__all__ = ["SwiftModel", "SwiftState", "SwiftAck"]

TS_MASK = (1 << TS_BITS) - 1
CW_MAX_Q = 32          #: quotient bits of the increase division (a UQ16.16 result)


@dataclass
class SwiftState:
    fcwnd: int                  #: UQ16.16 packets
    ecwnd: int                  #: UQ16.16 packets
    rtt: int = 0                #: cycles: the last RTT sample
    t_last_decrease: int = 0    #: cycles (mod 2**32)
    decreased: bool = False     #: t_last_decrease holds a stamp
    retx: int = 0               #: consecutive retransmission timeouts
    pace: int = 0               #: cycles between packets while cwnd < 1 (0: window-limited)
    target: int = 0             #: cycles: the fabric target of the last ACK

    @property
    def cwnd(self) -> int:
        return min(self.fcwnd, self.ecwnd)


@dataclass(frozen=True)
class SwiftAck:
    now: int                    #: NIC receive stamp of the ACK, cycles (mod 2**32)
    fabric: int                 #: fabric delay, cycles
    endpoint: int = 0           #: endpoint delay, cycles
    hops: int = 1
    num_acked: int = 1


class SwiftModel:
    def __init__(self, cfg: SwiftConfig, registers=None):
        self.cfg = cfg
        self.r = registers if registers is not None else cfg.registers()
        self.state = SwiftState(fcwnd=self.r.init_cwnd, ecwnd=self.r.init_cwnd)

    # -- pieces ---------------------------------------------------------------------------------
    def target(self, hops: int, fcwnd: int) -> int:
        r = self.r
        t = r.base_target + min(hops, r.max_hops) * r.hop_scale + r.fs_rom[fs_index(fcwnd)]
        return min(t, r.delay_max)

    def _can_decrease(self, now: int) -> bool:
        s = self.state
        return not s.decreased or ((now - s.t_last_decrease) & TS_MASK) >= s.rtt

    def _clamp(self, w: int) -> int:
        return min(max(w, self.r.min_cwnd), self.r.max_cwnd)

    def _update(self, w: int, delay: int, target: int, n: int, can_decrease: bool) -> int:
        r = self.r
        if delay < target:
            if w >= CW_ONE:
                w += udiv_sat((r.ai * n) << CW_FRAC, w, CW_MAX_Q)
            else:
                w += r.ai * n
        elif can_decrease:
            ratio = udiv_sat((delay - target) << FRAC16, delay, FRAC16)
            f = max(ONE16 - ((r.beta * ratio) >> FRAC16), r.mdf_floor)
            w = (w * f) >> FRAC16
        return self._clamp(w)

    def _cut_both(self) -> None:
        s, r = self.state, self.r
        s.fcwnd = self._clamp((s.fcwnd * r.mdf_floor) >> FRAC16)
        s.ecwnd = self._clamp((s.ecwnd * r.mdf_floor) >> FRAC16)

    def _finish(self, now: int, prev: int) -> None:
        s = self.state
        cwnd = s.cwnd
        if cwnd < prev:
            s.t_last_decrease = now & TS_MASK
            s.decreased = True
        s.pace = udiv_sat(s.rtt << CW_FRAC, cwnd, PACE_BITS) if cwnd < CW_ONE else 0

    # -- events ---------------------------------------------------------------------------------
    def on_ack(self, ack: SwiftAck) -> SwiftState:
        s, r = self.state, self.r
        prev = s.cwnd
        fabric = min(ack.fabric, r.delay_max)
        endpoint = min(ack.endpoint, r.delay_max)
        s.rtt = min(fabric + endpoint, r.delay_max)
        can = self._can_decrease(ack.now)
        s.retx = 0
        s.target = self.target(ack.hops, s.fcwnd)
        s.fcwnd = self._update(s.fcwnd, fabric, s.target, ack.num_acked, can)
        s.ecwnd = self._update(s.ecwnd, endpoint, r.endpoint_target, ack.num_acked, can)
        self._finish(ack.now, prev)
        return s

    def on_timeout(self, now: int) -> SwiftState:
        s, r = self.state, self.r
        prev = s.cwnd
        s.retx = min(s.retx + 1, r.retx_reset)
        if s.retx >= r.retx_reset:
            s.fcwnd = s.ecwnd = r.min_cwnd
        elif self._can_decrease(now):
            self._cut_both()
        self._finish(now, prev)
        return s

    def on_fast_recovery(self, now: int) -> SwiftState:
        s = self.state
        prev = s.cwnd
        s.retx = 0
        if self._can_decrease(now):
            self._cut_both()
        self._finish(now, prev)
        return s
