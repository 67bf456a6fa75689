"""The full layer-2 schedulers drive serving replicas in the engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuscale.sim import simulate_scenario

from .scenarios import small_scenario


@pytest.mark.parametrize("scheduler", [{"kind": "kube-scheduler"}, {"kind": "kai"}])
def test_replicas_scheduled_by_a_real_scheduler_serve_every_request(scheduler):
    scenario = small_scenario(rate_per_s=8.0, duration_s=300.0, scheduler=scheduler)
    result, walls = simulate_scenario(scenario, Path("."))
    data = result.to_json(walls)
    for run in data["runs"]:
        counts = run["requests"]
        assert counts["completed"] == counts["total"] > 0
        assert run["scheduling"]["scheduler"] == scheduler["kind"]
    keda = next(r for r in result.runs if r.name == "keda-queue")
    # Scale-up still goes through layer 2 and layer 1: replicas beyond the warm node's four
    # GPUs need a launched node.
    assert keda.summary.replicas.peak > 1
