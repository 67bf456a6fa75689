"""Billing in one place (simulate and schedule read it) and the typed series row."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gpuscale.catalog import get_instance_type
from gpuscale.cluster.objects import Node
from gpuscale.cluster.state import ClusterState
from gpuscale.metrics import billing
from gpuscale.metrics.store import SERIES_COLUMNS, SeriesRow
from gpuscale.sim import simulate_scenario
from tests.sim.scenarios import small_scenario

P5 = get_instance_type("p5.48xlarge")


def _node(name: str, created_s: float) -> Node:
    return Node(name=name, instance_type=P5, zone=P5.zones[0], created_s=created_s)


def test_deleted_nodes_stay_billed_until_their_deletion():
    cluster = ClusterState()
    live, gone = _node("a", 0.0), _node("b", 100.0)
    for node in (live, gone):
        cluster.add_node(node)
        cluster.mark_node_ready(node, node.created_s)
    cluster.remove_node(gone, 400.0, "empty")
    assert [n.name for n in billing.all_nodes(cluster)] == ["a", "b"]
    # a: 0..1000 s, b: 100..400 s, 8 GPUs each.
    assert billing.gpu_s(cluster, 1000.0) == pytest.approx(8 * (1000 + 300))
    # the window before 300 s: a 0..300, b 100..300 (deleted later, billed up to the window)
    assert billing.gpu_s_until(cluster, 300.0, 1000.0) == pytest.approx(8 * (300 + 200))
    assert billing.cost_usd_until(cluster, 300.0, 1000.0) == pytest.approx(
        P5.on_demand_usd_per_hour * 500 / 3600)
    assert billing.cost_usd(cluster, 1000.0) == pytest.approx(
        P5.on_demand_usd_per_hour * 1300 / 3600)


def test_a_node_listed_twice_is_billed_once():
    cluster = ClusterState()
    node = _node("a", 0.0)
    cluster.add_node(node)
    cluster.gone_nodes.append(node)  # a provider that kept a handle: still one node
    assert billing.gpu_s(cluster, 10.0) == pytest.approx(80.0)


def test_series_columns_are_the_row_fields_by_name():
    assert SeriesRow._fields == SERIES_COLUMNS
    scenario = small_scenario(duration_s=120.0)
    result, _ = simulate_scenario(scenario, Path("."))
    series = result.runs[0].series
    assert tuple(series) == SERIES_COLUMNS
    # The last row's cost is the summary's money (window + drain), read from the same billing.
    summary = result.runs[0].summary
    assert series["cost_usd"][-1] <= summary.cost_usd + summary.drain_cost_usd + 1e-4
    assert not any(math.isnan(v) for v in series["gpus_billed"])
