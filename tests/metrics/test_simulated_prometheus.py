"""The run's Prometheus: the series the simulated cluster exposes, collected only when read,
consistent with the simulation's own counts, and without effect on the run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpuscale.errors import UserInputError
from gpuscale.promql import labels as lbl
from gpuscale.sim.run import run_strategy, scenario_requests

from ..sim.scenarios import small_scenario

PROMQL = [{"name": "keda-promql", "autoscaler": {
    "kind": "keda", "min_replica_count": 1, "max_replica_count": 8,
    "triggers": [{"query": "sum(vllm:num_requests_waiting)", "threshold": 3}]}}]


def _run(strategies=PROMQL, export=False, **overrides):
    scenario = small_scenario(strategies=strategies, **overrides)
    requests = scenario_requests(scenario, Path("."))
    return run_strategy(scenario, scenario.strategies[0], requests, export_series=export)


def test_only_the_series_a_query_reads_are_collected():
    store = _run().prometheus.store
    assert {n for n, f in store.families.items() if f.num_samples()} == {
        "vllm:num_requests_waiting"}


def test_a_shorthand_run_without_export_builds_no_prometheus():
    shorthand = [{"name": "s", "autoscaler": {
        "kind": "keda", "max_replica_count": 4, "min_replica_count": 1,
        "triggers": [{"query": {"metric": "vllm:num_requests_waiting"}, "threshold": 3}]}}]
    assert _run(strategies=shorthand).prometheus is None


def test_the_promql_and_the_shorthand_trigger_scale_alike_here():
    """`sum(vllm:num_requests_waiting)` over the series equals the shorthand over the latest
    scrape while no pod goes away (a gone pod's last sample stays 5 minutes in PromQL)."""
    shorthand = [{"name": "s", "autoscaler": {
        "kind": "keda", "min_replica_count": 1, "max_replica_count": 8,
        "triggers": [{"query": {"metric": "vllm:num_requests_waiting", "aggregation": "sum"},
                      "threshold": 3}]}}]
    promql = _run(duration_s=240.0, rate_per_s=16.0)
    plain = _run(strategies=shorthand, duration_s=240.0, rate_per_s=16.0)
    assert promql.summary.replicas.peak == plain.summary.replicas.peak > 1
    assert promql.summary.scale_events == plain.summary.scale_events


def test_exporting_changes_nothing_in_the_run():
    quiet, loud = _run(), _run(export=True)
    assert quiet.summary.model_dump(exclude={"wall_s"}) == loud.summary.model_dump(
        exclude={"wall_s"})
    assert np.array_equal(quiet.requests.finish_s, loud.requests.finish_s, equal_nan=True)


def test_the_exported_counters_match_the_requests():
    run = _run(export=True)
    store = run.prometheus.store
    finished = int((run.requests.status == 1).sum())
    success = store.families["vllm:request_success_total"]
    # Each pod's counter only grows while its engine lives; the last samples of all pods,
    # summed, count every request that finished before the last scrape of its pod.
    last: dict = {}
    for sid, v in zip(success.sid.view(), success.val.view(), strict=True):
        labels = success.labels[sid]
        if lbl.get(labels, "finished_reason") == "stop":
            assert v >= last.get(labels, 0.0)
            last[labels] = v
    assert 0.9 * finished <= sum(last.values()) <= finished
    ttft = store.families["vllm:time_to_first_token_seconds_bucket"]
    les = {lbl.get(ls, "le") for ls in ttft.labels}
    assert "+Inf" in les and "0.001" in les and len(les) == 23
    pods = {lbl.get(ls, "pod") for ls in store.families["vllm:num_requests_waiting"].labels}
    assert pods == {lbl.get(ls, "pod") for ls in success.labels}
    phase = store.families["kube_pod_status_phase"]
    assert {lbl.get(ls, "phase") for ls in phase.labels} == {
        "Failed", "Pending", "Running", "Succeeded", "Unknown"}


def test_a_query_of_a_series_nothing_exposes_is_refused_at_load():
    typo = [{"name": "k", "autoscaler": {
        "kind": "keda", "max_replica_count": 4,
        "triggers": [{"query": "sum(vllm:num_request_waiting)", "threshold": 3}]}}]
    with pytest.raises(UserInputError, match="did you mean 'vllm:num_requests_waiting'"):
        small_scenario(strategies=typo)
    recorded = [{"name": "k", "autoscaler": {
        "kind": "keda", "max_replica_count": 4,
        "triggers": [{"query": "llm:queue", "threshold": 3}]}}]
    rules = {"rule_groups": [{"name": "g", "rules": [
        {"record": "llm:queue", "expr": "sum(vllm:num_requests_waiting)"}]}]}
    assert small_scenario(strategies=recorded, metrics=rules).metrics.rule_groups


def _series(store, name: str) -> tuple[set, np.ndarray]:
    family = store.families[name]
    names = {lbl.get(family.labels[sid], "horizontalpodautoscaler") for sid in family.sid.view()}
    return names, np.asarray(family.val.view())


def test_the_hpa_series_are_kube_state_metrics_view_of_the_generated_hpa():
    """kube_horizontalpodautoscaler_*: KEDA's HPA is keda-hpa-<ScaledObject>, its bounds the
    ScaledObject's, its desired replicas what its syncs chose (the peak the run reached)."""
    run = _run(export=True, duration_s=240.0, rate_per_s=16.0)
    store = run.prometheus.store
    names, max_values = _series(store, "kube_horizontalpodautoscaler_spec_max_replicas")
    assert names == {"keda-hpa-keda-promql"} and set(max_values) == {8.0}
    assert set(_series(store, "kube_horizontalpodautoscaler_spec_min_replicas")[1]) == {1.0}
    desired = _series(store, "kube_horizontalpodautoscaler_status_desired_replicas")[1]
    current = _series(store, "kube_horizontalpodautoscaler_status_current_replicas")[1]
    assert desired.max() == run.summary.replicas.peak > 1
    assert current.min() >= 1 and current.max() <= run.summary.replicas.peak


def test_a_query_on_the_hpa_series_collects_them_and_an_hpa_keeps_its_name():
    hpa = [{"name": "plain-hpa", "autoscaler": {
        "kind": "hpa", "min_replicas": 2, "max_replicas": 5, "metrics": [{
            "type": "External", "query": {"metric": "vllm:num_requests_waiting",
                                          "aggregation": "sum"},
            "target": {"type": "AverageValue", "value": 3}}]}}]
    store = _run(strategies=hpa, export=True).prometheus.store
    names, values = _series(store, "kube_horizontalpodautoscaler_spec_min_replicas")
    assert names == {"plain-hpa"} and set(values) == {2.0}
