"""Wires a scenario into the core loop, runs the control loops, returns results.

Belongs here: building the parts from a Scenario and running strategies on one shared
workload. Must not print, write files or read the wall clock (the CLI does).
"""

from gpuscale.sim.compare import ScenarioResult, simulate_scenario
from gpuscale.sim.run import RunResult, run_strategy

__all__ = ["RunResult", "ScenarioResult", "run_strategy", "simulate_scenario"]
