"""Float reference of Swift (Kumar et al., "Swift: Delay is Simple and Effective for Congestion
Control in the Datacenter", SIGCOMM 2020), written from the paper's Algorithm 1 and §3, in real
numbers.

Independent of the integer model (:mod:`sim.models.swift`): no shared code, delays in µs,
windows in packets.  Target fabric delay = base + hops * h + flow-based scaling
``max(0, min(alpha / sqrt(fcwnd) + beta', fs_range))`` with ``alpha = fs_range / (1 /
sqrt(fs_min_cwnd) - 1 / sqrt(fs_max_cwnd))`` and ``beta' = -alpha / sqrt(fs_max_cwnd)``; the
endpoint window is the same AIMD against its own target; the effective window is the smaller.
Additive increase ``ai / cwnd`` per acked packet (``ai`` when cwnd < 1), multiplicative decrease
``max(1 - beta (delay - target) / delay, 1 - max_mdf)`` at most once per RTT, pacing delay
``RTT / cwnd`` below one packet, timeouts and fast recovery as in Algorithm 1.  One deliberate
difference from the pseudocode, shared with the model: the last-decrease time is stamped when
the window got strictly smaller (``docs/swift.md``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["SwiftRefParams", "SwiftRef"]


@dataclass(frozen=True)
class SwiftRefParams:
    base_target_us: float = 8.0
    hop_scale_us: float = 1.0
    fs_range_us: float = 20.0
    fs_min_cwnd: float = 0.1
    fs_max_cwnd: float = 100.0
    endpoint_target_us: float = 10.0
    ai: float = 1.0
    beta: float = 0.8
    max_mdf: float = 0.5
    min_cwnd: float = 0.001
    max_cwnd: float = 256.0
    init_cwnd: float = 4.0
    retx_reset: int = 5


class SwiftRef:
    def __init__(self, p: SwiftRefParams):
        self.p = p
        self.fcwnd = self.ecwnd = p.init_cwnd
        self.rtt = 0.0
        self.t_last_decrease = None
        self.retx = 0
        self.pacing_delay = 0.0

    @property
    def cwnd(self) -> float:
        return min(self.fcwnd, self.ecwnd)

    def target_delay(self, hops: int) -> float:
        p = self.p
        alpha = p.fs_range_us / (1 / math.sqrt(p.fs_min_cwnd) - 1 / math.sqrt(p.fs_max_cwnd))
        beta = -alpha / math.sqrt(p.fs_max_cwnd)
        fs = max(0.0, min(alpha / math.sqrt(self.fcwnd) + beta, p.fs_range_us))
        return p.base_target_us + hops * p.hop_scale_us + fs

    def _can_decrease(self, now: float) -> bool:
        return self.t_last_decrease is None or now - self.t_last_decrease >= self.rtt

    def _aimd(self, cwnd: float, delay: float, target: float, num_acked: int,
              can_decrease: bool) -> float:
        p = self.p
        if delay < target:
            cwnd += p.ai / cwnd * num_acked if cwnd >= 1 else p.ai * num_acked
        elif can_decrease:
            cwnd *= max(1 - p.beta * (delay - target) / delay, 1 - p.max_mdf)
        return min(max(cwnd, p.min_cwnd), p.max_cwnd)

    def _end(self, now: float, prev: float) -> None:
        if self.cwnd < prev:
            self.t_last_decrease = now
        self.pacing_delay = self.rtt / self.cwnd if self.cwnd < 1 else 0.0

    def on_ack(self, now: float, fabric_us: float, endpoint_us: float = 0.0, hops: int = 1,
               num_acked: int = 1) -> float:
        prev = self.cwnd
        self.rtt = fabric_us + endpoint_us
        can = self._can_decrease(now)
        self.retx = 0
        target = self.target_delay(hops)
        self.fcwnd = self._aimd(self.fcwnd, fabric_us, target, num_acked, can)
        self.ecwnd = self._aimd(self.ecwnd, endpoint_us, self.p.endpoint_target_us, num_acked,
                                can)
        self._end(now, prev)
        return self.cwnd

    def _cut(self) -> None:
        p = self.p
        self.fcwnd = min(max(self.fcwnd * (1 - p.max_mdf), p.min_cwnd), p.max_cwnd)
        self.ecwnd = min(max(self.ecwnd * (1 - p.max_mdf), p.min_cwnd), p.max_cwnd)

    def on_timeout(self, now: float) -> float:
        prev = self.cwnd
        self.retx += 1
        if self.retx >= self.p.retx_reset:
            self.fcwnd = self.ecwnd = self.p.min_cwnd
        elif self._can_decrease(now):
            self._cut()
        self._end(now, prev)
        return self.cwnd

    def on_fast_recovery(self, now: float) -> float:
        prev = self.cwnd
        self.retx = 0
        if self._can_decrease(now):
            self._cut()
        self._end(now, prev)
        return self.cwnd
