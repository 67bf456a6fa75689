"""GPU-hours and cost are the traffic's window; the drain is reported apart (issue 27: a
1-hour trace's plan billed a 3,935 s drain as if it served traffic)."""

from __future__ import annotations

import pytest

from gpuscale.catalog import get_instance_type
from gpuscale.sim import simulate_scenario

from .scenarios import small_scenario


def test_fixed_fleet_bills_its_window_and_the_drain_apart(tmp_path):
    scenario = small_scenario(duration_s=600.0, drain_s=900.0, strategies=[
        {"name": "fixed-1", "autoscaler": {"kind": "fixed", "replicas": 1}}])
    s = simulate_scenario(scenario, tmp_path)[0].runs[0].summary
    itype = get_instance_type(scenario.cluster.instance_type)
    # one warm node all along, nothing launched
    assert s.nodes.launched == 0
    assert s.gpu_hours == pytest.approx(itype.num_gpus * 600.0 / 3600.0)
    assert s.drain_gpu_hours == pytest.approx(itype.num_gpus * 900.0 / 3600.0)
    assert s.cost_usd == pytest.approx(itype.on_demand_usd_per_hour * 600.0 / 3600.0, abs=1e-3)
    assert s.drain_cost_usd == pytest.approx(itype.on_demand_usd_per_hour * 900.0 / 3600.0,
                                             abs=1e-3)


def test_efficiency_is_the_oracle_over_the_window(tmp_path):
    scenario = small_scenario(duration_s=600.0, drain_s=1800.0)
    for run in simulate_scenario(scenario, tmp_path)[0].runs:
        s = run.summary
        assert s.efficiency == pytest.approx(s.oracle_gpu_hours / s.gpu_hours, rel=1e-4)


def test_each_strategy_starts_from_its_own_initial_replicas_and_nodes(tmp_path):
    # issue 27: the replay started every strategy from the plan's floor and nodes
    keda = {"kind": "keda", "min_replica_count": 1, "max_replica_count": 4, "triggers": [
        {"query": {"metric": "vllm:num_requests_waiting", "aggregation": "sum"},
         "threshold": 5}]}
    scenario = small_scenario(duration_s=300.0, initial_replicas=3, strategies=[
        {"name": "warm", "autoscaler": keda},
        {"name": "cold", "autoscaler": keda, "initial_replicas": 1, "ready_nodes": 1},
        {"name": "fixed-2", "autoscaler": {"kind": "fixed", "replicas": 2},
         "initial_replicas": 2}])
    runs = {r.name: r.summary for r in simulate_scenario(scenario, tmp_path)[0].runs}
    assert runs["warm"].replicas.initial == 3
    assert runs["cold"].replicas.initial == 1
    assert runs["fixed-2"].replicas.initial == 2
    assert runs["fixed-2"].scale_events == 0
