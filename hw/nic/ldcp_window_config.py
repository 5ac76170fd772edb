"""Configuration of the LDCP window engine (PAWA, the sub-one-packet window and its timer).

One frozen, validated :class:`LdcpWindowConfig` in user units (packets, µs, Hz, bytes)
configures the RTL (:mod:`hw.nic.ldcp_window`), the golden model
(:mod:`sim.models.ldcp_window`), the Verilog export and the tests.  The conversion to hardware
units happens once, in :meth:`LdcpWindowConfig.registers`.

Fixed-point formats (``docs/ldcp-window.md`` has the derivations):

``cw``
    UQ16.16 packets (32 bits).  Range ``[gamma, cw_max]`` with ``gamma >= 2**-8`` and
    ``cw_max <= 65535``; resolution ``2**-16`` packets.  16 integer bits cover a BDP of 65535
    packets (400 Gb/s x 1.3 ms at 1 KB); 16 fraction bits make ``gamma`` exact and resolve the
    per-ACK increase ``alpha / cw`` to 1.5e-5 packets.
``alpha``, ``beta``, ``gamma``
    UQ1.16 (17 bits), round to nearest; ``alpha, beta`` in ``[2**-16, 1]``.
``cw_max``, ``cw_init``
    UQ16.16, like ``cw`` (``cw_max`` rounded down, so the cap never exceeds the user value).
``rtt``
    Cycles of the clock, 24 bits (``round(rtt_us * clk_hz / 1e6)`` in ``[1, 2**24 - 1]``).
``mtu``
    Bytes, 14 bits.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..lib.csr import Register, RegisterMap
from ..params import (
    BlockConfig,
    bits_for,
    check_choice,
    check_int,
    check_real,
    check_time_us,
    us_to_cycles,
)

__all__ = [
    "LdcpWindowConfig", "LdcpWindowRegisters", "FRAC_BITS", "CW_WIDTH", "PARAM_WIDTH",
    "RTT_WIDTH", "MTU_WIDTH", "INFLIGHT_WIDTH", "UPDATE_LATENCY", "GAMMAS", "ONE",
    "RECIP_INDEX_BITS", "RECIP_INTERP_BITS", "RECIP_BITS", "recip_table", "LdcpWindowReg",
    "CSR_ADDR_WIDTH", "CSR_DATA_WIDTH",
]

#: Fraction bits of the window and of the parameters.
FRAC_BITS = 16
#: 1.0 packet in UQ16.16.
ONE = 1 << FRAC_BITS
#: Width of ``cw`` (UQ16.16).
CW_WIDTH = 32
#: Width of ``alpha``, ``beta``, ``gamma`` (UQ1.16).
PARAM_WIDTH = FRAC_BITS + 1
#: Width of the RTT register (cycles).
RTT_WIDTH = 24
#: Width of the MTU register (bytes).
MTU_WIDTH = 14
#: Width of the bytes-in-flight input of the send gate.
INFLIGHT_WIDTH = 32
#: Cycles from the edge that issues an update into the datapath to the edge that commits its
#: result (the datapath's pipeline depth).  The RTL checks its own stage count against it.
UPDATE_LATENCY = 12

#: Allowed values of gamma (both the sub-1 increase step and the window floor): powers of two
#: from 1/2 to 1/256.  The draft names 1/4, 1/8, 1/16 as typical.
GAMMAS = tuple(2.0 ** -k for k in range(1, 9))

#: Reciprocal table: 2**RECIP_INDEX_BITS segments of the mantissa range [1, 2), linear
#: interpolation with the next RECIP_INTERP_BITS mantissa bits, values UQ1.RECIP_BITS scaled so
#: that 2**RECIP_BITS is 1.0 (range (2**17, 2**18], 19 bits).
RECIP_INDEX_BITS = 8
RECIP_INTERP_BITS = 10
RECIP_BITS = 18

#: word address width of the register port: registers at 0..6, the identification header
#: (hw/lib/csr.py) at 0x10..0x13
CSR_ADDR_WIDTH = 5
CSR_DATA_WIDTH = 32
#: block type in the header's ID register
BLOCK_TYPE = "LDWN"


class LdcpWindowReg(enum.IntEnum):
    """Register map of the single-flow wrapper (word addresses, 32-bit data).  A write takes
    the raw hardware value (low bits of the word); it is accepted only while the engine is idle
    (no update in flight or pending, no ACK offered), so every update sees one set of values.
    Only the reset values are validated by :class:`LdcpWindowConfig`."""
    ALPHA = 0   #: UQ1.16
    BETA = 1    #: UQ1.16
    GAMMA = 2   #: UQ1.16 (floor and sub-1 step)
    CW_MAX = 3  #: UQ16.16
    RTT = 4     #: cycles (24 bits)
    MTU = 5     #: bytes (14 bits)
    CW = 6      #: load the window (UQ16.16), clamped to [gamma, cw_max]; e.g. after fast start


_CLK_MIN, _CLK_MAX = 1_000_000, 1_000_000_000
_CW_MAX_LIMIT = 65535.0
_M_MAX = 32
_MTU_MIN, _MTU_MAX = 64, 9216


def recip_table() -> list[tuple[int, int]]:
    """The reciprocal ROM: for segment ``i`` of the mantissa ``x = 1 + i / 256``, the pair
    ``(T[i], D[i])`` with ``T[i] = round(2**18 / x_i)`` (19 bits: ``T[0] = 2**18``, so powers
    of two are exact) and the chord slope ``D[i] = T[i] - T[i + 1]`` (``T[256] = 2**17``).
    A design constant shared by the RTL (its ROM contents) and the golden model (the same
    lookup), like an LFSR polynomial; its accuracy is checked exhaustively against ``1 / x`` in
    ``tests/test_ldcp_window_model.py``."""
    segs = 1 << RECIP_INDEX_BITS
    full = 1 << RECIP_BITS

    def t(i: int) -> int:
        # round(2**18 * segs / (segs + i)), exact integer rounding (half up)
        num, den = full * segs, segs + i
        return (2 * num + den) // (2 * den)

    return [(t(i), t(i) - t(i + 1)) for i in range(segs)]


@dataclass(frozen=True)
class LdcpWindowRegisters:
    """Hardware values derived from a :class:`LdcpWindowConfig` (see the module docstring)."""
    alpha: int      # UQ1.16
    beta: int       # UQ1.16
    gamma: int      # UQ1.16
    m: int          # packets
    cw_max: int     # UQ16.16
    cw_init: int    # UQ16.16
    rtt: int        # cycles
    mtu: int        # bytes


@dataclass(frozen=True)
class LdcpWindowConfig(BlockConfig):
    """LDCP window engine configuration (draft-dai-tsvwg-pfc-free-congestion-control-00 §2.2).

    ``alpha``, ``beta``
        PAWA constants, ``2**-16 <= alpha, beta <= 1``: an unmarked ACK confirming ``n``
        packets adds ``n * alpha / cw``, a marked one removes ``n * beta`` (``cw >= 1``).
    ``gamma``
        Sub-1 increase step and window floor: a power of two from 1/2 to 1/256 (the draft's
        typical values are 1/4, 1/8, 1/16).  ``eta`` is the draft's fixed 1/2.
    ``m``
        Delayed-ACK limit of the receiver, ``1 <= m <= 32``: the most packets one ACK confirms.
        ACKs with a larger ``n`` are taken as ``n = m`` (saturation, documented).
    ``cw_max``
        Window cap in packets, ``1 <= cw_max <= 65535`` (e.g. the BDP).
    ``cw_init``
        Window at reset, ``gamma <= cw_init <= cw_max`` (the transport will load the fast-start
        result; see ``docs/ldcp-window.md``).
    ``rtt_us``, ``clk_hz``
        Base RTT of the sub-1 pacing timer (period ``RTT / cw``), and the clock frequency:
        ``1 <= round(rtt_us * clk_hz / 1e6) <= 2**24 - 1`` cycles.
    ``mtu``
        Bytes per packet for the send gate ``bytes_in_flight < cw * mtu``, 64..9216.
    """

    alpha: float = 1.0
    beta: float = 0.5
    gamma: float = 0.125
    m: int = 8
    cw_max: float = 1024.0
    cw_init: float = 16.0
    rtt_us: float = 10.0
    clk_hz: int = 156_250_000
    mtu: int = 1024

    # -- construction -----------------------------------------------------------------------
    def __post_init__(self):
        lsb = 2.0 ** -FRAC_BITS
        check_real(self, "alpha", self.alpha, lsb, 1.0)
        check_real(self, "beta", self.beta, lsb, 1.0)
        check_choice(self, "gamma", self.gamma, GAMMAS)
        check_int(self, "m", self.m, 1, _M_MAX)
        check_real(self, "cw_max", self.cw_max, 1.0, _CW_MAX_LIMIT)
        check_real(self, "cw_init", self.cw_init, self.gamma, self.cw_max)
        check_int(self, "clk_hz", self.clk_hz, _CLK_MIN, _CLK_MAX)
        check_time_us(self, "rtt_us", self.rtt_us, self.clk_hz, 1, (1 << RTT_WIDTH) - 1)
        check_int(self, "mtu", self.mtu, _MTU_MIN, _MTU_MAX)


    # -- derived widths -----------------------------------------------------------------------
    @property
    def n_width(self) -> int:
        """Width of the ``n`` field of an ACK (holds ``m``)."""
        return bits_for(self.m)

    @property
    def n_max_event(self) -> int:
        """Most packets one datapath event can carry: the ACKs coalesced while an update is in
        flight (at most one ACK per cycle during ``UPDATE_LATENCY`` cycles, ``m`` packets each)."""
        return UPDATE_LATENCY * self.m

    @property
    def event_n_width(self) -> int:
        return bits_for(self.n_max_event)

    @property
    def phase_width(self) -> int:
        """Width of the sub-1 phase accumulator and its threshold (holds ``rtt * 2**16``)."""
        return RTT_WIDTH + FRAC_BITS + 1

    def timer_gate_init(self) -> dict[str, int]:
        """Reset values of the timer's and the gate's pipeline registers (from ``cw_init``)."""
        r = self.registers()
        frac = r.cw_init & (ONE - 1)
        prod = r.cw_init * r.mtu
        return {
            "cw_d": frac,
            "sub1_d": int(r.cw_init < ONE),
            "thr": ((r.rtt << FRAC_BITS) - frac) & ((1 << self.phase_width) - 1),
            "gate_lo": (r.cw_init & ((1 << 18) - 1)) * r.mtu,
            "gate_hi": (r.cw_init >> 18) * r.mtu,
            "gate_sub1": int(r.cw_init < ONE),
            "win_bytes": (prod + ONE - 1) >> FRAC_BITS,
        }

    # -- the single user-unit -> hardware conversion ---------------------------------------------
    def register_map(self, name: str = "ldcp_window") -> RegisterMap:
        """The register map (addresses of :class:`LdcpWindowReg`) with this configuration's
        reset values: the one declaration the RTL, the model, the docs and SystemRDL use."""
        r = self.registers()
        one = [
            ("ALPHA", 17, r.alpha, "PAWA additive increase alpha, UQ1.16"),
            ("BETA", 17, r.beta, "PAWA multiplicative decrease beta, UQ1.16"),
            ("GAMMA", 17, r.gamma, "sub-1 step and window floor gamma, UQ1.16"),
            ("CW_MAX", CW_WIDTH, r.cw_max, "window ceiling, UQ16.16 packets"),
            ("RTT", RTT_WIDTH, r.rtt, "base RTT, cycles"),
            ("MTU", MTU_WIDTH, r.mtu, "bytes"),
            ("CW", CW_WIDTH, r.cw_init, "the window, UQ16.16 packets; a write loads it, "
             "clamped to [GAMMA, CW_MAX]"),
        ]
        regs = tuple(Register.single(n, w, v, desc=d, addr=LdcpWindowReg[n])
                     for n, w, v, d in one)
        return RegisterMap(name, regs, BLOCK_TYPE, version=(1, 0), data_width=CSR_DATA_WIDTH,
                           desc="LDCP window engine (one flow)")

    def registers(self) -> LdcpWindowRegisters:
        """Fixed-point values: alpha, beta, gamma UQ1.16 rounded to nearest; cw_max UQ16.16
        rounded down; cw_init UQ16.16 rounded to nearest (at most cw_max); RTT in cycles
        rounded to nearest."""
        return LdcpWindowRegisters(
            alpha=round(self.alpha * ONE),
            beta=round(self.beta * ONE),
            gamma=round(self.gamma * ONE),
            m=self.m,
            cw_max=int(self.cw_max * ONE),
            cw_init=min(round(self.cw_init * ONE), int(self.cw_max * ONE)),
            rtt=us_to_cycles(self.rtt_us, self.clk_hz),
            mtu=self.mtu,
        )

    # -- serialisation (tests pass configurations to cocotb through the environment) -----------
