"""Each new kind runs a short scenario through the engine, completes, and scales with the burst."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuscale.serving.requests_table import COMPLETED
from gpuscale.sim import simulate_scenario

from ..sim.scenarios import small_scenario

STRATEGIES = [
    {"name": "sla", "autoscaler": {"kind": "sla_planner", "adjustment_interval_s": 60,
                                   "predictor": {"kind": "moving_average", "window_points": 1}}},
    {"name": "load", "autoscaler": {"kind": "load_planner"}},
    {"name": "wva", "autoscaler": {"kind": "wva", "max_replicas": 8}},
    {"name": "kpa", "autoscaler": {"kind": "kpa", "target": 20, "min_scale": 1}},
]


@pytest.fixture(scope="module")
def runs():
    scenario = small_scenario(rate_per_s=16.0, duration_s=450.0, strategies=STRATEGIES,
                              slo={"ttft_s": 1.0, "tpot_s": 0.04})
    result, _ = simulate_scenario(scenario, Path("."))
    return {run.name: run for run in result.runs}


@pytest.mark.parametrize("name", [s["name"] for s in STRATEGIES])
def test_each_kind_completes_and_scales_up_in_the_burst_then_back_down(name, runs):
    run = runs[name]
    assert len(run.requests.arrival_s) > 3000  # 450 s at 4 / 16 / 8 req/s
    desired = run.series["replicas_desired"]
    t = run.series["time_s"]
    assert run.summary.replicas.peak > 1  # scaled out for the burst (150-300 s)
    assert desired[t > 700].max() < run.summary.replicas.peak  # and back in once idle
    assert (run.requests.status == COMPLETED).mean() > 0.9  # the run drained
