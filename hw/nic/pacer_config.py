"""Configuration of the multi-flow pacer (:mod:`hw.nic.pacer`), a datapath of the multi-flow
engine (:mod:`hw.nic.flow_engine`).

One frozen, validated :class:`PacerConfig` sizes the engine (flows, time width, wheel) and the
pacer's per-flow fields.  Times are in clock cycles; an inter-packet interval is an unsigned
fixed-point number of cycles with ``frac_bits`` fraction bits (UQ ``ival_int_bits``.``frac_bits``).
The rate -> interval conversion is the writer's (a CSR or the rate engine that feeds the pacer):
:meth:`PacerConfig.interval_for` is the documented one (rounded up, so a flow never exceeds its
rate).  In byte mode (a per-flow bit, present only in builds with ``byte_mode=True``) the
interval is per byte and each packet is charged its own size, reported by the NIC:
:meth:`PacerConfig.byte_interval_for` converts a rate.  docs/pacer.md describes the design and
the Fmax trade of ``byte_mode``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from ..params import BlockConfig, ConfigError, check_bool, check_int
from .flow_engine import reeval
from .flow_engine_config import CSR_DATA_WIDTH, FlowEngineConfig

__all__ = ["PacerConfig", "MIN_INTERVAL"]

#: The shortest interval (cycles) a flow is paced at with lateness 0: a grant's next deadline is
#: inserted into the wheel at the grant's write-back and can pop REEVAL = 9 cycles after the
#: grant at the earliest (a one-cycle datapath: pipeline 5 + wheel insert latency 4).  Shorter
#: intervals are served at one grant per 9 cycles (156.25 MHz / 9 = 17.4 M grants/s per flow).
#: A build whose datapath latency L is 2 ... 5 (``byte_mode``, ``update_cycles``) re-issues
#: after ``reeval(L)`` = L + 8 cycles: ``PacerConfig.min_interval``.
MIN_INTERVAL = reeval(1)


@dataclass(frozen=True)
class PacerConfig(BlockConfig):
    """Pacer sizing.

    engine: the multi-flow engine (flows, ``time_width`` W, wheel, output FIFO);
    frac_bits: F, fraction bits of an interval and of a deadline (1 ... 24);
    ival_int_bits: integer bits of an interval (1 ... W - 2: every deadline must stay within
      2**(W-2) cycles of now for the wrap-safe compares);
    backlog_width: bits of the per-flow backlog (packets waiting; saturating);
    count_width: bits of the packet count of one ``tx`` event (1 ... backlog_width);
    grant_width: bits of the per-flow grant counter (the ``rate`` output value; 2 ... 32);
    size_width: bits of a packet size reported on ``tx`` (bytes; 1 ... 16: 14 covers 9000-byte
      jumbo frames), the factor of the byte-mode charge ``size x ival`` (byte_mode only);
    byte_mode: build the per-flow byte mode (the ``bytes``/``wait``/``last`` fields, the
      ``bytes_init`` register, the ``size`` of a ``tx`` payload and the ``size_width x (W + F)``
      charge as carry-save rows over the update's first two cycles).  Off (the default)
      the pacer is packets only and keeps its Fmax without the multiplier (docs/pacer.md,
      "Byte mode is a build option").
      A byte-mode build's update takes 2 more cycles (the product's own two first);
    update_cycles: the update's cycles, 1 (the default: one modify cycle), 2 (the
      sums and compares, then the selects) or 3 (the sums and compares, then the flags, then
      the selects): the datapath latency L; the engine keeps two events of one flow L cycles
      apart and re-issues a flow's next deadline after ``reeval(L)`` = L + 8 cycles
      (``min_interval``).  With ``byte_mode`` the update's cycles after the product's two:
      L = update_cycles + 2 (docs/pacer.md, "The update alone").
    """

    engine: FlowEngineConfig = FlowEngineConfig()
    frac_bits: int = 16
    ival_int_bits: int = 24
    backlog_width: int = 16
    count_width: int = 8
    grant_width: int = 16
    size_width: int = 14
    byte_mode: bool = False
    update_cycles: int = 1

    def __post_init__(self):
        if not isinstance(self.engine, FlowEngineConfig):
            raise ConfigError(self, "engine", self.engine, "a FlowEngineConfig")
        W = self.engine.time_width
        check_int(self, "frac_bits", self.frac_bits, 1, 24)
        check_int(self, "ival_int_bits", self.ival_int_bits, 1, W - 2,
                  hi_name="engine.time_width - 2")
        check_int(self, "backlog_width", self.backlog_width, 1, 32)
        check_int(self, "count_width", self.count_width, 1, self.backlog_width,
                  hi_name="backlog_width")
        check_int(self, "grant_width", self.grant_width, 2, 32)
        check_int(self, "size_width", self.size_width, 1, 16)
        check_bool(self, "byte_mode", self.byte_mode)
        check_int(self, "update_cycles", self.update_cycles, 1, 3)

    # -- derived -------------------------------------------------------------------------
    @property
    def ival_width(self) -> int:
        """Bits of an interval: ``ival_int_bits + frac_bits``."""
        return self.ival_int_bits + self.frac_bits

    @property
    def latency(self) -> int:
        """Clock cycles of the datapath's update (the engine's modify stage):
        ``update_cycles``, plus 2 in a ``byte_mode`` build (the product's two cycles, then
        the update's)."""
        return self.update_cycles + (2 if self.byte_mode else 0)

    @property
    def min_interval(self) -> int:
        """The shortest interval (cycles) paced with lateness 0: the engine's re-issue distance
        ``reeval(latency)`` (the pipeline ``latency + 4`` plus the wheel's insert latency 4):
        9 cycles (:data:`MIN_INTERVAL`), 10 at latency 2 ... 13 at latency 5."""
        return reeval(self.latency)

    @property
    def next_width(self) -> int:
        """Bits of a deadline: ``time_width + frac_bits``."""
        return self.engine.time_width + self.frac_bits

    @property
    def init_reg_width(self) -> int:
        """Bits of the ``ival_init`` register (the interval START/RESET load), at most the
        register file's 32."""
        return min(CSR_DATA_WIDTH, self.ival_width)

    @property
    def burst_width(self) -> int:
        """Bits of the ``burst`` register (cycles): W - 1, at most 32.  The burst cap compares
        it with a grant's lateness, which is below 2**(W-1) for a due flow, so the maximum
        2**(W-1) - 1 never caps (at W <= 33; a wider time caps at 2**32 - 1 cycles)."""
        return min(CSR_DATA_WIDTH, self.engine.time_width - 1)

    @property
    def burst_max(self) -> int:
        """The largest ``burst`` (its reset value): no cap, the pacer's full catch-up."""
        return (1 << self.burst_width) - 1

    @property
    def tx_width(self) -> int:
        """Bits of a ``tx`` payload: ``{count (count_width), size (size_width)}`` with
        ``byte_mode``, ``{count}`` without."""
        return self.count_width + (self.size_width if self.byte_mode else 0)

    def tx_payload(self, count: int = 0, size: int = 0) -> int:
        """The ``tx`` payload bits: ``count`` packets enqueued, ``size`` the bytes of the
        packet sent for the flow's last grant (byte mode; 0 = no report; a build without
        ``byte_mode`` has no size: a size != 0 is a :class:`ConfigError`)."""
        check_int(self, "count", count, 0, (1 << self.count_width) - 1)
        if size and not self.byte_mode:
            raise ConfigError(self, "size", size, "0 (a size report needs byte_mode=True)")
        check_int(self, "size", size, 0, (1 << self.size_width) - 1)
        return count | size << self.count_width

    @property
    def max_interval(self) -> int:
        """The largest interval, in UQ.F units."""
        return (1 << self.ival_width) - 1

    def state_bits(self) -> int:
        """Bits of the pacer's per-flow state (the engine adds its own 8 + W)."""
        return (self.grant_width + self.backlog_width + 1 + self.next_width
                + self.ival_width + (2 + self.size_width if self.byte_mode else 0))

    def register_map(self, name: str = "pacer"):
        """The pacer top's register map (:func:`hw.nic.engine_regs.engine_register_map`, block
        type ``PACE``): the knobs ``IVAL_INIT``, ``BURST``, ``WC`` (and ``BYTES_INIT`` in a
        byte-mode build) at words 0 ..., reset to this configuration's values, the engine's
        counters from 0x80, the header at 0x100 and a window per flow: ``GRANTS`` (read-only),
        ``BACKLOG``, ``ARMED``, ``NEXT_W0/W1`` and ``IVAL_W0/W1`` (``next`` is W + F = 42 bits
        and ``ival`` 40 at the defaults: two words each, written atomically), the byte-mode
        fields, ``CTRL``.  docs/pacer.md, "Registers and ports", has the write rules."""
        from .engine_regs import engine_register_map
        from .pacer import PacerDatapath
        F, W = self.frac_bits, self.engine.time_width
        reg_desc = {
            "ival_init": f"the interval a START/RESET loads, UQ{self.ival_int_bits}.{F} cycles "
                         "(the low 32 bits of ival)",
            "burst": "the burst cap, cycles: a late grant's deadline is raised to at least "
                     "t - burst (0: no catch-up; the maximum never caps)",
            "wc": "1: work-conserving (an empty tx, a pull, grants an armed backlogged flow "
                  "early and restarts its grid)",
            "bytes_init": "the byte-mode bit a START/RESET loads (1: the flow paces bytes)",
        }
        field_desc = {
            "grants": "grants so far (wraps to 1; read-only here: every change of it is a "
                      "grant record on rate)",
            "backlog": "packets waiting (saturating)",
            "armed": "1: next is a live deadline (write 1 last to arm a flow by hand)",
            "next": f"the next send time, UQ{W}.{F} cycles biased by 1 - 2**-{F} (a write of "
                    "an armed flow re-schedules it at once)",
            "ival": f"the interval, UQ{self.ival_int_bits}.{F} cycles (per byte in byte "
                    "mode; a write counts from the next grant, a cn moves the pending one)",
            "bytes": "1: byte mode (each grant charged its reported size)",
            "wait": "1: a byte-mode grant waits for its size report (read-only here)",
            "last": "the size of the last packet charged, bytes",
        }
        return engine_register_map(
            name, PacerDatapath(self), "PACE",
            f"multi-flow pacer, {self.engine.n_flows} flows"
            + (", byte mode" if self.byte_mode else ""),
            reg_desc=reg_desc, flows=self.engine.n_flows, field_desc=field_desc,
            timer=self.engine.timer)

    def interval_for(self, rate_bps: float, packet_bytes: int) -> int:
        """The interval (UQ.F cycles) of ``packet_bytes``-byte packets at ``rate_bps``: the
        exact ``clk_hz x 8 x packet_bytes / rate`` rounded UP to the next 2**-F cycle (so the
        flow never exceeds its rate; relative rate error < 2**-F / interval).  Raises a
        :class:`ConfigError` if it does not fit ``ival_int_bits``."""
        if (isinstance(rate_bps, bool) or not isinstance(rate_bps, (int, float))
                or not math.isfinite(rate_bps) or rate_bps <= 0):
            raise ConfigError(self, "rate_bps", rate_bps, "a finite rate > 0")
        check_int(self, "packet_bytes", packet_bytes, 1, 1 << 20)
        exact = Fraction(self.engine.clk_hz * 8 * packet_bytes) / Fraction(rate_bps)
        units = math.ceil(exact * (1 << self.frac_bits))
        if units > self.max_interval:
            raise ConfigError(self, "rate_bps", rate_bps,
                              f"an interval below 2**{self.ival_int_bits} cycles")
        return units

    def byte_interval_for(self, rate_bps: float) -> int:
        """The byte-mode interval (UQ.F cycles per byte) of a flow at ``rate_bps``:
        ``interval_for(rate_bps, 1)``, i.e. ``clk_hz x 8 / rate`` rounded UP to the next 2**-F
        (relative rate error < 2**-F / interval: 0.12 % at 100 Gb/s with F = 16, 5e-6 with
        F = 24).  A :class:`ConfigError` without ``byte_mode``."""
        if not self.byte_mode:
            raise ConfigError(self, "byte_mode", self.byte_mode,
                              "True for a byte-mode interval (this build paces packets only)")
        return self.interval_for(rate_bps, 1)
