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

import dataclasses
import json
from dataclasses import dataclass

from ..params import ConfigError, bits_for, check_choice, check_int

__all__ = ["DcqcnNpConfig", "NP_RULES"]

NP_RULES = ("paper", "periodic")


@dataclass(frozen=True)
class DcqcnNpConfig:
    """``flows``: QPs tracked (state in registers); ``clk_hz``; ``timer_width``: bits of each
    per-flow countdown (N in cycles must fit); ``rule``; ``min_time_between_cnps`` (µs)."""

    flows: int = 8
    clk_hz: int = 250_000_000
    timer_width: int = 16
    rule: str = "paper"
    min_time_between_cnps: int | float = 4

    def __post_init__(self):
        check_int(self, "flows", self.flows, 1, 256)
        check_int(self, "clk_hz", self.clk_hz, 1_000_000, 2_000_000_000)
        check_int(self, "timer_width", self.timer_width, 4, 32)
        check_choice(self, "rule", self.rule, NP_RULES)
        n = self.min_time_between_cnps
        if isinstance(n, bool) or not isinstance(n, (int, float)) or n < 0:
            raise ConfigError(self, "min_time_between_cnps", n, "a time >= 0 µs")
        cycles = self.n_cycles
        lo = 1 if self.rule == "periodic" else 0
        hi = (1 << self.timer_width) - 1
        if not lo <= cycles <= hi:
            raise ConfigError(
                self, "min_time_between_cnps", n,
                f"{lo * 1e6 / self.clk_hz:g} µs <= min_time_between_cnps <= "
                f"{hi * 1e6 / self.clk_hz:g} µs ({lo} ... 2**timer_width - 1 cycles at clk_hz "
                f"{self.clk_hz}, timer_width {self.timer_width}"
                + ("; the periodic rule needs N > 0)" if self.rule == "periodic" else ")"))

    @property
    def n_cycles(self) -> int:
        """N in cycles (the single user-unit -> hardware conversion)."""
        return round(self.min_time_between_cnps * self.clk_hz / 1_000_000)

    @property
    def flow_width(self) -> int:
        return bits_for(self.flows - 1)

    def replace(self, **changes) -> DcqcnNpConfig:
        return dataclasses.replace(self, **changes)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> DcqcnNpConfig:
        return cls(**json.loads(text))
