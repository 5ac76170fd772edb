"""Filling a frozen dataclass from a TOML table, with errors that name the file and key path.

One function, :func:`build`, turns ``{"delay_us": 1, "senders": 16}`` into
``DumbbellTopology(delay_ps=1_000_000, senders=16)``:

- a key equal to a field name sets it, after a type check against the field's annotation
  (``int`` rejects ``1.5`` and ``true``; ``float`` takes integers and decimals; ``bool``, ``str``;
  ``X | None`` is ``X``; a nested dataclass takes a sub-table);
- a key with a unit suffix (:mod:`sim.scenario.units`) sets the field of the same base whose
  suffix is of the same family, converted exactly (``delay_us = 1.5`` -> ``delay_ps =
  1_500_000``, ``rto_us = 1`` -> ``rto_ns = 1000``);
- any other key is an error listing the keys that are allowed, a field set twice (``delay_us``
  and ``delay_ns``) is an error, and a :class:`hw.params.ConfigError` from the class's own
  validation comes back as a :class:`ScenarioError` on the key that set the field.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from decimal import Decimal

from hw.params import ConfigError

from .units import convert, spellings, split_unit

_MISSING = object()


class ScenarioError(ValueError):
    """A bad scenario: the message names the file, the key path, the value and the problem."""

    def __init__(self, source: str, path: str, value, problem: str):
        self.source, self.path, self.value, self.problem = source, path, value, problem
        shown = "" if value is _MISSING else f" = {show(value)}"
        where = ": ".join(part for part in (source, f"{path}{shown}") if part)
        super().__init__(f"{where}: {problem}")


def show(value) -> str:
    """A TOML-ish rendering of a value for error messages (Decimal as written, not repr)."""
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {show(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(show(v) for v in value) + "]"
    return repr(value)


def join(path: str, key) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def missing():
    return _MISSING


def _plain(hint):
    """``int | None`` -> ``int``; other hints unchanged."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return hint


def coerce(hint, value, source: str, path: str):
    """Check ``value`` (from TOML) against the annotation ``hint``; return the Python value."""
    hint = _plain(hint)
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise ScenarioError(source, path, value, "expected a table")
        return build(hint, value, source, path)
    if hint is bool:
        if not isinstance(value, bool):
            raise ScenarioError(source, path, value, "expected true or false")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ScenarioError(source, path, value, "expected an integer")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
            raise ScenarioError(source, path, value, "expected a number")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ScenarioError(source, path, value, "expected a string")
        return value
    if typing.get_origin(hint) is tuple:
        if not isinstance(value, list):
            raise ScenarioError(source, path, value, "expected an array")
        (item, *_rest) = typing.get_args(hint)
        return tuple(coerce(item, v, source, join(path, i)) for i, v in enumerate(value))
    return float(value) if isinstance(value, Decimal) else value


def _unit_field(key: str, fields) -> str | None:
    """The field a unit-suffixed key sets: same base, a suffix of the same family."""
    unit = split_unit(key)
    if unit is None:
        return None
    base, family, _ = unit
    for suffix in family:
        if base + suffix in fields:
            return base + suffix
    return None


def build(cls, table: dict, source: str, path: str, *, skip: tuple[str, ...] = ()):
    """Construct ``cls`` from ``table``; keys in ``skip`` are ignored (handled by the caller)."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    kwargs: dict = {}
    origin: dict[str, tuple[str, object]] = {}
    for key, value in table.items():
        if key in skip:
            continue
        key_path = join(path, key)
        if key in fields:
            name = key
            converted = coerce(hints[name], value, source, key_path)
        else:
            name = _unit_field(key, fields)
            if name is None:
                # (the keys the caller handles are valid keys too: kind, the sections)
                allowed = ", ".join([spellings(f) for f in fields if f not in skip]
                                    + [k for k in skip if k not in fields])
                raise ScenarioError(source, key_path, value,
                                    f"unknown key; allowed keys: {allowed}")
            target = _plain(hints[name])
            if target not in (int, float):
                raise ScenarioError(source, key_path, value, f"{name} takes no unit")
            (_, family, suffix), (_, _, field_suffix) = split_unit(key), split_unit(name)
            try:
                converted = convert(value, family[suffix], family[field_suffix],
                                    integral=target is int)
            except ValueError as e:
                raise ScenarioError(source, key_path, value, f"{e} (field {name})") from None
        if name in kwargs:
            raise ScenarioError(source, key_path, value,
                                f"sets {name}, already set by {origin[name][0]}")
        kwargs[name] = converted
        origin[name] = (key_path, value)
    for name, f in fields.items():
        if name not in kwargs and name not in skip and f.default is dataclasses.MISSING \
                and f.default_factory is dataclasses.MISSING:
            raise ScenarioError(source, join(path, spellings(name)), _MISSING,
                                "required key is missing")
    try:
        return cls(**kwargs)
    except ConfigError as e:
        key_path, value = origin.get(e.field, (join(path, e.field), e.value))
        raise ScenarioError(source, key_path, value, str(e)) from None
