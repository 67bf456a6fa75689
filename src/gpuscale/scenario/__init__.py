"""Scenario schema (pydantic) and loading with clear errors.

Belongs here: the shape of a scenario file and its validation. Must not run anything.
"""

from gpuscale.scenario.load import load_scenario, scenario_from_dict
from gpuscale.scenario.models import Scenario

__all__ = ["Scenario", "load_scenario", "scenario_from_dict"]
