"""Float reference of TIMELY (Mittal et al., "TIMELY: RTT-based Congestion Control for the
Datacenter", SIGCOMM 2015), written from the paper's Algorithm 1 and §3-§5, in real numbers.

Independent of the integer model (:mod:`sim.models.timely`): no shared code, times in µs, rates
in Mb/s.  ``RTT = t_completion - t_send - seg_size / line_rate`` (§3.1); per completion the
EWMA-filtered RTT difference normalised by minRTT, then the T_low / T_high / gradient rules with
hyperactive increase after ``hai_thresh`` completions with a non-positive gradient (§4.3), the
application-limited rule (§5: increase only if the application sends above ``app_limit_pct`` %
of the target rate) and the rate bounds.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TimelyRefParams", "TimelyRef"]


@dataclass(frozen=True)
class TimelyRefParams:
    line_rate_mbps: float = 100_000.0
    ewma_alpha: float = 0.875
    beta: float = 0.8
    delta_mbps: float = 10.0
    t_low_us: float = 50.0
    t_high_us: float = 500.0
    min_rtt_us: float = 20.0
    hai_thresh: int = 5
    hai_mult: int = 5
    min_rate_mbps: float = 10.0
    max_rate_mbps: float = 100_000.0
    init_rate_mbps: float = 100_000.0
    app_limit_pct: float = 80.0


class TimelyRef:
    def __init__(self, p: TimelyRefParams):
        self.p = p
        self.rate = p.init_rate_mbps
        self.prev_rtt = None
        self.rtt_diff = 0.0
        self.neg = 0

    def rtt(self, t_send_us: float, t_completion_us: float, seg_bytes: int) -> float:
        """The paper's RTT: completion time minus the segment's serialization at line rate."""
        return max(t_completion_us - t_send_us - seg_bytes * 8 / self.p.line_rate_mbps, 0.0)

    def complete(self, new_rtt: float, app_rate_mbps: float | None = None) -> float:
        """One completion with RTT ``new_rtt`` µs; ``app_rate_mbps`` is what the application
        sent over the interval (None: not limited).  Returns the new rate in Mb/s."""
        p = self.p
        if self.prev_rtt is not None:
            new_rtt_diff = new_rtt - self.prev_rtt
            self.rtt_diff = (1 - p.ewma_alpha) * self.rtt_diff + p.ewma_alpha * new_rtt_diff
        self.prev_rtt = new_rtt
        gradient = self.rtt_diff / p.min_rtt_us
        self.neg = min(self.neg + 1, p.hai_thresh) if gradient <= 0 else 0
        may_increase = app_rate_mbps is None or app_rate_mbps >= p.app_limit_pct / 100 * self.rate
        if new_rtt < p.t_low_us:
            if may_increase:
                self.rate += p.delta_mbps
        elif new_rtt > p.t_high_us:
            self.rate *= 1 - p.beta * (1 - p.t_high_us / new_rtt)
        elif gradient <= 0:
            if may_increase:
                n = p.hai_mult if self.neg >= p.hai_thresh else 1
                self.rate += n * p.delta_mbps
        else:
            self.rate *= max(1 - p.beta * gradient, 0.0)
        self.rate = min(max(self.rate, p.min_rate_mbps), p.max_rate_mbps)
        return self.rate
