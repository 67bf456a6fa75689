"""Simulate the tiny scenario once per test session and hand out its results (JSON + series)."""

from __future__ import annotations

import copy
import functools
from pathlib import Path

from gpuscale.report.timeline import attach_series
from gpuscale.scenario import scenario_from_dict
from gpuscale.sim import simulate_scenario

from .scenarios import tiny


@functools.cache
def _simulated():
    result, walls = simulate_scenario(scenario_from_dict(tiny()), Path("."))
    return result, walls


def tiny_result():
    return _simulated()[0]


def tiny_json(series: bool = True) -> dict:
    result, walls = _simulated()
    data = result.to_json(walls)
    return copy.deepcopy(attach_series(data, result) if series else data)
