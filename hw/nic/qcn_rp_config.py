"""Configuration of the QCN reaction point (IEEE 802.1Qau rate limiter), one flow.

One frozen, validated :class:`QcnRpConfig` in user units (Mb/s, bytes, µs, fractions) configures
the RTL (:class:`hw.nic.qcn_rp.QcnRp`), the golden model (:class:`sim.models.qcn.QcnRpModel`), the
float reference, the Verilog export and the tests.  The conversion to hardware units happens
once, in :meth:`QcnRpConfig.registers`.  Defaults: the IEEE 802.1Q CN MIB (spec ``qcn.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..lfsr import LfsrParams
from ..lib.csr import Register, RegisterMap
from ..params import BlockConfig, ConfigError, bits_for, check_bool, check_int, check_real

__all__ = ["QcnRpConfig", "QcnRpRegisters", "RATE_FRAC", "MDF_FRAC", "STAGE_MAX"]

RATE_FRAC = 10      #: fraction bits of every rate: units of 2**-10 Mb/s
MDF_FRAC = 8        #: the minimum decrease factor as UQ0.8
STAGE_MAX = 255     #: ByteStage and TimeStage saturate here (8 bits)


@dataclass(frozen=True)
class QcnRpRegisters:
    """Hardware units derived from a :class:`QcnRpConfig`."""
    line_rate: int      #: UQ.10 Mb/s
    min_rate: int
    ai_rate: int
    hai_rate: int
    gd_shift: int       #: Gd = 2**-gd_shift
    min_dec_fac: int    #: UQ0.8
    threshold: int      #: F
    byte_lo: tuple      #: (full, half) byte-counter reloads: lo + ((span r) >> draw_bits)
    byte_span: tuple
    time_lo: tuple      #: (full, half) timer reloads, cycles
    time_span: tuple
    tr_guard: int


@dataclass(frozen=True)
class QcnRpConfig(BlockConfig):
    """QCN reaction point configuration (elaboration-time constants).

    ``line_rate_mbps``   port speed; CR and TR never exceed it (default 10000).
    ``min_rate_mbps``    rpgMinRate (MIB 5 Mb/s): no cut goes below it.
    ``ai_rate_mbps``     rpgAiRate (MIB 5 Mb/s); ``hai_rate_mbps``: rpgHaiRate (MIB 50 Mb/s).
    ``gd``               rpgGd = 7: Gd = 2**-gd (one cut is at most 63/128 with gd 7); 6..15.
    ``min_dec_fac``      rpgMinDecFac (MIB 0.5): a cut keeps at least this fraction of CR.
    ``threshold``        rpgThreshold F (MIB 5): fast recovery lasts F byte/timer cycles.
    ``byte_reset``       rpgByteReset (MIB 150000 bytes); halved once ByteStage >= F.
    ``time_reset_us``    rpgTimeReset (MIB 15 ms = 15000 µs); halved once TimeStage >= F.
    ``tr_guard``         QCN pseudo-code guard: on the first increase after a cut, if
                         TR > 10 CR then TR = TR / 8 (default on).
    ``jitter``           reloads of BC and the timer uniform in (1 +/- jitter) x nominal
                         (0 = off, the default; the standard suggests ~0.15).
    ``draw_bits``, ``lfsr``  the jitter draws (one draw per reload event).
    ``clk_hz``           clock (default 156.25 MHz); ``byte_width``: bits of a TX byte count.
    """

    line_rate_mbps: int = 10_000
    min_rate_mbps: float = 5.0
    ai_rate_mbps: float = 5.0
    hai_rate_mbps: float = 50.0
    gd: int = 7
    min_dec_fac: float = 0.5
    threshold: int = 5
    byte_reset: int = 150_000
    time_reset_us: float = 15_000.0
    tr_guard: bool = True
    jitter: float = 0.0
    draw_bits: int = 8
    lfsr: LfsrParams = LfsrParams()
    clk_hz: int = 156_250_000
    byte_width: int = 24

    def __post_init__(self):
        check_int(self, "clk_hz", self.clk_hz, 1_000_000, 2_000_000_000)
        check_int(self, "line_rate_mbps", self.line_rate_mbps, 1, 800_000)
        check_real(self, "min_rate_mbps", self.min_rate_mbps, 0.0, self.line_rate_mbps,
                   lo_open=True)
        check_real(self, "ai_rate_mbps", self.ai_rate_mbps, 0.0, self.line_rate_mbps)
        check_real(self, "hai_rate_mbps", self.hai_rate_mbps, 0.0, self.line_rate_mbps)
        check_int(self, "gd", self.gd, 6, 15)
        check_real(self, "min_dec_fac", self.min_dec_fac, 0.0, 1.0)
        check_int(self, "threshold", self.threshold, 1, STAGE_MAX - 1)
        check_int(self, "byte_width", self.byte_width, 8, 32)
        check_real(self, "jitter", self.jitter, 0.0, 0.5)
        check_int(self, "draw_bits", self.draw_bits, 1, 16)
        check_bool(self, "tr_guard", self.tr_guard)
        if not isinstance(self.lfsr, LfsrParams):
            raise ConfigError(self, "lfsr", self.lfsr, "an LfsrParams")
        if self.lfsr.width < self.draw_bits:
            raise ConfigError(self, "lfsr", self.lfsr,
                              f"an LFSR at least draw_bits (= {self.draw_bits}) bits wide")
        byte_max = ((1 << self.byte_width) - 1) / (1 + self.jitter)
        check_int(self, "byte_reset", self.byte_reset, 2, int(byte_max),
                  hi_name="(2**byte_width - 1) / (1 + jitter)")
        check_real(self, "time_reset_us", self.time_reset_us, 0.0, 1e7, lo_open=True)
        cycles = self.time_reset_us * self.clk_hz / 1e6
        if not 4 <= cycles * (1 - self.jitter) / 2 or cycles * (1 + self.jitter) >= 2 ** 32:
            raise ConfigError(self, "time_reset_us", self.time_reset_us,
                              f"{8e6 / self.clk_hz / (1 - self.jitter):g} µs <= time_reset_us"
                              f" < 2**32 cycles / (1 + jitter) at clk_hz {self.clk_hz}")


    @property
    def rate_width(self) -> int:
        return bits_for(self.line_rate_mbps << RATE_FRAC)

    @property
    def timer_width(self) -> int:
        return bits_for(self.registers().time_lo[0] + self.registers().time_span[0])

    # -- run-time registers --------------------------------------------------------------------
    #: (register, field of QcnRpRegisters, index in a (full, half) pair or None, description)
    REGISTERS = (
        ("LINE_RATE", "line_rate", None, "line rate: CR and TR never exceed it, UQ.10 Mb/s"),
        ("MIN_RATE", "min_rate", None, "rpgMinRate: no cut goes below it, UQ.10 Mb/s"),
        ("AI_RATE", "ai_rate", None, "rpgAiRate, UQ.10 Mb/s"),
        ("HAI_RATE", "hai_rate", None, "rpgHaiRate, UQ.10 Mb/s"),
        ("GD_SHIFT", "gd_shift", None, "rpgGd = 2**-GD_SHIFT"),
        ("MIN_DEC_FAC", "min_dec_fac", None, "rpgMinDecFac, UQ0.8 (256 = 1.0; above reads as 1.0)"),
        ("THRESHOLD", "threshold", None, "rpgThreshold F, byte / timer cycles of fast recovery"),
        ("BYTE_LO", "byte_lo", 0, "byte counter reload, lowest value, bytes"),
        ("BYTE_LO_HALF", "byte_lo", 1, "byte counter reload once ByteStage >= F, lowest"),
        ("BYTE_SPAN", "byte_span", 0, "byte counter reload jitter span (reload = lo + "
         "(span x draw) >> draw_bits)"),
        ("BYTE_SPAN_HALF", "byte_span", 1, "byte counter reload jitter span once ByteStage >= F"),
        ("TIME_LO", "time_lo", 0, "timer reload, lowest value, cycles"),
        ("TIME_LO_HALF", "time_lo", 1, "timer reload once TimeStage >= F, lowest, cycles"),
        ("TIME_SPAN", "time_span", 0, "timer reload jitter span, cycles"),
        ("TIME_SPAN_HALF", "time_span", 1, "timer reload jitter span once TimeStage >= F"),
        ("TR_GUARD", "tr_guard", None, "1: on the first increase after a cut, TR > 10 CR "
         "gives TR = TR / 8"),
    )

    def register_map(self, name: str = "qcn_rp") -> RegisterMap:
        """The run-time registers, every knob of :meth:`registers` (reset: this
        configuration's values).  Software writes values of a valid configuration (e.g.
        ``QcnRpConfig(...).registers()``): the widths (rate, byte counter, timer) are the
        build's, and a timer reload must fit ``timer_width`` bits."""
        reg = self.registers()
        widths = {"line_rate": self.rate_width, "min_rate": self.rate_width,
                  "ai_rate": self.rate_width, "hai_rate": self.rate_width, "gd_shift": 4,
                  "min_dec_fac": MDF_FRAC + 1, "threshold": 8, "byte_lo": self.byte_width,
                  "byte_span": self.byte_width, "time_lo": self.timer_width,
                  "time_span": self.timer_width, "tr_guard": 1}
        regs = []
        for name_, attr, index, desc in self.REGISTERS:
            value = getattr(reg, attr)
            regs.append(Register.single(name_, widths[attr],
                                        value if index is None else value[index], desc=desc))
        return RegisterMap(name, tuple(regs), "QCRP", version=(1, 0),
                           desc="QCN reaction point (IEEE 802.1Qau rate limiter), one flow")

    @classmethod
    def registers_from(cls, values) -> QcnRpRegisters:
        """:class:`QcnRpRegisters` from register values by name (``values[name]``: an int
        or an Amaranth value)."""
        kw = {}
        for name, attr, index, _ in cls.REGISTERS:
            if index is None:
                kw[attr] = values[name]
            else:
                kw.setdefault(attr, [None, None])[index] = values[name]
        return QcnRpRegisters(**{k: tuple(v) if isinstance(v, list) else v
                                 for k, v in kw.items()})

    # -- the single user-unit -> hardware conversion -------------------------------------------
    def registers(self) -> QcnRpRegisters:
        def rate(mbps):
            return round(mbps * (1 << RATE_FRAC))

        def reloads(nominal):
            lo = tuple(round(n * (1 - self.jitter)) for n in (nominal, nominal / 2))
            span = tuple(round(2 * self.jitter * n) for n in (nominal, nominal / 2))
            return lo, span

        byte_lo, byte_span = reloads(self.byte_reset)
        time_lo, time_span = reloads(self.time_reset_us * self.clk_hz / 1e6)
        return QcnRpRegisters(
            line_rate=rate(self.line_rate_mbps), min_rate=max(1, rate(self.min_rate_mbps)),
            ai_rate=rate(self.ai_rate_mbps), hai_rate=rate(self.hai_rate_mbps),
            gd_shift=self.gd, min_dec_fac=round(self.min_dec_fac * (1 << MDF_FRAC)),
            threshold=self.threshold, byte_lo=byte_lo, byte_span=byte_span,
            time_lo=time_lo, time_span=time_span, tr_guard=int(self.tr_guard))

