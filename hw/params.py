"""Validation helpers shared by every block's configuration dataclass.

Every configuration is a frozen dataclass validated in ``__post_init__``.  An invalid value
raises :class:`ConfigError`, whose message names the class, the field, the value and the range
that would have been accepted, e.g.::

    MarkerConfig.p_max = 1.5 is out of range: allowed 0 < p_max <= 1

:class:`BlockConfig` is the base of every ``*Config``: ``replace``, ``to_json``/``from_json``
(nested configurations and tuples rebuilt from their field defaults) and the one
microseconds-to-cycles conversion, :func:`us_to_cycles`.
"""

from __future__ import annotations

import dataclasses
import json
import math

__all__ = ["ConfigError", "BlockConfig", "check_int", "check_real", "check_choice",
           "check_bool", "check_time_us", "us_to_cycles", "cycles_to_us", "bits_for"]


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


def us_to_cycles(us: float, clk_hz: int) -> int:
    """Microseconds to whole clock cycles at ``clk_hz`` (round half to even, as ``round``)."""
    return round(us * clk_hz / 1_000_000)


def cycles_to_us(cycles: float, clk_hz: int) -> float:
    """Clock cycles at ``clk_hz`` to microseconds."""
    return cycles * 1e6 / clk_hz


def check_time_us(obj, field: str, value, clk_hz: int, lo: int, hi: int, *, zero: bool = False,
                  note: str = "") -> int:
    """Check a time in µs: a finite real number (not a bool), > 0 (>= 0 with ``zero``), whose
    :func:`us_to_cycles` lies in ``[lo, hi]``; return the cycles.  The message gives the range
    in µs and in cycles at ``clk_hz``, plus ``note`` (e.g. the counter width)."""
    bad = (isinstance(value, bool) or not isinstance(value, (int, float))
           or not math.isfinite(value) or value < 0 or (value == 0 and not zero))
    cycles = None if bad else us_to_cycles(value, clk_hz)
    if cycles is None or not lo <= cycles <= hi:
        raise ConfigError(obj, field, value,
                          f"{cycles_to_us(lo, clk_hz):g} µs <= {field} <= "
                          f"{cycles_to_us(hi, clk_hz):g} µs ({lo} ... {hi} cycles at clk_hz "
                          f"{clk_hz}{note})")
    return cycles


class BlockConfig:
    """Base of the frozen configuration dataclasses: what every ``*Config`` shares.

    A subclass is a ``@dataclass(frozen=True)`` that validates in ``__post_init__`` with the
    ``check_*`` helpers above.  Serialisation is JSON of ``dataclasses.asdict``; ``from_json``
    rebuilds a field whose default is itself a dataclass (``LfsrParams``, a nested
    configuration) and turns JSON lists back into tuples, so ``from_json(c.to_json()) == c``.
    """

    def replace(self, **changes):
        """A copy with ``changes`` applied (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str):
        return _from_dict(cls, json.loads(text))


def _from_dict(cls, d: dict):
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name not in d:
            continue
        value = d[f.name]
        if isinstance(value, dict):
            default = (f.default_factory() if f.default_factory is not dataclasses.MISSING
                       else f.default)
            if dataclasses.is_dataclass(default):
                value = _from_dict(type(default), value)
        elif isinstance(value, list):
            value = _tuples(value)
        kwargs[f.name] = value
    unknown = sorted(set(d) - set(kwargs))
    if unknown:
        raise ConfigError(cls.__name__, unknown[0], d[unknown[0]], "a field of the configuration")
    return cls(**kwargs)


def _tuples(value):
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value
