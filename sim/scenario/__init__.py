"""Scenario layer of the network simulator: TOML scenarios, workloads, metrics, outputs.

``config.load(name_or_path)`` validates a scenario file into a frozen :class:`Scenario`;
``runner.run(scenario, algorithm)`` builds it on the core (:mod:`sim.net`) and runs it;
:mod:`~sim.scenario.metrics` and :mod:`~sim.scenario.output` turn results into numbers, CSV and
plots.  The command line is ``python -m sim`` (:mod:`sim.__main__`).
"""

from .config import Scenario, load
from .fields import ScenarioError

__all__ = ["Scenario", "ScenarioError", "load"]
