"""Configuration of the DCQCN notification point (per-QP CNP pacing, :mod:`hw.nic.dcqcn_np`).

``rule``:

- ``"paper"`` (DCQCN paper, ConnectX ``min_time_between_cnps``): a CE-marked packet triggers a
  CNP at once if none was sent for that flow in the last N; marks that arrive within N of the
  last CNP give one more CNP when the N window ends (at most one per N per flow).  N = 0 sends
  one CNP per marked packet (one outstanding per flow).
- ``"periodic"`` (the DCQCN authors' ns-3 simulator): every N (a grid from reset), each flow
  that received a marked packet in the interval gets one CNP.  N must be > 0.

``min_time_between_cnps`` is in µs (ConnectX knob name; the paper's N = 50 µs).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..lib.csr import Register, RegisterMap
from ..params import (
    BlockConfig,
    bits_for,
    check_choice,
    check_int,
    check_time_us,
    us_to_cycles,
)

__all__ = ["DcqcnNpConfig", "NP_RULES"]

NP_RULES = ("paper", "periodic")


@dataclass(frozen=True)
class DcqcnNpConfig(BlockConfig):
    """``flows``: QPs tracked (state in registers); ``clk_hz``; ``timer_width``: bits of each
    per-flow countdown (N in cycles must fit); ``rule``; ``min_time_between_cnps`` (µs)."""

    flows: int = 8
    clk_hz: int = 156_250_000
    timer_width: int = 16
    rule: str = "paper"
    min_time_between_cnps: int | float = 4

    def __post_init__(self):
        check_int(self, "flows", self.flows, 1, 256)
        check_int(self, "clk_hz", self.clk_hz, 1_000_000, 2_000_000_000)
        check_int(self, "timer_width", self.timer_width, 4, 32)
        check_choice(self, "rule", self.rule, NP_RULES)
        periodic = self.rule == "periodic"
        check_time_us(self, "min_time_between_cnps", self.min_time_between_cnps, self.clk_hz,
                      1 if periodic else 0, (1 << self.timer_width) - 1, zero=True,
                      note=f", timer_width {self.timer_width}"
                      + ("; the periodic rule needs N > 0" if periodic else ""))

    def register_map(self, name: str = "dcqcn_np") -> RegisterMap:
        """The run-time registers (reset: this configuration's values): N in cycles.  The rule
        and the number of flows are structural (build-time)."""
        n = Register.single(
            "MIN_TIME_BETWEEN_CNPS", self.timer_width, self.n_cycles,
            desc="N in clock cycles (ConnectX min_time_between_cnps x clk); paper rule: the "
                 "per-flow window reloaded at a CNP; periodic rule: the check period, reloaded "
                 "when the running period ends (0 there: a period of 2**timer_width)")
        return RegisterMap(name, (n,), "DCNP", version=(1, 0),
                           desc=f"DCQCN notification point, {self.flows} QPs, {self.rule} rule")

    @property
    def n_cycles(self) -> int:
        """N in cycles (the single user-unit -> hardware conversion)."""
        return us_to_cycles(self.min_time_between_cnps, self.clk_hz)

    @property
    def flow_width(self) -> int:
        return bits_for(self.flows - 1)


