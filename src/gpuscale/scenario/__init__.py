"""Scenario schema (pydantic) and loading with clear errors.

Belongs here: the shape of a scenario file and its validation. Must not run anything.

The names below are loaded on first use (PEP 562), so importing a light submodule such as
`gpuscale.scenario.kinds` (what `audit` needs) does not import the schema and every layer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpuscale.scenario.load import load_scenario, scenario_from_dict
    from gpuscale.scenario.models import Scenario

__all__ = ["Scenario", "load_scenario", "scenario_from_dict"]

_HOME = {"Scenario": "gpuscale.scenario.models", "load_scenario": "gpuscale.scenario.load",
         "scenario_from_dict": "gpuscale.scenario.load"}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'gpuscale.scenario' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_HOME[name]), name)
