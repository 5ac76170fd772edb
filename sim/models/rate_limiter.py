"""Bit-exact model of the per-flow rate limiter (:mod:`hw.nic.rate_limiter`), one
:meth:`RateLimiterModel.step` per clock cycle.

One cycle: ``eligible`` (the output this cycle) is ``credit >= 0`` per flow; a send of L bytes
for flow f takes L bytes (the credit saturates at ``-2**(credit_width - 1)``, reachable only by
sending ineligible flows) and latches f's current rate register into its ``inc``; then every
flow earns its ``inc`` (the credit never rises above ``max(credit, burst_bytes)``); a rate
write for flow f (clamped to [min, line]) updates f's rate register, used from f's next send on.
So a packet of L bytes sent at cycle t with no credit left makes the flow eligible again at
cycle ``t + ceil(L * 2**24 / inc)``: the pacing rule ``now + bytes / Rc``, rounded up.
"""

from __future__ import annotations

from hw.nic.rate_limiter_config import CREDIT_FRAC, RateLimiterConfig

__all__ = ["RateLimiterModel"]


class RateLimiterModel:
    def __init__(self, cfg: RateLimiterConfig):
        self.cfg = cfg
        f = cfg.flows
        self.rate = [cfg.max_rate] * f
        self.inc = [cfg.inc_for(cfg.max_rate)] * f
        self.credit = [0] * f
        self.cap = cfg.burst_bytes << CREDIT_FRAC
        self.floor = -(1 << (cfg.credit_width - 1))    #: credit saturates here (never wraps)
        self.cycle = 0
        self.min_rate, self.max_rate = cfg.min_rate, cfg.max_rate
        # the register file of RateLimiterConfig.register_map (the RTL's csr port)
        self.csr = cfg.register_map().model()

    def write(self, addr: int, value: int) -> None:
        """A register write, applied after this cycle's :meth:`step` (the RTL applies it at
        the edge that takes it)."""
        if self.csr.write(addr, value) is not None:
            self.min_rate, self.max_rate = self.csr["MIN_RATE"], self.csr["MAX_RATE"]
            self.cap = self.csr["BURST"] << CREDIT_FRAC

    def read(self, addr: int) -> int:
        return self.csr.read(addr)

    def eligible(self) -> int:
        return sum(1 << i for i, c in enumerate(self.credit) if c >= 0)

    def step(self, send: tuple[int, int] | None = None,
             rate: tuple[int, int] | None = None) -> None:
        cfg = self.cfg
        for i in range(cfg.flows):
            base = self.credit[i]
            if send is not None and send[0] == i:
                base = max(base - (send[1] << CREDIT_FRAC), self.floor)
                self.inc[i] = cfg.inc_for(self.rate[i])
            self.credit[i] = min(base + self.inc[i], max(base, self.cap))
        if rate is not None and rate[0] < cfg.flows:
            f, r = rate
            # (the RTL's clamp: below the minimum first, then above the maximum)
            self.rate[f] = (self.min_rate if r < self.min_rate
                            else self.max_rate if r > self.max_rate else r)
        self.cycle += 1
