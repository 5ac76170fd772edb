"""Configuration of the egress congestion point (queue occupancy + WRED/ECN marker).

One frozen, validated :class:`MarkerConfig` in user units (bytes, probability) configures the
RTL (:class:`hw.switch.marker.EgressMarker`), the golden model
(:class:`sim.models.marker.MarkerModel`), the Verilog export and the tests.  The conversion to
register values happens once, in :meth:`MarkerConfig.registers`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..layouts import Compare, Profile, SamplePoint
from ..lfsr import LfsrParams
from ..lib.csr import Field, Register, RegisterMap
from ..params import BlockConfig, ConfigError, bits_for, check_choice, check_int, check_real

__all__ = ["MarkerConfig", "MarkerRegisters", "MarkerReg", "PROFILES"]

#: the configuration's names of the modes: the enumerations' member names in lower case, so
#: that a name's index is its register code (``Profile``, ``Compare``, ``SamplePoint``)
PROFILES = tuple(p.name.lower() for p in Profile)
COMPARES = tuple(c.name.lower() for c in Compare)
SAMPLE_POINTS = tuple(s.name.lower() for s in SamplePoint)


class MarkerReg(enum.IntEnum):
    """Register map (word addresses; 32-bit data).  Counters saturate at 2**32 - 1 and are
    cleared (or preset) by writing them."""
    CTRL = 0x0          #: MarkerCtrl: profile[1:0], compare[2], sample_at[3]
    K_MIN = 0x1         #: ramp start, bytes
    K_MAX = 0x2         #: ramp end (DCTCP: the step threshold K), bytes
    P_MAX = 0x3         #: marking probability at the end of the ramp, UQ1.draw_bits
    K_DROP = 0x4        #: K of the LDCP profile: Not-ECT dropped at q >= K (or > K), bytes
    BUF_MAX = 0x5       #: per-queue limit, bytes: dropped when q + length > buf_max
    SHARED_BUFFER = 0x6  #: shared pool of all queues, bytes
    SHARED_OCC = 0x7    #: read-only: bytes held by all queues
    CNT_ENQUEUED = 0x8  #: packets admitted
    CNT_DEQUEUED = 0x9  #: packets dequeued
    CNT_MARKED = 0xA    #: packets this block changed from ECT to CE
    CNT_DROP_NOT_ECT = 0xB  #: Not-ECT packets dropped at K
    CNT_DROP_QUEUE_FULL = 0xC
    CNT_DROP_POOL_FULL = 0xD
    CNT_MALFORMED = 0xE  #: descriptors rejected as BAD_QUEUE or UNDERFLOW

    @classmethod
    def counters(cls):
        return [r for r in cls if r >= cls.CNT_ENQUEUED]


#: word address width of the register port: the registers at 0x0..0xE, the identification
#: header (hw/lib/csr.py) at 0x10..0x13
CSR_ADDR_WIDTH = 5
#: block type in the header's ID register
BLOCK_TYPE = "MRKR"
CSR_DATA_WIDTH = 32
COUNTER_MAX = (1 << CSR_DATA_WIDTH) - 1


@dataclass(frozen=True)
class MarkerRegisters:
    """Register values (hardware units) derived from a :class:`MarkerConfig`."""
    profile: int
    compare: int
    sample_at: int
    k_min: int
    k_max: int
    p_max: int
    k_drop: int
    buf_max: int
    shared_buffer: int


@dataclass(frozen=True)
class MarkerConfig(BlockConfig):
    """Egress congestion point configuration.

    Elaboration-time parameters (fixed in the exported Verilog):

    ``ports``, ``priorities``
        Number of egress ports and priorities per port; one byte counter per (port, priority).
    ``len_width``
        Bits of the packet length field (default 14: up to 16383-byte frames).
    ``occ_width``
        Bits of every byte counter (default 24: 16 MiB).  Must hold ``buf_max`` and
        ``shared_buffer``; thresholds and limits are registers of this width.
    ``draw_bits``
        Bits of each random draw; the marking probability resolution is ``2**-draw_bits``.
    ``lfsr``
        The LFSR (polynomial and seed) that provides the draws.

    Run-time registers (these are their reset values), in user units:

    ``profile``
        ``"ldcp"``, ``"dcqcn"`` or ``"dctcp"`` (see ``docs/switch-marker.md``).
    ``compare``
        ``"ge"`` (LDCP draft, default) or ``"gt"`` (HPCC ns-3 strict comparisons).
    ``sample_at``
        ``"enqueue"`` (default) or ``"dequeue"``: where the queue is read for ECN marking.
        Drops are always decided at enqueue.
    ``k_min``, ``k_max``, ``p_max``
        RED ramp in bytes and the probability at its end.  DCTCP: ``k_min == k_max == K`` and
        ``p_max == 1`` (use :meth:`dctcp`).
    ``k_drop``
        The LDCP fast-start threshold K (bytes) at which ECN-incapable packets are dropped.
    ``buf_max``
        Per-queue limit (bytes): a packet is dropped when ``q + length > buf_max``.
    ``shared_buffer``
        Limit (bytes) of the pool shared by all queues; ``None`` means ``buf_max`` (all queues
        share one ``buf_max``-byte buffer).
    """

    ports: int = 1
    priorities: int = 1
    len_width: int = 14
    occ_width: int = 24
    draw_bits: int = 16
    lfsr: LfsrParams = LfsrParams()
    profile: str = "ldcp"
    compare: str = "ge"
    sample_at: str = "enqueue"
    k_min: int = 20_000
    k_max: int = 200_000
    p_max: float = 0.2
    k_drop: int = 40_000
    buf_max: int = 1_000_000
    shared_buffer: int | None = None

    # -- construction -----------------------------------------------------------------------
    def __post_init__(self):
        check_int(self, "ports", self.ports, 1, 1024)
        check_int(self, "priorities", self.priorities, 1, 8)
        check_int(self, "len_width", self.len_width, 1, 16)
        check_int(self, "occ_width", self.occ_width, 8, CSR_DATA_WIDTH)
        check_int(self, "draw_bits", self.draw_bits, 4, 24)
        if not isinstance(self.lfsr, LfsrParams):
            raise ConfigError(self, "lfsr", self.lfsr, "an LfsrParams")
        if self.lfsr.width < self.draw_bits:
            raise ConfigError(self, "lfsr", self.lfsr,
                              f"an LFSR at least draw_bits (= {self.draw_bits}) bits wide")
        check_choice(self, "profile", self.profile, PROFILES)
        check_choice(self, "compare", self.compare, COMPARES)
        check_choice(self, "sample_at", self.sample_at, SAMPLE_POINTS)

        occ_max = (1 << self.occ_width) - 1
        check_int(self, "buf_max", self.buf_max, 0, occ_max,
                  hi_name=f"2**occ_width - 1 (occ_width {self.occ_width})")
        if self.shared_buffer is not None:
            check_int(self, "shared_buffer", self.shared_buffer, 0, occ_max,
                      hi_name=f"2**occ_width - 1 (occ_width {self.occ_width})")
        check_int(self, "k_max", self.k_max, 0, self.buf_max, hi_name="buf_max")
        check_int(self, "k_min", self.k_min, 0, self.k_max, hi_name="k_max")
        check_int(self, "k_drop", self.k_drop, 0, self.buf_max, hi_name="buf_max")
        check_real(self, "p_max", self.p_max, 0.0, 1.0, lo_open=True)
        if round(self.p_max * (1 << self.draw_bits)) < 1:
            raise ConfigError(self, "p_max", self.p_max,
                              f"p_max >= 2**-draw_bits (= {2.0 ** -self.draw_bits:g})")
        if self.profile == "dctcp":
            if self.k_min != self.k_max:
                raise ConfigError(self, "k_min", self.k_min,
                                  f"k_min == k_max (= {self.k_max}) for the step profile 'dctcp'")
            if self.p_max != 1.0:
                raise ConfigError(self, "p_max", self.p_max, "1.0 for the step profile 'dctcp'")

    @classmethod
    def ldcp(cls, *, k_min: int, k_max: int, p_max: float, k_drop: int, buf_max: int, **kw):
        """LDCP profile: RED ramp for ECN-capable packets, Not-ECT dropped at K."""
        return cls(profile="ldcp", k_min=k_min, k_max=k_max, p_max=p_max, k_drop=k_drop,
                   buf_max=buf_max, **kw)

    @classmethod
    def dcqcn(cls, *, k_min: int, k_max: int, p_max: float, buf_max: int, **kw):
        """DCQCN (RED-ECN) profile: RED ramp; Not-ECT forwarded."""
        kw.setdefault("k_drop", buf_max)
        return cls(profile="dcqcn", k_min=k_min, k_max=k_max, p_max=p_max, buf_max=buf_max, **kw)

    @classmethod
    def dctcp(cls, *, k: int, buf_max: int, **kw):
        """DCTCP step profile: CE when q >= K (``compare="gt"``: q > K)."""
        kw.setdefault("k_drop", buf_max)
        return cls(profile="dctcp", k_min=k, k_max=k, p_max=1.0, buf_max=buf_max, **kw)


    # -- derived widths -----------------------------------------------------------------------
    @property
    def queues(self) -> int:
        return self.ports * self.priorities

    @property
    def port_width(self) -> int:
        return bits_for(self.ports - 1)

    @property
    def prio_width(self) -> int:
        return bits_for(self.priorities - 1)

    @property
    def max_length(self) -> int:
        return (1 << self.len_width) - 1

    @property
    def shared_limit(self) -> int:
        return self.buf_max if self.shared_buffer is None else self.shared_buffer

    # -- the single user-unit -> register conversion -------------------------------------------
    def registers(self) -> MarkerRegisters:
        """Register values: enumerations as codes, P_max as UQ1.draw_bits (round to nearest)."""
        return MarkerRegisters(
            profile=Profile[self.profile.upper()].value,
            compare=Compare[self.compare.upper()].value,
            sample_at=SamplePoint[self.sample_at.upper()].value,
            k_min=self.k_min,
            k_max=self.k_max,
            p_max=round(self.p_max * (1 << self.draw_bits)),
            k_drop=self.k_drop,
            buf_max=self.buf_max,
            shared_buffer=self.shared_limit,
        )

    def register_map(self, name: str = "marker") -> RegisterMap:
        """The register map (addresses of :class:`MarkerReg`), with this configuration's reset
        values: the one declaration the RTL, the golden model, the docs and SystemRDL use."""
        r, W = self.registers(), self.occ_width
        cnt = "saturates at 2**32 - 1; a write clears or presets it"
        regs = [
            Register("CTRL", (
                Field("profile", 2, reset=r.profile, desc="0 LDCP, 1 DCQCN, 2 DCTCP (3: as 1)"),
                Field("compare", 1, reset=r.compare, desc="0 q >= K, 1 q > K"),
                Field("sample_at", 1, reset=r.sample_at, desc="ECN sampled at 0 enqueue, "
                      "1 dequeue"),
            ), "marker profile and conventions", MarkerReg.CTRL),
            Register.single("K_MIN", W, r.k_min, desc="ramp start, bytes", addr=MarkerReg.K_MIN),
            Register.single("K_MAX", W, r.k_max, desc="ramp end (DCTCP: the step K), bytes",
                            addr=MarkerReg.K_MAX),
            Register.single("P_MAX", self.draw_bits + 1, r.p_max,
                            desc=f"probability at the ramp end, UQ1.{self.draw_bits}",
                            addr=MarkerReg.P_MAX),
            Register.single("K_DROP", W, r.k_drop, desc="LDCP: Not-ECT dropped at K, bytes",
                            addr=MarkerReg.K_DROP),
            Register.single("BUF_MAX", W, r.buf_max, desc="per-queue limit, bytes",
                            addr=MarkerReg.BUF_MAX),
            Register.single("SHARED_BUFFER", W, r.shared_buffer,
                            desc="shared pool of all queues, bytes", addr=MarkerReg.SHARED_BUFFER),
            Register.single("SHARED_OCC", W, access="ro", desc="bytes held by all queues",
                            addr=MarkerReg.SHARED_OCC),
            *(Register.single(reg.name, CSR_DATA_WIDTH, desc=f"{what}; {cnt}", addr=reg)
              for reg, what in zip(MarkerReg.counters(), (
                  "packets admitted", "packets dequeued", "packets changed from ECT to CE",
                  "Not-ECT packets dropped at K", "packets dropped: queue full",
                  "packets dropped: shared pool full",
                  "descriptors rejected (bad queue or underflow)"), strict=True)),
        ]
        return RegisterMap(name, tuple(regs), BLOCK_TYPE, version=(1, 0),
                           desc="switch egress congestion point: queue occupancy, WRED/ECN "
                                "marker", data_width=CSR_DATA_WIDTH)

    # -- serialisation (tests pass configurations to cocotb through the environment) -----------
