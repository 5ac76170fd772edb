"""Unit suffixes of scenario keys, converted exactly to the simulator's integer units.

Three families: time ``_ps _ns _us _ms``, rate ``_bps _mbps _gbps``, size ``_bytes _kb _mb``
(decimal: 1 KB = 1000 B, as link rates are decimal).  A key ``<base><suffix>`` sets the field
``<base><suffix'>`` of the target dataclass whose suffix is in the same family, converted:
``delay_us = 1.5`` sets ``delay_ps = 1_500_000``; ``rto_us = 1`` sets ``rto_ns = 1000``;
``buffer_kb = 12`` sets ``buffer_bytes = 12_000``.

TOML floats are read as :class:`decimal.Decimal` (``tomllib.load(parse_float=Decimal)``), so
``delay_us = 0.1`` is exactly 100,000 ps; a value that is not a whole number of an integer
field's unit (``delay_ns = 0.0001``) is an error, never rounded.
"""

from __future__ import annotations

from decimal import Decimal

#: Unit families: suffix -> value of one unit in the family's base unit.
FAMILIES: tuple[dict[str, int], ...] = (
    {"_ps": 1, "_ns": 10**3, "_us": 10**6, "_ms": 10**9},
    {"_bps": 1, "_mbps": 10**6, "_gbps": 10**9},
    {"_bytes": 1, "_kb": 1000, "_mb": 10**6},
)


def split_unit(key: str) -> tuple[str, dict[str, int], str] | None:
    """``"delay_us"`` -> ``("delay", <time family>, "_us")``; None without a unit suffix."""
    for family in FAMILIES:
        for suffix in sorted(family, key=len, reverse=True):
            if key.endswith(suffix) and len(key) > len(suffix):
                return key[: -len(suffix)], family, suffix
    return None


def spellings(name: str) -> str:
    """``delay_ps`` -> ``delay_{ps|ns|us|ms}``: how a field with a unit may be written."""
    unit = split_unit(name)
    if unit is None:
        return name
    base, family, _ = unit
    return base + "_{" + "|".join(s[1:] for s in family) + "}"


def exact(value) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, (int, Decimal, float)):
        raise ValueError("expected a number")
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)


def convert(value, from_factor: int, to_factor: int, integral: bool = True):
    """``value`` in a unit worth ``from_factor`` base units, expressed in a unit worth
    ``to_factor``: an exact int if ``integral`` (ValueError if not whole), else a float."""
    scaled = exact(value) * from_factor / to_factor
    if not integral:
        return float(scaled)
    if not scaled.is_finite() or scaled != scaled.to_integral_value():
        raise ValueError(f"is not a whole number of the field's unit ({scaled.normalize()})")
    return int(scaled)
