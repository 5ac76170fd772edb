"""Configuration of the QCN congestion point (IEEE 802.1Qau) feedback, quantization and sampling.

One frozen, validated :class:`QcnCpConfig` in user units (bytes, a jitter fraction) configures
the RTL (:class:`hw.switch.qcn_cp.QcnCp`), the golden model (:class:`sim.models.qcn.CpModel`),
the float reference, the Verilog export and the tests.  The conversion to hardware constants
happens once, in :meth:`QcnCpConfig.registers` (``docs/qcn.md``, "Congestion point").
"""

from __future__ import annotations

from dataclasses import dataclass

from ..lfsr import LfsrParams
from ..lib.csr import Register, RegisterMap
from ..params import BlockConfig, ConfigError, bits_for, check_int, check_real

__all__ = ["QcnCpConfig", "QcnCpRegisters", "SAMPLE_TABLE", "QNTZ_BITS", "QNTZ_MAX",
           "QOFF_UNIT_SHIFT"]

#: Sampling interval in bytes indexed by ``qntzFb >> 3`` (IEEE 802.1Qau, the published table).
SAMPLE_TABLE = (153600, 76800, 51200, 38400, 30720, 25600, 22016, 18944)
QNTZ_BITS = 6
QNTZ_MAX = (1 << QNTZ_BITS) - 1
#: QOffset / QDelta of the CNM are in units of 2**6 = 64 bytes (floor), saturated to int16.
QOFF_UNIT_SHIFT = 6
#: the largest w the W register holds
W_MAX = 15


@dataclass(frozen=True)
class QcnCpRegisters:
    """Hardware constants derived from a :class:`QcnCpConfig`."""
    q_eq: int
    w: int
    fb_max: int          #: Q_eq * (2 w + 1), bytes: |Fb| saturates here
    qntz_mult: int       #: M = ceil(2**qntz_shift / fb_max)
    qntz_shift: int      #: K: ceil(|Fb| 63 / fb_max) = ((|Fb| 63 + fb_max - 1) M) >> K exactly
    sample_lo: tuple     #: per table index: round(S (1 - jitter)), bytes
    sample_span: tuple   #: per table index: round(2 jitter S), bytes
    first_interval: int  #: bytes before the first sample after reset (= SAMPLE_TABLE[0])


@dataclass(frozen=True)
class QcnCpConfig(BlockConfig):
    """QCN congestion point configuration (all elaboration-time constants).

    ``q_eq``
        Set point ``Q_eq``, bytes (IEEE 802.1Q CN MIB default 26000).
    ``w``
        Weight of ``Q_delta`` in ``Fb = -(Q_off + w Q_delta)`` (MIB default 2), integer 0..15.
    ``sample_table``
        Eight sampling intervals in bytes, indexed by ``qntzFb >> 3`` (default: the published
        table of IEEE 802.1Qau).  Entry 0 is also the interval while ``Fb >= 0``.
    ``jitter``
        Each sampling interval is drawn uniformly from ``S (1 - jitter) .. S (1 + jitter)``
        (default 0.15, the standard's ~0.85x-1.15x); 0 disables the randomization.
    ``draw_bits``
        Bits of the LFSR draw that scales the jitter (default 8).
    ``occ_width``
        Bits of the queue depth input, bytes (default 24).
    ``len_width``
        Bits of the frame length input, bytes (default 14).
    ``lfsr``
        Polynomial and seed of the jitter LFSR (advanced by ``draw_bits`` steps per sample).
    """

    q_eq: int = 26_000
    w: int = 2
    sample_table: tuple = SAMPLE_TABLE
    jitter: float = 0.15
    draw_bits: int = 8
    occ_width: int = 24
    len_width: int = 14
    lfsr: LfsrParams = LfsrParams()

    def __post_init__(self):
        check_int(self, "occ_width", self.occ_width, 8, 30)
        check_int(self, "len_width", self.len_width, 1, 16)
        check_int(self, "draw_bits", self.draw_bits, 1, 16)
        occ_max = (1 << self.occ_width) - 1
        check_int(self, "q_eq", self.q_eq, 1, occ_max,
                  hi_name=f"2**occ_width - 1 (occ_width {self.occ_width})")
        check_int(self, "w", self.w, 0, 15)
        if not isinstance(self.lfsr, LfsrParams):
            raise ConfigError(self, "lfsr", self.lfsr, "an LfsrParams")
        if self.lfsr.width < self.draw_bits:
            raise ConfigError(self, "lfsr", self.lfsr,
                              f"an LFSR at least draw_bits (= {self.draw_bits}) bits wide")
        table = self.sample_table
        if (not isinstance(table, (tuple, list)) or len(table) != 8
                or any(isinstance(s, bool) or not isinstance(s, int) or not 1 <= s <= occ_max
                       for s in table)):
            raise ConfigError(self, "sample_table", table,
                              f"8 integers 1 <= S <= 2**occ_width - 1 (= {occ_max}) bytes")
        object.__setattr__(self, "sample_table", tuple(table))
        check_real(self, "jitter", self.jitter, 0.0, 0.5)
        if max(table) * (1 + self.jitter) >= occ_max:
            raise ConfigError(self, "jitter", self.jitter,
                              f"max(sample_table) * (1 + jitter) < 2**occ_width - 1 (= {occ_max})")


    # -- derived widths -----------------------------------------------------------------------
    @property
    def fb_max(self) -> int:
        return self.q_eq * (2 * self.w + 1)

    @property
    def sum_width(self) -> int:
        """Signed width of ``Q_off + w Q_delta`` for any ``w`` the W register holds (0..15;
        never overflows)."""
        return self.occ_width + 1 + bits_for(W_MAX + 1) + 1

    @property
    def fb_max_width(self) -> int:
        """Bits of Fb_max = Q_eq (2 w + 1) for any Q_eq < 2**occ_width and w <= 15."""
        return bits_for(((1 << self.occ_width) - 1) * (2 * W_MAX + 1))

    @property
    def mult_width(self) -> int:
        """Bits of the quantizer's reciprocal M (< 128 Fb_max + 1, see :meth:`registers`)."""
        return bits_for(128 * ((1 << self.fb_max_width) - 1) + 1)

    # -- run-time registers --------------------------------------------------------------------
    def register_map(self, name: str = "qcn_cp") -> RegisterMap:
        """The run-time registers (reset: this configuration's values).  Q_eq and w set the
        feedback; FB_MAX, QNTZ_MULT and QNTZ_SHIFT are the quantizer's constants, which
        software derives with them (``QcnCpConfig(q_eq=..., w=...).registers()``: the
        quantization is a multiply by a reciprocal, no division); the sampling table is eight
        (lowest interval, jitter span) pairs."""
        reg, W = self.registers(), self.occ_width
        mw = self.mult_width
        regs = [
            Register.single("Q_EQ", W, reg.q_eq, desc="set point Q_eq, bytes"),
            Register.single("W", 4, reg.w, desc="weight w of Q_delta in Fb"),
            Register.single("FB_MAX", self.fb_max_width, reg.fb_max,
                            desc="|Fb| saturates here: Q_eq (2 w + 1), bytes"),
            Register.single("QNTZ_MULT_LO", min(mw, 32), reg.qntz_mult & 0xFFFF_FFFF,
                            desc="quantizer reciprocal M = ceil(2**K / Fb_max), bits 31..0"),
        ]
        if mw > 32:     # (a narrow occupancy, occ_width <= 20, needs no upper word)
            regs.append(Register.single("QNTZ_MULT_HI", mw - 32, reg.qntz_mult >> 32,
                                        desc="quantizer reciprocal M, upper bits"))
        regs.append(Register.single("QNTZ_SHIFT", 7, reg.qntz_shift,
                                    desc="quantizer shift K: qntzFb = ((63 |Fb| + Fb_max - 1)"
                                         " M) >> K"))
        for i in range(8):
            regs.append(Register.single(f"SAMPLE_LO{i}", W, reg.sample_lo[i],
                                        desc=f"sampling interval {i} (qntzFb >> 3 = {i}), "
                                             "lowest value, bytes: S (1 - jitter)"))
        for i in range(8):
            regs.append(Register.single(f"SAMPLE_SPAN{i}", W, reg.sample_span[i],
                                        desc=f"sampling interval {i}, jitter span, bytes: "
                                             "2 jitter S (interval = lo + (span draw) >> "
                                             "draw_bits)"))
        return RegisterMap(name, tuple(regs), "QCCP", version=(1, 0),
                           desc="QCN congestion point (IEEE 802.1Qau), one queue")

    def registers_from(self, values) -> QcnCpRegisters:
        """:class:`QcnCpRegisters` from register values by name (ints or Amaranth values);
        ``first_interval`` (a reset value) from the configuration."""
        return QcnCpRegisters(
            q_eq=values["Q_EQ"], w=values["W"], fb_max=values["FB_MAX"],
            qntz_mult=(values["QNTZ_MULT_HI"] << 32 | values["QNTZ_MULT_LO"]
                       if self.mult_width > 32 else values["QNTZ_MULT_LO"]),
            qntz_shift=values["QNTZ_SHIFT"],
            sample_lo=tuple(values[f"SAMPLE_LO{i}"] for i in range(8)),
            sample_span=tuple(values[f"SAMPLE_SPAN{i}"] for i in range(8)),
            first_interval=self.sample_table[0])

    # -- the single user-unit -> hardware conversion -------------------------------------------
    def registers(self) -> QcnCpRegisters:
        fb_max = self.fb_max
        n_max = QNTZ_MAX * fb_max + fb_max - 1          # numerator of the ceiling
        # floor(n / d) == (n * ceil(2**K / d)) >> K for every 0 <= n <= n_max when
        # 2**K >= n_max * d (the error n (M d - 2**K) / (d 2**K) < n / 2**K <= 1 / d).
        shift = (n_max * fb_max).bit_length()
        mult = -(-(1 << shift) // fb_max)
        lo = tuple(round(s * (1 - self.jitter)) for s in self.sample_table)
        span = tuple(round(2 * self.jitter * s) for s in self.sample_table)
        return QcnCpRegisters(q_eq=self.q_eq, w=self.w, fb_max=fb_max, qntz_mult=mult,
                              qntz_shift=shift, sample_lo=lo, sample_span=span,
                              first_interval=self.sample_table[0])

    # -- serialisation ---------------------------------------------------------------------------
