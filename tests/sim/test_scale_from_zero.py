"""examples/scale-from-zero: KEDA's 0 <-> 1 path and the trap of triggering on a pod metric."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gpuscale.scenario import load_scenario
from gpuscale.sim import simulate_scenario

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "scale-from-zero" / "scenario.yaml"


def test_scale_to_zero_trap_and_its_price():
    result, walls = simulate_scenario(load_scenario(EXAMPLE), EXAMPLE.parent)
    runs = {r.name: r for r in result.runs}
    summary = {r["name"]: r for r in result.to_json(walls)["runs"]}

    # At zero replicas no vLLM pod exports num_requests_waiting: this ScaledObject never wakes.
    stuck = summary["keda-min0-on-vllm-queue"]
    assert stuck["requests"]["dropped"] >= 0.9 * stuck["requests"]["total"]
    assert runs["keda-min0-on-vllm-queue"].series["replicas_desired"][-1] == 0

    # A signal that exists without pods (the gateway queue) wakes it: it goes to zero in the
    # idle phase and comes back, but the first requests wait a cold start with a node launch.
    gateway = runs["keda-min0-on-gateway-queue"]
    t = gateway.series["time_s"]
    desired = gateway.series["replicas_desired"]
    idle = (t > 1500) & (t < 2400)
    afternoon = (t > 2500) & (t < 3600)
    assert np.any(desired[idle] == 0) and np.any(desired[afternoon] > 0)
    woke = summary["keda-min0-on-gateway-queue"]
    assert woke["requests"]["dropped"] < 0.1 * woke["requests"]["total"]
    assert woke["ttft_s"]["p99"] > 60.0  # node + weights + engine init in the request path

    # A warm replica serves everyone within the SLO.
    warm = summary["keda-min1-warm"]
    assert warm["requests"]["dropped"] == 0 and warm["slo_attainment"] >= 0.99
