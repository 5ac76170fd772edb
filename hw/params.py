"""Validation helpers shared by every block's configuration dataclass.

Every configuration is a frozen dataclass validated in ``__post_init__``.  An invalid value
raises :class:`ConfigError`, whose message names the class, the field, the value and the range
that would have been accepted, e.g.::

    MarkerConfig.p_max = 1.5 is out of range: allowed 0 < p_max <= 1
"""

from __future__ import annotations

import math

__all__ = ["ConfigError", "check_int", "check_real", "check_choice", "bits_for"]


class ConfigError(ValueError):
    """An invalid configuration value. The message names field, value and allowed range."""

    def __init__(self, owner, field: str, value, allowed: str):
        owner = _owner(owner)
        self.owner, self.field, self.value, self.allowed = owner, field, value, allowed
        super().__init__(f"{owner}.{field} = {value!r} is out of range: allowed {allowed}")


def _owner(obj) -> str:
    return obj if isinstance(obj, str) else type(obj).__name__


def check_int(obj, field: str, value, lo: int | None = None, hi: int | None = None,
              *, lo_name: str | None = None, hi_name: str | None = None) -> int:
    """Check that ``value`` is an int (not a bool) with ``lo <= value <= hi``.

    ``lo_name``/``hi_name`` describe a bound that comes from another field, so the message reads
    ``allowed 0 <= k_min <= k_max (= 4000)``.
    """
    def describe() -> str:
        parts = []
        if lo is not None:
            parts.append(f"{lo_name} (= {lo})" if lo_name else f"{lo}")
        parts.append(field)
        if hi is not None:
            parts.append(f"{hi_name} (= {hi})" if hi_name else f"{hi}")
        return "integer " + " <= ".join(parts)

    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(_owner(obj), field, value, describe())
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ConfigError(_owner(obj), field, value, describe())
    return value


def check_real(obj, field: str, value, lo: float, hi: float,
               *, lo_open: bool = False, hi_open: bool = False) -> float:
    """Check that ``value`` is a finite real number inside the given (half-)open interval."""
    lo_op = "<" if lo_open else "<="
    hi_op = "<" if hi_open else "<="
    allowed = f"{lo} {lo_op} {field} {hi_op} {hi}"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(_owner(obj), field, value, allowed)
    if (value <= lo if lo_open else value < lo) or (value >= hi if hi_open else value > hi):
        raise ConfigError(_owner(obj), field, value, allowed)
    return float(value)


def check_choice(obj, field: str, value, choices) -> None:
    """Check that ``value`` is one of ``choices``."""
    if value not in tuple(choices):
        raise ConfigError(_owner(obj), field, value, "one of " + ", ".join(map(repr, choices)))


def check_bool(obj, field: str, value) -> None:
    """Check that ``value`` is a bool (``1`` is not: :func:`check_choice` would accept it)."""
    if not isinstance(value, bool):
        raise ConfigError(_owner(obj), field, value, "one of False, True")


def bits_for(max_value: int) -> int:
    """Smallest unsigned width that holds ``max_value`` (at least 1)."""
    return max(1, int(max_value).bit_length())
