"""The simulator core's public API as the scenario layer uses it (one place to adapt)."""

from __future__ import annotations

from types import SimpleNamespace


def api() -> SimpleNamespace:
    """``ALGORITHMS``, ``SwitchConfig``, ``PfcConfig``, ``Network``, ``FlowSpec``, ``topology``."""
    from sim.net import topology
    from sim.net.algorithms import ALGORITHMS
    from sim.net.network import FlowSpec, Network, PfcConfig, SwitchConfig

    return SimpleNamespace(ALGORITHMS=ALGORITHMS, SwitchConfig=SwitchConfig, PfcConfig=PfcConfig,
                           Network=Network, FlowSpec=FlowSpec, topology=topology)
