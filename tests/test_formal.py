"""The short subset of the formal properties (``python -m tests.formal --quick``): each one
proven (k-induction) or checked to its bound by SymbiYosys with Yices, and all its cover
statements reached.  ``make formal`` runs them all (docs/verification.md)."""

from __future__ import annotations

import pytest

from tests.formal.runner import all_properties, run_property, sby_tools

QUICK = all_properties(quick_only=True)


@pytest.mark.parametrize("prop", QUICK, ids=[p.name for p in QUICK])
def test_formal_property(prop):
    tools = sby_tools()
    if tools is None:
        pytest.skip("yowasp-sby / yices-smt2 not installed (pip install -e '.[dev]')")
    result = run_property(prop, tools)
    assert result.ok, result.line()
