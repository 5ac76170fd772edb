"""Configuration of the DCQCN reaction point (RP), in the ConnectX knob names and units.

One frozen, validated :class:`DcqcnRpConfig` configures the RTL (:mod:`hw.nic.dcqcn_rp`), the
bit-exact golden model (:mod:`sim.models.dcqcn`), the Verilog export and the tests.  The knobs
carry the names NVIDIA ConnectX firmware uses (``rpg_time_reset`` in µs, ``rpg_ai_rate`` in Mb/s,
``dce_tcp_g`` in 1/1024, ...), so an operator can copy settings from a NIC.  The differences
between the four reference behaviours (``docs/dcqcn.md``, "Profiles") are settings too; the
named profiles are built by :meth:`DcqcnRpConfig.profile`.

The conversion to hardware units (cycles at ``clk_hz``, fixed-point words) happens once, in
:meth:`DcqcnRpConfig.registers`.

Fixed-point formats (``docs/dcqcn.md``, "Fixed point"):

- rates ``Rc``, ``Rt`` and every rate knob: UQ(r).10 Mb/s, i.e. integer units of 1/1024 Mb/s
  (~977 b/s); ``r = bits_for(line_rate_mbps)``.
- ``alpha``: UQ1.24 (0 ... 2**24 = 1.0).
- ``g``: UQ0.10 (``1024 - dce_tcp_g``), 1 ... 1024.
- ``rpg_min_dec_fac``: UQ0.16 fraction of Rc, rounded up (``ceil(pct * 65536 / 100)``), and
  the floor ``ceil(Rc * mdf / 2**16)`` is rounded up too, so one cut never leaves less than
  ``pct`` % of Rc.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import fields as dc_fields

from ..lib.csr import Register, RegisterMap
from ..params import (
    BlockConfig,
    ConfigError,
    bits_for,
    check_bool,
    check_choice,
    check_int,
    check_time_us,
    us_to_cycles,
)

__all__ = ["DcqcnRpConfig", "DcqcnRpRegisters", "PROFILES", "RATE_FRAC", "ALPHA_FRAC", "G_FRAC",
           "ALPHA_ONE", "STAGE_MAX", "AlphaMode", "CutMode", "IncreaseRule", "HaiStep",
           "ClampRule"]

PROFILES = ("paper", "ns3-rdma", "hpcc-mlx", "connectx")

RATE_FRAC = 10          #: fraction bits of every rate (units of 2**-10 Mb/s)
ALPHA_FRAC = 24         #: fraction bits of alpha (UQ1.24)
ALPHA_ONE = 1 << ALPHA_FRAC
G_FRAC = 10             #: g in 1/1024 (dce_tcp_g units)
MDF_FRAC = 16           #: rpg_min_dec_fac as UQ0.16
STAGE_BITS = 8
STAGE_MAX = (1 << STAGE_BITS) - 1   #: stage counters saturate here


class AlphaMode:
    """How alpha is updated (hardware code in brackets)."""
    ON_CNP = "on_cnp"        #: [0] paper / ns3-rdma: alpha = (1-g)a + g at each CNP; decays
    #:                          by (1-g) every K with no CNP (timer restarted by each CNP)
    PERIODIC = "periodic"    #: [1] HPCC mlx / ConnectX: every K, a = (1-g)a + g*[CNP arrived]
    ALL = (ON_CNP, PERIODIC)


class CutMode:
    EVERY_CNP = "every_cnp"            #: [0] paper / ns3-rdma: each CNP cuts at once
    PERIODIC_CHECK = "periodic_check"  #: [1] HPCC mlx: every P (grid from the first CNP + 1
    #:                                      cycle), cut if a CNP arrived since the last check
    HOLDOFF = "holdoff"                #: [2] ConnectX: a CNP cuts at once unless a cut
    #:                                      happened less than P ago (then it only feeds alpha)
    ALL = (EVERY_CNP, PERIODIC_CHECK, HOLDOFF)


class IncreaseRule:
    PAPER = "paper"   #: [0] after counting: max(stages) < F FR; min(stages) > F HAI; else AI
    NS3 = "ns3"       #: [1] ns3-rdma's rpStage machine (docs/dcqcn.md)
    HPCC = "hpcc"     #: [2] before counting: stage < F FR, == F AI, > F HAI
    ALL = (PAPER, NS3, HPCC)


class HaiStep:
    LINEAR0 = "linear0"   #: [0] paper: i * R_HAI, i = min(stages) - F
    LINEAR1 = "linear1"   #: [1] ns3-rdma: (min(stages) - F + 1) * R_HAI
    CONST = "const"       #: [2] HPCC mlx / ConnectX: R_HAI
    ALL = (LINEAR0, LINEAR1, CONST)


class ClampRule:
    """When a cut sets Rt = Rc."""
    ALWAYS = "always"          #: [0] paper; ConnectX clamp_tgt_rate = 1
    BYTE_STAGE = "byte_stage"  #: [1] ns3-rdma default: only if the byte stage != 0
    TIME_STAGE = "time_stage"  #: [2] HPCC mlx (CLAMP_TARGET_RATE 0): only if the timer stage != 0
    ANY_STAGE = "any_stage"    #: [3] ConnectX clamp_tgt_rate_after_time_inc = 1: either != 0
    ALL = (ALWAYS, BYTE_STAGE, TIME_STAGE, ANY_STAGE)


@dataclass(frozen=True)
class DcqcnRpRegisters:
    """Hardware-unit values derived from a :class:`DcqcnRpConfig` (cycles, fixed point, codes)."""
    t_cycles: int          #: rate-increase timer period T
    t_half_cycles: int     #: T/2 (ns3-rdma hyper increase)
    k_cycles: int          #: alpha timer period K
    p_cycles: int          #: cut monitor / holdoff period P
    byte_reset: int        #: B bytes (0: no byte counter)
    byte_half: int         #: B/2 (ns3-rdma hyper increase)
    threshold: int         #: F
    ai_rate: int           #: R_AI, UQ.10 Mb/s
    hai_rate: int          #: R_HAI, UQ.10 Mb/s
    gd_shift: int          #: cut = (Rc * alpha) >> gd_shift  (= rpg_gd + 6)
    min_dec_fac: int       #: UQ0.16, rounded up
    min_rate: int          #: UQ.10 Mb/s
    max_rate: int          #: UQ.10 Mb/s
    first_rate: int        #: UQ.10 Mb/s, 0 = normal cut on the first CNP
    g: int                 #: UQ0.10
    alpha_init: int        #: UQ1.24
    alpha_mode: int
    cut_mode: int
    increase_rule: int
    hai_step: int
    clamp_rule: int
    alpha_before_cut: int
    bc_reload_on_clamp_only: int
    halve_in_hyper: int
    rt_guard: int


#: the register descriptions (docs, SystemRDL, C header)
RP_REGISTER_DESC = {
    "t_cycles": "rate-increase timer period T, cycles (rpg_time_reset)",
    "t_half_cycles": "T/2, cycles (ns3-rdma hyper increase)",
    "k_cycles": "alpha timer period K, cycles (dce_tcp_rtt)",
    "p_cycles": "cut-check / holdoff period P, cycles (rate_reduce_monitor_period)",
    "byte_reset": "byte counter B, bytes (rpg_byte_reset; 0: no byte counter)",
    "byte_half": "B/2, bytes (ns3-rdma hyper increase)",
    "threshold": "F, stages of fast recovery (rpg_threshold)",
    "ai_rate": "R_AI, UQ.10 Mb/s (rpg_ai_rate)",
    "hai_rate": "R_HAI, UQ.10 Mb/s (rpg_hai_rate)",
    "gd_shift": "cut = (Rc alpha) >> gd_shift (rpg_gd + 14)",
    "min_dec_fac": "minimum decrease factor, UQ0.16 (rpg_min_dec_fac %, rounded up; above "
                   "1.0 reads as 1.0)",
    "min_rate": "lowest rate, UQ.10 Mb/s (rpg_min_rate)",
    "max_rate": "highest rate and the rate after reset, UQ.10 Mb/s (rpg_max_rate)",
    "first_rate": "rate set on the first CNP, UQ.10 Mb/s (0: a normal cut)",
    "g": "alpha gain g, UQ0.10 (1024 - dce_tcp_g; above 1.0 reads as 1.0)",
    "alpha_init": "initial alpha, UQ1.24 (initial_alpha_value)",
    "alpha_mode": "0 on CNP (paper), 1 periodic (ConnectX)",
    "cut_mode": "0 every CNP, 1 periodic check, 2 holdoff",
    "increase_rule": "0 paper, 1 ns3, 2 hpcc",
    "hai_step": "0 i R_HAI, 1 (i + 1) R_HAI, 2 R_HAI",
    "clamp_rule": "Rt = Rc at a cut: 0 always, 1 byte stage != 0, 2 time stage != 0, 3 either",
    "alpha_before_cut": "1: alpha updated before the cut uses it (ON_CNP alpha)",
    "bc_reload_on_clamp_only": "1: the byte counter reloaded at a cut only when it clamps Rt",
    "halve_in_hyper": "1: T/2 and B/2 while in hyper increase",
    "rt_guard": "1: Rt = Rt/8 instead of increasing when a stage is 1 and Rt > 10 Rc",
}


@dataclass(frozen=True)
class DcqcnRpConfig(BlockConfig):
    """DCQCN reaction point: ConnectX knobs (µs, Mb/s, /1024, %) plus the profile settings.

    Elaboration-time parameters: ``clk_hz`` (Hz), ``line_rate_mbps`` (the port speed; also the
    default ``rpg_max_rate``), ``timer_width`` (bits of each timer counter; every period in
    cycles must fit), ``byte_width`` (bits of the byte counter and of a TX event's length).

    ConnectX knobs (the reset values of the run-time registers, :meth:`register_map`):
    ``rpg_time_reset`` µs (T),
    ``rpg_byte_reset`` bytes (B; 0 disables the byte counter), ``rpg_threshold`` (F),
    ``rpg_ai_rate`` / ``rpg_hai_rate`` Mb/s, ``rpg_gd`` (cut = Rc alpha / 2**(gd-10), 11 = alpha/2),
    ``rpg_min_dec_fac`` % (one cut never leaves less than this fraction of Rc), ``rpg_min_rate``
    / ``rpg_max_rate`` Mb/s (max 0 = line rate), ``rate_to_set_on_first_cnp`` Mb/s (0 = normal
    cut), ``dce_tcp_g`` (weight of the old alpha in 1/1024: g = (1024 - dce_tcp_g)/1024),
    ``dce_tcp_rtt`` µs (alpha period K), ``rate_reduce_monitor_period`` µs (P),
    ``initial_alpha_value`` /1024.

    Profile settings (``docs/dcqcn.md``): ``alpha_mode``, ``cut_mode``, ``increase_rule``,
    ``hai_step``, ``clamp_rule``, ``alpha_before_cut`` (ON_CNP alpha: update alpha before the
    cut uses it), ``bc_reload_on_clamp_only`` (ns3-rdma reloads the byte counter at a cut only
    when it clamps Rt), ``halve_in_hyper`` (ns3-rdma: T/2 and B/2 while in hyper increase),
    ``rt_guard`` (ns3-rdma: Rt = Rt/8 instead of increasing when a stage is 1 and Rt > 10 Rc).
    """

    clk_hz: int = 156_250_000
    line_rate_mbps: int = 100_000
    timer_width: int = 24
    byte_width: int = 24
    rpg_time_reset: int | float = 300
    rpg_byte_reset: int = 32767
    rpg_threshold: int = 1
    rpg_ai_rate: int = 5
    rpg_hai_rate: int = 50
    rpg_gd: int = 11
    rpg_min_dec_fac: int = 50
    rpg_min_rate: int = 1
    rpg_max_rate: int = 0
    rate_to_set_on_first_cnp: int = 0
    dce_tcp_g: int = 1019
    dce_tcp_rtt: int | float = 1
    rate_reduce_monitor_period: int | float = 4
    initial_alpha_value: int = 1023
    alpha_mode: str = AlphaMode.PERIODIC
    cut_mode: str = CutMode.HOLDOFF
    increase_rule: str = IncreaseRule.PAPER
    hai_step: str = HaiStep.CONST
    clamp_rule: str = ClampRule.ANY_STAGE
    alpha_before_cut: bool = False
    bc_reload_on_clamp_only: bool = False
    halve_in_hyper: bool = False
    rt_guard: bool = False

    # -- construction -----------------------------------------------------------------------
    def __post_init__(self):
        check_int(self, "clk_hz", self.clk_hz, 1_000_000, 2_000_000_000)
        check_int(self, "line_rate_mbps", self.line_rate_mbps, 1, 1_600_000)
        check_int(self, "timer_width", self.timer_width, 8, 32)
        check_int(self, "byte_width", self.byte_width, 8, 32)
        check_int(self, "rpg_byte_reset", self.rpg_byte_reset, 0, (1 << self.byte_width) - 1,
                  hi_name=f"2**byte_width - 1 (byte_width {self.byte_width})")
        check_int(self, "rpg_threshold", self.rpg_threshold, 1, STAGE_MAX - 2)
        max_rate = self.max_rate_mbps
        check_int(self, "rpg_max_rate", self.rpg_max_rate, 0, self.line_rate_mbps,
                  hi_name="line_rate_mbps")
        check_int(self, "rpg_min_rate", self.rpg_min_rate, 1, max_rate,
                  hi_name="the max rate (rpg_max_rate, or line_rate_mbps if 0)")
        check_int(self, "rpg_ai_rate", self.rpg_ai_rate, 0, max_rate, hi_name="the max rate")
        check_int(self, "rpg_hai_rate", self.rpg_hai_rate, 0, max_rate, hi_name="the max rate")
        check_int(self, "rpg_gd", self.rpg_gd, 0, 15)
        check_int(self, "rpg_min_dec_fac", self.rpg_min_dec_fac, 0, 100)
        if self.rate_to_set_on_first_cnp != 0:
            check_int(self, "rate_to_set_on_first_cnp", self.rate_to_set_on_first_cnp,
                      self.rpg_min_rate, max_rate, lo_name="rpg_min_rate",
                      hi_name="the max rate (or 0 for a normal cut)")
        if isinstance(self.dce_tcp_g, int) and not isinstance(self.dce_tcp_g, bool) \
                and self.dce_tcp_g == 1 << G_FRAC:
            raise ConfigError(self, "dce_tcp_g", self.dce_tcp_g,
                              "integer 0 <= dce_tcp_g <= 1023 (1024 would make g = 0: alpha "
                              "would never move)")
        check_int(self, "dce_tcp_g", self.dce_tcp_g, 0, (1 << G_FRAC) - 1)
        check_int(self, "initial_alpha_value", self.initial_alpha_value, 0, 1 << G_FRAC)
        check_choice(self, "alpha_mode", self.alpha_mode, AlphaMode.ALL)
        check_choice(self, "cut_mode", self.cut_mode, CutMode.ALL)
        check_choice(self, "increase_rule", self.increase_rule, IncreaseRule.ALL)
        check_choice(self, "hai_step", self.hai_step, HaiStep.ALL)
        check_choice(self, "clamp_rule", self.clamp_rule, ClampRule.ALL)
        for flag in ("alpha_before_cut", "bc_reload_on_clamp_only", "halve_in_hyper", "rt_guard"):
            check_bool(self, flag, getattr(self, flag))
        # timers: a positive number of cycles that fits the counter (with room for the +1
        # offset of the periodic check)
        limit = (1 << self.timer_width) - 2
        for name in ("rpg_time_reset", "dce_tcp_rtt", "rate_reduce_monitor_period"):
            check_time_us(self, name, getattr(self, name), self.clk_hz, 2, limit,
                          note=f", timer_width {self.timer_width}")


    # -- named profiles ---------------------------------------------------------------------
    @classmethod
    def profile(cls, name: str, **overrides) -> DcqcnRpConfig:
        """The named reference behaviour (``docs/dcqcn.md`` lists each value's source)."""
        check_choice("DcqcnRpConfig", "profile", name, PROFILES)
        base = {
            # Zhu et al., SIGCOMM 2015, 40 Gb/s parameters.
            "paper": dict(
                line_rate_mbps=40_000, rpg_time_reset=55, rpg_byte_reset=10_000_000,
                rpg_threshold=5, rpg_ai_rate=40, rpg_hai_rate=400, rpg_gd=11,
                rpg_min_dec_fac=0, rpg_min_rate=1, dce_tcp_g=1020, dce_tcp_rtt=55,
                rate_reduce_monitor_period=4, initial_alpha_value=1024,
                alpha_mode=AlphaMode.ON_CNP, cut_mode=CutMode.EVERY_CNP,
                increase_rule=IncreaseRule.PAPER, hai_step=HaiStep.LINEAR0,
                clamp_rule=ClampRule.ALWAYS),
            # bobzhuyb/ns3-rdma qbb-net-device.cc (rpr_* state machine, AdjustRates).
            "ns3-rdma": dict(
                line_rate_mbps=40_000, rpg_time_reset=55, rpg_byte_reset=10_000_000,
                rpg_threshold=5, rpg_ai_rate=40, rpg_hai_rate=200, rpg_gd=11,
                rpg_min_dec_fac=0, rpg_min_rate=100, dce_tcp_g=960, dce_tcp_rtt=55,
                rate_reduce_monitor_period=4, initial_alpha_value=512,
                alpha_mode=AlphaMode.ON_CNP, cut_mode=CutMode.EVERY_CNP,
                increase_rule=IncreaseRule.NS3, hai_step=HaiStep.LINEAR1,
                clamp_rule=ClampRule.BYTE_STAGE, alpha_before_cut=True,
                bc_reload_on_clamp_only=True, halve_in_hyper=True, rt_guard=True),
            # alibaba-edu/High-Precision-Congestion-Control: the "mlx" rules of rdma-hw.cc with
            # the values its run script (simulation/run.py, --cc dcqcn) writes for 100 Gb/s:
            # FAST_RECOVERY_TIMES 1, MIN_RATE 1000Mb/s, RATE_AI 5*bw/25 = 20, RATE_HAI 50*bw/25 =
            # 200 Mb/s, RP_TIMER 300, ALPHA_RESUME_INTERVAL 1, RATE_DECREASE_INTERVAL 4 us,
            # EWMA_GAIN 1/256, CLAMP_TARGET_RATE 0.  (rdma-hw.cc's own attribute defaults, F = 5
            # and a 100 Mb/s minimum, are profile("hpcc-mlx", rpg_threshold=5, rpg_min_rate=100).)
            "hpcc-mlx": dict(
                line_rate_mbps=100_000, rpg_time_reset=300, rpg_byte_reset=0,
                rpg_threshold=1, rpg_ai_rate=20, rpg_hai_rate=200, rpg_gd=11,
                rpg_min_dec_fac=0, rpg_min_rate=1000, dce_tcp_g=1020, dce_tcp_rtt=1,
                rate_reduce_monitor_period=4, initial_alpha_value=1024,
                alpha_mode=AlphaMode.PERIODIC, cut_mode=CutMode.PERIODIC_CHECK,
                increase_rule=IncreaseRule.HPCC, hai_step=HaiStep.CONST,
                clamp_rule=ClampRule.TIME_STAGE),
            # NVIDIA ConnectX firmware defaults (DOCA "DCQCN CC Parameters").
            "connectx": dict(),
        }[name]
        return cls(**{**base, **overrides})

    @classmethod
    def from_connectx(cls, *, clamp_tgt_rate: int = 0, clamp_tgt_rate_after_time_inc: int = 1,
                      **knobs) -> DcqcnRpConfig:
        """The ConnectX behaviour with knobs as a NIC reports them (including the two clamp
        flags, translated to ``clamp_rule``)."""
        check_choice("DcqcnRpConfig", "clamp_tgt_rate", clamp_tgt_rate, (0, 1))
        check_choice("DcqcnRpConfig", "clamp_tgt_rate_after_time_inc",
                     clamp_tgt_rate_after_time_inc, (0, 1))
        rule = (ClampRule.ALWAYS if clamp_tgt_rate else
                ClampRule.ANY_STAGE if clamp_tgt_rate_after_time_inc else ClampRule.BYTE_STAGE)
        return cls.profile("connectx", clamp_rule=rule, **knobs)

    # -- derived widths ----------------------------------------------------------------------
    @property
    def max_rate_mbps(self) -> int:
        return self.rpg_max_rate or self.line_rate_mbps

    @property
    def rate_width(self) -> int:
        return bits_for(self.line_rate_mbps << RATE_FRAC)

    # -- run-time registers --------------------------------------------------------------------
    def register_widths(self) -> dict[str, int]:
        """Width of each run-time register (the fields of :class:`DcqcnRpRegisters`)."""
        RW, TW, BW = self.rate_width, self.timer_width, self.byte_width
        return {
            "t_cycles": TW, "t_half_cycles": TW, "k_cycles": TW, "p_cycles": TW,
            "byte_reset": BW, "byte_half": BW, "threshold": STAGE_BITS,
            "ai_rate": RW, "hai_rate": RW, "gd_shift": 5, "min_dec_fac": MDF_FRAC + 1,
            "min_rate": RW, "max_rate": RW, "first_rate": RW,
            "g": G_FRAC + 1, "alpha_init": ALPHA_FRAC + 1,
            "alpha_mode": 1, "cut_mode": 2, "increase_rule": 2, "hai_step": 2, "clamp_rule": 2,
            "alpha_before_cut": 1, "bc_reload_on_clamp_only": 1, "halve_in_hyper": 1,
            "rt_guard": 1,
        }

    def register_list(self) -> list[Register]:
        """The run-time registers in address order (word 0 up), one per field of
        :class:`DcqcnRpRegisters`, reset to this configuration's values; shared by the single
        flow (:meth:`register_map`) and the multi-flow engine's map."""
        widths, values = self.register_widths(), self.registers()
        return [Register.single(f.name.upper(), widths[f.name], getattr(values, f.name),
                                desc=RP_REGISTER_DESC[f.name])
                for f in dc_fields(DcqcnRpRegisters)]

    def register_map(self, name: str = "dcqcn_rp") -> RegisterMap:
        """The single flow's register map: every knob and profile switch (reset: this
        configuration's values, so one build runs any profile)."""
        return RegisterMap(name, tuple(self.register_list()), "DCRP", version=(1, 0),
                           desc="DCQCN reaction point, one flow")

    @staticmethod
    def registers_from(values) -> DcqcnRpRegisters:
        """:class:`DcqcnRpRegisters` from register values by register name."""
        return DcqcnRpRegisters(**{f.name: values[f.name.upper()]
                                   for f in dc_fields(DcqcnRpRegisters)})

    # -- the single user-unit -> register conversion -----------------------------------------
    def registers(self) -> DcqcnRpRegisters:
        t = us_to_cycles(self.rpg_time_reset, self.clk_hz)
        return DcqcnRpRegisters(
            t_cycles=t,
            t_half_cycles=max(t >> 1, 1),
            k_cycles=us_to_cycles(self.dce_tcp_rtt, self.clk_hz),
            p_cycles=us_to_cycles(self.rate_reduce_monitor_period, self.clk_hz),
            byte_reset=self.rpg_byte_reset,
            byte_half=self.rpg_byte_reset >> 1,
            threshold=self.rpg_threshold,
            ai_rate=self.rpg_ai_rate << RATE_FRAC,
            hai_rate=self.rpg_hai_rate << RATE_FRAC,
            gd_shift=self.rpg_gd + ALPHA_FRAC - G_FRAC,
            min_dec_fac=-(-(self.rpg_min_dec_fac << MDF_FRAC) // 100),
            min_rate=self.rpg_min_rate << RATE_FRAC,
            max_rate=self.max_rate_mbps << RATE_FRAC,
            first_rate=self.rate_to_set_on_first_cnp << RATE_FRAC,
            g=(1 << G_FRAC) - self.dce_tcp_g,
            alpha_init=self.initial_alpha_value << (ALPHA_FRAC - G_FRAC),
            alpha_mode=AlphaMode.ALL.index(self.alpha_mode),
            cut_mode=CutMode.ALL.index(self.cut_mode),
            increase_rule=IncreaseRule.ALL.index(self.increase_rule),
            hai_step=HaiStep.ALL.index(self.hai_step),
            clamp_rule=ClampRule.ALL.index(self.clamp_rule),
            alpha_before_cut=int(self.alpha_before_cut),
            bc_reload_on_clamp_only=int(self.bc_reload_on_clamp_only),
            halve_in_hyper=int(self.halve_in_hyper),
            rt_guard=int(self.rt_guard),
        )

    # -- serialisation -------------------------------------------------------------------------
