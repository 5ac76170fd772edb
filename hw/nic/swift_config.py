"""Configuration of the Swift window engine (Kumar et al., SIGCOMM 2020).

One frozen, validated :class:`SwiftConfig` configures the bit-exact golden model
(:mod:`sim.models.swift`), the network simulator's Swift hosts and, later, the RTL.  Knobs are in
the paper's names and user units (µs, packets, fractions); :meth:`SwiftConfig.registers`
converts them once to hardware units.

Fixed-point formats (``docs/swift.md``, "Formats"):

- windows ``fcwnd``, ``ecwnd`` (fabric and endpoint) and every window knob: UQ16.16 packets
  (``CW_FRAC`` = 16; ``2**16`` = one packet), saturating at ``[min_cwnd, max_cwnd]``.
- delays and targets: cycles of ``clk_hz``, ``delay_width`` bits, saturating; timestamps are
  ``TS_BITS``-bit counters compared modulo ``2**TS_BITS``.
- ``ai``: UQ8.16 packets; ``beta`` and ``max_mdf``: UQ0.16.
- flow-based scaling ``fs(cwnd) = clamp(alpha / sqrt(cwnd) + beta', 0, fs_range)`` is a ROM
  of ``FS_ENTRIES`` delays in cycles indexed by the window's floating-point form (the position
  of its leading one and the next ``FS_MANT`` bits); each entry is the formula at its bucket's
  lower edge (the largest target of the bucket), rounded to a cycle.
- pacing delay ``RTT / cwnd`` (cwnd < 1): cycles, ``PACE_BITS`` bits, saturating.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..params import (
    BlockConfig,
    ConfigError,
    check_int,
    check_real,
    check_time_us,
    us_to_cycles,
)

__all__ = ["SwiftConfig", "SwiftRegisters", "CW_FRAC", "CW_ONE", "CW_BITS", "FRAC16", "ONE16",
           "FS_MANT", "FS_ENTRIES", "TS_BITS", "PACE_BITS", "fs_index"]

CW_FRAC = 16            #: windows: UQ16.16 packets
CW_ONE = 1 << CW_FRAC
CW_BITS = 32
FRAC16 = 16             #: ai (UQ8.16), beta and max_mdf (UQ0.16)
ONE16 = 1 << FRAC16
FS_MANT = 4             #: mantissa bits of the flow-scaling ROM's index
FS_ENTRIES = CW_BITS << FS_MANT     #: 32 exponents x 16 mantissas = 512 entries
TS_BITS = 32
PACE_BITS = 32


def fs_index(cwnd: int) -> int:
    """The flow-scaling ROM index of a UQ16.16 window (>= 1): ``e * 2**FS_MANT + m``, ``e`` the
    position of the leading one, ``m`` the ``FS_MANT`` bits below it (zero-filled)."""
    e = cwnd.bit_length() - 1
    m = (cwnd >> (e - FS_MANT)) if e >= FS_MANT else (cwnd << (FS_MANT - e))
    return (e << FS_MANT) | (m & ((1 << FS_MANT) - 1))


@dataclass(frozen=True)
class SwiftRegisters:
    """Hardware-unit values derived from a :class:`SwiftConfig`."""
    base_target: int       #: cycles
    hop_scale: int         #: cycles per hop
    endpoint_target: int   #: cycles
    fs_rom: tuple          #: FS_ENTRIES cycles
    ai: int                #: UQ8.16 packets
    beta: int              #: UQ0.16
    mdf_floor: int         #: 2**16 - max_mdf (UQ0.16): the smallest factor of one cut
    min_cwnd: int          #: UQ16.16
    max_cwnd: int          #: UQ16.16
    init_cwnd: int         #: UQ16.16
    retx_reset: int
    delay_max: int         #: 2**delay_width - 1
    max_hops: int


@dataclass(frozen=True)
class SwiftConfig(BlockConfig):
    """Swift per-flow window engine.

    Elaboration-time parameters: ``clk_hz`` (Hz), ``delay_width`` (bits of a delay in cycles),
    ``max_hops`` (the largest hop count an ACK may report).

    Knobs (the paper's names): ``base_target_us`` (target fabric delay of a one-hop path),
    ``hop_scale_us`` (``h``, added per hop), ``fs_range_us`` / ``fs_min_cwnd`` /
    ``fs_max_cwnd`` (flow-based scaling: up to ``fs_range`` more delay as the window shrinks from
    ``fs_max_cwnd`` to ``fs_min_cwnd`` packets), ``endpoint_target_us`` (target of the endpoint
    delay, compared with the endpoint window ``ecwnd``), ``ai`` (packets per RTT), ``beta``
    (multiplicative decrease per unit of relative excess delay), ``max_mdf`` (largest cut),
    ``min_cwnd`` / ``max_cwnd`` / ``init_cwnd`` (packets; ``min_cwnd`` below 1 lets the window
    fall below one packet, paced at RTT / cwnd), ``retx_reset`` (consecutive retransmission
    timeouts after which the window drops to ``min_cwnd``).

    Defaults suit the simulator's 100 Gb/s fabric (base RTT 4-10 µs); ``docs/swift.md`` lists
    the paper's structure and how the values were chosen.
    """

    clk_hz: int = 156_250_000
    delay_width: int = 24
    max_hops: int = 15
    base_target_us: int | float = 8
    hop_scale_us: int | float = 1
    fs_range_us: int | float = 20
    fs_min_cwnd: float = 0.1
    fs_max_cwnd: float = 100.0
    endpoint_target_us: int | float = 10
    ai: float = 1.0
    beta: float = 0.8
    max_mdf: float = 0.5
    min_cwnd: float = 0.001
    max_cwnd: float = 256.0
    init_cwnd: float = 4.0
    retx_reset: int = 5

    def __post_init__(self):
        check_int(self, "clk_hz", self.clk_hz, 1_000_000, 2_000_000_000)
        check_int(self, "delay_width", self.delay_width, 12, 31)
        check_int(self, "max_hops", self.max_hops, 0, 255)
        dmax = (1 << self.delay_width) - 1
        note = f", delay_width {self.delay_width}"
        check_time_us(self, "base_target_us", self.base_target_us, self.clk_hz, 1, dmax,
                      note=note)
        check_time_us(self, "hop_scale_us", self.hop_scale_us, self.clk_hz, 0, dmax, zero=True,
                      note=note)
        check_time_us(self, "fs_range_us", self.fs_range_us, self.clk_hz, 0, dmax, zero=True,
                      note=note)
        check_time_us(self, "endpoint_target_us", self.endpoint_target_us, self.clk_hz, 1, dmax,
                      note=note)
        worst = (us_to_cycles(self.base_target_us, self.clk_hz)
                 + self.max_hops * us_to_cycles(self.hop_scale_us, self.clk_hz)
                 + us_to_cycles(self.fs_range_us, self.clk_hz))
        if worst > dmax:
            raise ConfigError(self, "fs_range_us", self.fs_range_us,
                              f"base_target + max_hops * hop_scale + fs_range <= {dmax} cycles "
                              f"(delay_width {self.delay_width}); it is {worst}")
        lo_w = 1 / CW_ONE
        check_real(self, "max_cwnd", self.max_cwnd, 1.0, (1 << (CW_BITS - CW_FRAC)) - 1)
        check_real(self, "min_cwnd", self.min_cwnd, lo_w, self.max_cwnd)
        check_real(self, "init_cwnd", self.init_cwnd, self.min_cwnd, self.max_cwnd)
        check_real(self, "fs_min_cwnd", self.fs_min_cwnd, lo_w, self.max_cwnd, lo_open=False)
        check_real(self, "fs_max_cwnd", self.fs_max_cwnd, self.fs_min_cwnd, 65535.0,
                   lo_open=True)
        check_real(self, "ai", self.ai, lo_w, 255.0)
        check_real(self, "beta", self.beta, 0.0, 1.0)
        check_real(self, "max_mdf", self.max_mdf, 0.0, 1.0)
        check_int(self, "retx_reset", self.retx_reset, 1, 255)

    # -- flow-based scaling (real numbers: used once, to fill the ROM) -------------------------
    def fs_us(self, cwnd: float) -> float:
        """The paper's flow-based scaling term in µs for a window of ``cwnd`` packets."""
        a = self.fs_range_us / (1 / math.sqrt(self.fs_min_cwnd) - 1 / math.sqrt(self.fs_max_cwnd))
        b = -a / math.sqrt(self.fs_max_cwnd)
        return max(0.0, min(a / math.sqrt(cwnd) + b, float(self.fs_range_us)))

    def _fs_rom(self) -> tuple:
        rom = []
        for i in range(FS_ENTRIES):
            e, m = i >> FS_MANT, i & ((1 << FS_MANT) - 1)
            lower = ((1 << FS_MANT) + m) * 2.0 ** (e - FS_MANT) / CW_ONE   # packets
            rom.append(us_to_cycles(self.fs_us(lower), self.clk_hz))
        return tuple(rom)

    # -- the single user-unit -> register conversion -------------------------------------------
    def registers(self) -> SwiftRegisters:
        def win(x):
            return max(round(x * CW_ONE), 1)
        return SwiftRegisters(
            base_target=us_to_cycles(self.base_target_us, self.clk_hz),
            hop_scale=us_to_cycles(self.hop_scale_us, self.clk_hz),
            endpoint_target=us_to_cycles(self.endpoint_target_us, self.clk_hz),
            fs_rom=self._fs_rom(),
            ai=round(self.ai * ONE16),
            beta=round(self.beta * ONE16),
            mdf_floor=ONE16 - round(self.max_mdf * ONE16),
            min_cwnd=win(self.min_cwnd),
            max_cwnd=win(self.max_cwnd),
            init_cwnd=win(self.init_cwnd),
            retx_reset=self.retx_reset,
            delay_max=(1 << self.delay_width) - 1,
            max_hops=self.max_hops,
        )
