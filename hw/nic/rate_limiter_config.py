"""Configuration of the per-flow rate limiter (pacing at Rc, :mod:`hw.nic.rate_limiter`).

Token bucket with debt, per flow: every cycle a flow earns ``inc`` bytes of credit (its rate in
bytes per cycle), up to ``burst_bytes``; sending a packet of L bytes takes L bytes of credit; a
flow may send while its credit is >= 0.  With ``burst_bytes = 0`` this is exact per-packet pacing:
after a packet of L bytes sent at cycle t with no credit left, the next one may go at
``t + ceil(L / inc)`` cycles, i.e. ``now + bytes / Rc`` (the DCQCN paper's rate limiter, Zhu et
al., SIGCOMM 2015), with
no division in hardware.

Rate changes: a new rate (from the reaction point) is clamped to [``min_rate_mbps``,
``line_rate_mbps``] and takes effect at the flow's next packet: the credit earned after a send
accrues at the rate latched at that send, so the gap after a packet is ``bytes / Rc`` with the
Rc in force when it left (the pacing rule "next send time = now + packet bytes / Rc").

Fixed point: rates UQ(r).10 Mb/s (as the reaction point's ``Rc``); credit and ``inc`` in
bytes with ``CREDIT_FRAC = 24`` fraction bits; ``inc = (rate * conv) >> 24`` with the constant
``conv = floor(2**24 * 2**24 / 2**10 * 1e6 / (8 clk_hz))`` (a constant multiply when a rate is
latched, not per packet).  Both round down, so a flow never earns faster than its rate: a gap
is ``ceil(L * 2**24 / inc)``, between the ideal ``ceil(L / Rc)`` cycles and one more.

``burst_bytes = 0`` is the per-packet pacing rule exactly: the credit never exceeds 0, so each
gap is rounded up to a whole cycle on its own (a flow that always sends at once loses the
fraction of a cycle per packet).  ``burst_bytes > 0`` keeps up to that much credit, fractions
included, so a back-to-back flow's long-run rate is Rc (within the truncation of ``inc``) and
an idle flow may send ``burst_bytes`` at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..lib.csr import Register, RegisterMap
from ..params import BlockConfig, bits_for, check_int

__all__ = ["RateLimiterConfig", "CREDIT_FRAC", "RATE_FRAC"]

CREDIT_FRAC = 24
RATE_FRAC = 10
CONV_FRAC = 24


@dataclass(frozen=True)
class RateLimiterConfig(BlockConfig):
    flows: int = 4
    clk_hz: int = 156_250_000
    line_rate_mbps: int = 100_000
    min_rate_mbps: int = 1
    len_width: int = 14
    burst_bytes: int = 0

    def __post_init__(self):
        check_int(self, "flows", self.flows, 1, 64)
        check_int(self, "clk_hz", self.clk_hz, 1_000_000, 2_000_000_000)
        check_int(self, "line_rate_mbps", self.line_rate_mbps, 1, 1_600_000)
        check_int(self, "min_rate_mbps", self.min_rate_mbps, 1, self.line_rate_mbps,
                  hi_name="line_rate_mbps")
        check_int(self, "len_width", self.len_width, 6, 16)
        check_int(self, "burst_bytes", self.burst_bytes, 0, (1 << self.len_width) - 1,
                  hi_name="2**len_width - 1")
        if self.inc_for(self.min_rate) < 1:
            from ..params import ConfigError
            raise ConfigError(self, "min_rate_mbps", self.min_rate_mbps,
                              f"a rate that earns at least 2**-{CREDIT_FRAC} bytes per cycle")

    def register_map(self, name: str = "rate_limiter") -> RegisterMap:
        """The run-time registers (reset: this configuration's values).  The clock (the
        Mb/s -> bytes per cycle constant), the number of flows and the widths are structural."""
        rw = self.rate_width
        regs = (
            Register.single("MIN_RATE", rw, self.min_rate,
                            desc="lowest rate a rate write is clamped to, UQ.10 Mb/s (keep it "
                                 f"at or above 2**{RATE_FRAC} x 8 clk_hz / 2**{CREDIT_FRAC} "
                                 "/ 1e6 Mb/s so that a flow earns credit)"),
            Register.single("MAX_RATE", rw, self.max_rate,
                            desc="highest rate a rate write is clamped to (the line rate), "
                                 "UQ.10 Mb/s"),
            Register.single("BURST", self.len_width, self.burst_bytes,
                            desc="credit a flow may save, bytes (0: exact per-packet pacing)"),
        )
        return RegisterMap(name, regs, "RLIM", version=(1, 0),
                           desc=f"per-flow rate limiter, {self.flows} flows")

    # -- units ------------------------------------------------------------------------------
    @property
    def rate_width(self) -> int:
        return bits_for(self.line_rate_mbps << RATE_FRAC)

    @property
    def min_rate(self) -> int:
        return self.min_rate_mbps << RATE_FRAC

    @property
    def max_rate(self) -> int:
        return self.line_rate_mbps << RATE_FRAC

    @property
    def conv(self) -> int:
        """UQ.24 factor from UQ.10 Mb/s to UQ.24 bytes per cycle."""
        # rounded down (as ``inc`` is): a flow never earns faster than its rate
        return ((1 << (CONV_FRAC + CREDIT_FRAC - RATE_FRAC)) * 1_000_000) // (8 * self.clk_hz)

    def inc_for(self, rate: int) -> int:
        """Credit per cycle (UQ.24 bytes) of a rate register value."""
        return (rate * self.conv) >> CONV_FRAC

    @property
    def inc_width(self) -> int:
        return bits_for(self.inc_for(self.max_rate))

    @property
    def credit_width(self) -> int:
        """Signed credit: from -(2**len_width - 1) to burst_bytes + one cycle of earning."""
        return self.len_width + CREDIT_FRAC + 2


