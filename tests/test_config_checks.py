"""Every hardware configuration rejects non-bool flags and non-finite reals with a ConfigError.

The checks run over every frozen configuration dataclass of ``hw/**/*_config.py`` (and every
``BlockConfig`` elsewhere in ``hw/``, such as the per-flow engines') that can be built from its
defaults: a field whose default is a bool must refuse ``1``/``0`` (``1 == True``,
so a membership test would let it through), and a field whose default is a number must refuse
inf, -inf and NaN (with a ConfigError naming the field, not an OverflowError from a
conversion).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import pkgutil

import pytest

from hw.params import BlockConfig, ConfigError, check_bool, check_real

PACKAGES = ("hw", "hw.nic", "hw.switch")


def _config_classes():
    out = []
    for pkg in PACKAGES:
        for info in pkgutil.iter_modules(importlib.import_module(pkg).__path__):
            if info.ispkg:
                continue
            mod = importlib.import_module(f"{pkg}.{info.name}")
            for cls in vars(mod).values():
                if (inspect.isclass(cls) and dataclasses.is_dataclass(cls)
                        and cls.__module__ == mod.__name__
                        and (info.name.endswith("_config") or issubclass(cls, BlockConfig))):
                    try:
                        cls()
                    except TypeError:          # register bundles: no defaults, not user input
                        continue
                    out.append(cls)
    return out


CLASSES = _config_classes()


def _fields(kind):
    cases = []
    for cls in CLASSES:
        base = cls()
        for f in dataclasses.fields(cls):
            value = getattr(base, f.name)
            if kind(value):
                cases.append(pytest.param(cls, f.name, id=f"{cls.__name__}.{f.name}"))
    return cases


BOOL_FIELDS = _fields(lambda v: isinstance(v, bool))
REAL_FIELDS = _fields(lambda v: isinstance(v, int | float) and not isinstance(v, bool))


def test_the_scan_finds_the_configurations():
    names = {c.__name__ for c in CLASSES}
    assert {"DcqcnRpConfig", "MarkerConfig", "QcnRpConfig", "CnmGenConfig",
            "TimelyConfig", "DcqcnEngineConfig"} <= names
    assert len(BOOL_FIELDS) >= 6 and len(REAL_FIELDS) >= 50


@pytest.mark.parametrize("cls, name", BOOL_FIELDS)
@pytest.mark.parametrize("value", [1, 0, "yes", None])
def test_flags_reject_non_bools(cls, name, value):
    with pytest.raises(ConfigError, match=rf"{cls.__name__}\.{name} = "):
        cls(**{name: value})


@pytest.mark.parametrize("cls, name", BOOL_FIELDS)
def test_flags_accept_bools(cls, name):
    for value in (False, True):
        try:
            cls(**{name: value})
        except ConfigError as e:         # a flag may be tied to other fields, never to its type
            assert e.field != name, e


@pytest.mark.parametrize("cls, name", REAL_FIELDS)
@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_numbers_reject_non_finite(cls, name, value):
    with pytest.raises(ConfigError):
        cls(**{name: value})


def test_the_examples_of_the_issue():
    from hw.nic.dcqcn_config import DcqcnRpConfig

    with pytest.raises(ConfigError, match=r"DcqcnRpConfig\.rt_guard = 1 .*False, True"):
        DcqcnRpConfig(rt_guard=1)
    with pytest.raises(ConfigError, match=r"rt_guard"):
        DcqcnRpConfig.profile("ns3-rdma", rt_guard=1)
    for bad in (math.inf, math.nan):
        with pytest.raises(ConfigError, match=r"DcqcnRpConfig\.rpg_time_reset = "):
            DcqcnRpConfig(rpg_time_reset=bad)
    assert DcqcnRpConfig(rt_guard=True).registers().rt_guard == 1


def test_helpers():
    check_bool("X", "flag", True)
    with pytest.raises(ConfigError, match=r"X\.flag = 1 is out of range"):
        check_bool("X", "flag", 1)
    for bad in (math.inf, math.nan, True, "1"):
        with pytest.raises(ConfigError):
            check_real("X", "r", bad, 0.0, 10.0)
    assert check_real("X", "r", 3, 0.0, 10.0) == 3.0
