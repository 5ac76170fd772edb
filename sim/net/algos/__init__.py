"""The algorithms, one module each, and their registry.

Each module defines its parameters (a frozen dataclass), its host endpoints (the transport:
packet numbering, go-back-N, timers, ACK policy), its switch profile and ``SPEC``, its
:class:`AlgorithmSpec`; the congestion engines sit behind :mod:`sim.net.engine_api`.  The
delay-based algorithms (:mod:`sim.net.timely`, :mod:`sim.net.swift`) register themselves when
:mod:`sim.net.algorithms` (the entry point everything imports) is imported.
"""

from __future__ import annotations

from . import dcqcn, dctcp, l3qcn, ldcp, qcn
from .common import AlgorithmSpec

#: name -> AlgorithmSpec, in the order the CLI lists them
ALGORITHMS: dict[str, AlgorithmSpec] = {}


def register(spec: AlgorithmSpec) -> None:
    """Add an algorithm (its name must be new)."""
    if spec.name in ALGORITHMS:
        raise ValueError(f"algorithm {spec.name!r} registered twice")
    ALGORITHMS[spec.name] = spec


for _m in (ldcp, dctcp, dcqcn, l3qcn, qcn):
    register(_m.SPEC)
