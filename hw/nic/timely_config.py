"""Configuration of the TIMELY rate computation engine (Mittal et al., SIGCOMM 2015).

One frozen, validated :class:`TimelyConfig` configures the bit-exact golden model
(:mod:`sim.models.timely`), the network simulator's TIMELY hosts and, later, the RTL.  Knobs are
in the paper's names and user units (µs, Mb/s, bytes, fractions); :meth:`TimelyConfig.registers`
converts them once to hardware units (cycles at ``clk_hz``, fixed-point words).

Fixed-point formats (``docs/timely.md``, "Formats"):

- times (timestamps, RTT, ``T_low``, ``T_high``, ``minRTT``): cycles of ``clk_hz``; timestamps
  are ``TS_BITS``-bit counters compared modulo ``2**TS_BITS``, an RTT is ``rtt_width`` bits and
  saturates at ``2**rtt_width - 1``.
- rate ``R`` and every rate knob: UQ(r).10 Mb/s (units of 2**-10 Mb/s, the rate limiter's
  format, so the rate register drives :mod:`hw.nic.rate_limiter` directly).
- ``rtt_diff``: signed cycles with ``DIFF_FRAC`` fraction bits, saturating at
  ``±(2**(rtt_width + DIFF_FRAC) - 1)``.
- normalized gradient: signed Q.``GRAD_FRAC`` (``2**16`` = 1.0), saturating at ``±GRAD_MAX``.
- ``alpha`` (EWMA weight) and ``beta``: UQ0.16 (``2**16`` = 1.0).
- ``1 / minRTT``: ``inv_min_rtt = round(2**INV_FRAC / minRTT_cycles)`` (the normalisation is a
  multiply, not a divide).
- segment serialization: ``ser_per_byte`` cycles per byte at the line rate, UQ8.24.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..params import (
    BlockConfig,
    ConfigError,
    bits_for,
    check_int,
    check_real,
    check_time_us,
    us_to_cycles,
)

__all__ = ["TimelyConfig", "TimelyRegisters", "RATE_FRAC", "FRAC16", "ONE16", "DIFF_FRAC",
           "GRAD_FRAC", "GRAD_MAX", "INV_FRAC", "SER_FRAC", "TS_BITS", "APP_FRAC",
           "SEGMENT_MIN", "SEGMENT_MAX"]

RATE_FRAC = 10          #: rates in units of 2**-10 Mb/s (as the rate limiter)
FRAC16 = 16             #: alpha, beta and the multiplicative factors: UQ0.16
ONE16 = 1 << FRAC16
DIFF_FRAC = 8           #: rtt_diff: signed cycles with 8 fraction bits
GRAD_FRAC = 16          #: normalized gradient: signed Q.16
GRAD_MAX = (1 << 20) - 1    #: |gradient| saturates at ~16 (a 16x RTT change per minRTT)
INV_FRAC = 32           #: 1/minRTT as round(2**32 / minRTT_cycles)
SER_FRAC = 24           #: cycles per byte at the line rate, UQ8.24
TS_BITS = 32            #: NIC timestamp counters (differences modulo 2**32)
APP_FRAC = 40           #: application-limited threshold constant, UQ0.40
SEGMENT_MIN = 16 * 1024     #: the paper's segment sizes: 16 KB ...
SEGMENT_MAX = 64 * 1024     #: ... to 64 KB


@dataclass(frozen=True)
class TimelyRegisters:
    """Hardware-unit values derived from a :class:`TimelyConfig`."""
    t_low: int             #: cycles
    t_high: int            #: cycles
    min_rtt: int           #: cycles
    inv_min_rtt: int       #: round(2**INV_FRAC / min_rtt)
    alpha: int             #: UQ0.16, 1 ... 2**16
    beta: int              #: UQ0.16, 0 ... 2**16
    delta: int             #: UQ.10 Mb/s
    hai_thresh: int        #: completions with gradient <= 0 before HAI
    hai_mult: int          #: N of the HAI step N * delta
    min_rate: int          #: UQ.10 Mb/s
    max_rate: int          #: UQ.10 Mb/s
    init_rate: int         #: UQ.10 Mb/s
    ser_per_byte: int      #: UQ8.24 cycles per byte at the line rate
    app_k: int             #: UQ0.40: bytes per (rate unit x cycle) x app_limit_pct / 100
    rtt_max: int           #: 2**rtt_width - 1
    segment_bytes: int


@dataclass(frozen=True)
class TimelyConfig(BlockConfig):
    """TIMELY per-flow rate computation.

    Elaboration-time parameters: ``clk_hz`` (Hz), ``line_rate_mbps`` (the NIC line rate: the
    segment's serialization is subtracted from the completion time at this rate, and it is the
    default ``max_rate_mbps``), ``rtt_width`` (bits of an RTT in cycles).

    Knobs (the paper's names): ``segment_bytes`` (16-64 KB, the unit a completion acknowledges),
    ``ewma_alpha`` (weight of the new RTT difference), ``beta`` (multiplicative decrease
    factor), ``delta_mbps`` (additive increment), ``t_low_us``/``t_high_us`` (RTT thresholds;
    ``t_low_us == t_high_us`` is the queue-size form), ``min_rtt_us`` (the gradient's
    normaliser), ``hai_thresh`` (completions with a non-positive gradient before hyperactive
    increase), ``hai_mult`` (N: HAI adds N * delta), ``min_rate_mbps``/``max_rate_mbps`` (rate
    bounds; max 0 = line rate), ``init_rate_mbps`` (0 = the max rate), ``app_limit_pct`` (the
    rate increases only if the application sent at least this % of the target rate over the
    completion interval; 0 disables the rule).

    Defaults are the paper's 10 Gb/s testbed values (alpha 0.875, beta 0.8, delta 10 Mb/s,
    T_low 50 µs, T_high 500 µs, minRTT 20 µs, HAI after 5 completions with N = 5, 80 %
    application-limited rule) at a 100 Gb/s line rate.
    """

    clk_hz: int = 156_250_000
    line_rate_mbps: int = 100_000
    rtt_width: int = 24
    segment_bytes: int = 16 * 1024
    ewma_alpha: float = 0.875
    beta: float = 0.8
    delta_mbps: int | float = 10
    t_low_us: int | float = 50
    t_high_us: int | float = 500
    min_rtt_us: int | float = 20
    hai_thresh: int = 5
    hai_mult: int = 5
    min_rate_mbps: int | float = 10
    max_rate_mbps: int | float = 0
    init_rate_mbps: int | float = 0
    app_limit_pct: int = 80

    def __post_init__(self):
        check_int(self, "clk_hz", self.clk_hz, 1_000_000, 2_000_000_000)
        check_int(self, "line_rate_mbps", self.line_rate_mbps, 1, 1_600_000)
        check_int(self, "rtt_width", self.rtt_width, 12, 31)
        check_int(self, "segment_bytes", self.segment_bytes, SEGMENT_MIN, SEGMENT_MAX)
        check_real(self, "ewma_alpha", self.ewma_alpha, 0.0, 1.0, lo_open=True)
        if round(self.ewma_alpha * ONE16) < 1:
            raise ConfigError(self, "ewma_alpha", self.ewma_alpha,
                              f"2**-{FRAC16} <= ewma_alpha <= 1 (UQ0.16)")
        check_real(self, "beta", self.beta, 0.0, 1.0)
        for name in ("max_rate_mbps", "min_rate_mbps", "init_rate_mbps", "delta_mbps"):
            check_real(self, name, getattr(self, name), 0.0, float(self.line_rate_mbps))
        hi = self.max_rate          # after the checks: inf/NaN must fail as a ConfigError
        if self.min_rate < 1 or self.min_rate > hi:
            raise ConfigError(self, "min_rate_mbps", self.min_rate_mbps,
                              f"2**-{RATE_FRAC} Mb/s <= min_rate_mbps <= the max rate "
                              f"(max_rate_mbps, or line_rate_mbps if 0)")
        if self.init_rate_mbps and not self.min_rate <= self.init_rate <= hi:
            raise ConfigError(self, "init_rate_mbps", self.init_rate_mbps,
                              "min_rate_mbps <= init_rate_mbps <= the max rate (0 = max)")
        rtt_max = (1 << self.rtt_width) - 1
        t_high = check_time_us(self, "t_high_us", self.t_high_us, self.clk_hz, 1, rtt_max,
                               note=f", rtt_width {self.rtt_width}")
        t_low = check_time_us(self, "t_low_us", self.t_low_us, self.clk_hz, 1, rtt_max,
                              note=f", rtt_width {self.rtt_width}")
        if t_low > t_high:
            raise ConfigError(self, "t_low_us", self.t_low_us,
                              f"t_low_us <= t_high_us (= {self.t_high_us})")
        check_time_us(self, "min_rtt_us", self.min_rtt_us, self.clk_hz, 1, rtt_max,
                      note=f", rtt_width {self.rtt_width}")
        check_int(self, "hai_thresh", self.hai_thresh, 1, 255)
        check_int(self, "hai_mult", self.hai_mult, 1, 255)
        check_int(self, "app_limit_pct", self.app_limit_pct, 0, 100)

    # -- derived --------------------------------------------------------------------------------
    @property
    def max_rate(self) -> int:
        return round((self.max_rate_mbps or self.line_rate_mbps) * (1 << RATE_FRAC))

    @property
    def min_rate(self) -> int:
        return round(self.min_rate_mbps * (1 << RATE_FRAC))

    @property
    def init_rate(self) -> int:
        return round(self.init_rate_mbps * (1 << RATE_FRAC)) if self.init_rate_mbps \
            else self.max_rate

    @property
    def rate_width(self) -> int:
        return bits_for(self.line_rate_mbps << RATE_FRAC)

    # -- the single user-unit -> register conversion -------------------------------------------
    def registers(self) -> TimelyRegisters:
        min_rtt = us_to_cycles(self.min_rtt_us, self.clk_hz)
        # bytes sent by one rate unit (2**-10 Mb/s) in one cycle = 1e6 / (8 * 1024 * clk_hz)
        app_k = round(self.app_limit_pct / 100 * 1_000_000 * (1 << APP_FRAC)
                      / (8 * (1 << RATE_FRAC) * self.clk_hz))
        return TimelyRegisters(
            t_low=us_to_cycles(self.t_low_us, self.clk_hz),
            t_high=us_to_cycles(self.t_high_us, self.clk_hz),
            min_rtt=min_rtt,
            inv_min_rtt=round((1 << INV_FRAC) / min_rtt),
            alpha=round(self.ewma_alpha * ONE16),
            beta=round(self.beta * ONE16),
            delta=round(self.delta_mbps * (1 << RATE_FRAC)),
            hai_thresh=self.hai_thresh,
            hai_mult=self.hai_mult,
            min_rate=self.min_rate,
            max_rate=self.max_rate,
            init_rate=self.init_rate,
            ser_per_byte=round(8 * self.clk_hz * (1 << SER_FRAC)
                               / (self.line_rate_mbps * 1_000_000)),
            app_k=app_k,
            rtt_max=(1 << self.rtt_width) - 1,
            segment_bytes=self.segment_bytes,
        )
