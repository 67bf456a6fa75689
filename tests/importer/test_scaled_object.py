"""The ScaledObject reader: every field read into the scenario or refused by its path, on edits
of the example bundle (examples/my-cluster)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuscale.cli import cli
from gpuscale.errors import UserInputError
from gpuscale.importer.build import import_manifests
from gpuscale.importer.catalog_files import use_catalogs

from .bundle import CATALOG, TRACE, load_docs, of_kind, write_bundle

QUEUE = 'sum(vllm:num_requests_waiting{model_name="Qwen/Qwen3-32B"})'
RUNNING = 'sum(vllm:num_requests_running{model_name="Qwen/Qwen3-32B"})'


def with_scaled_object(edit) -> list[dict]:
    docs = copy.deepcopy(load_docs())
    edit(of_kind(docs, "ScaledObject"))
    return docs


def imported(tmp_path: Path, docs: list[dict]):
    use_catalogs([CATALOG])
    return import_manifests([str(write_bundle(tmp_path, docs))], TRACE)


def autoscaler(tmp_path: Path, edit) -> dict:
    return imported(tmp_path, with_scaled_object(edit)).data["strategies"][0]["autoscaler"]


def refused(tmp_path: Path, edit, *expected: str) -> str:
    with pytest.raises(UserInputError) as info:
        imported(tmp_path, with_scaled_object(edit))
    message = str(info.value)
    assert "\n" not in message
    for text in expected:
        assert text in message, message
    return message


def two_triggers(so: dict, formula: str | None = None, **modifiers) -> None:
    so["spec"]["triggers"] = [
        {"type": "prometheus", "name": "queue", "useCachedMetrics": True,
         "metadata": {"query": QUEUE, "threshold": "5"}},
        {"type": "prometheus", "name": "running", "metricType": "Value",
         "metadata": {"query": RUNNING, "threshold": "64", "activationThreshold": "2"}},
    ]
    if formula is not None:
        so["spec"]["advanced"] = {"scalingModifiers": {"formula": formula, **modifiers}}


def test_named_triggers_and_a_formula_are_read(tmp_path):
    spec = autoscaler(tmp_path, lambda so: two_triggers(
        so, "max(queue / 5, running / 64)", target="1", activationTarget="0.5",
        metricType="AverageValue"))
    assert [(t["name"], t.get("use_cached_metrics"), t.get("metric_type"))
            for t in spec["triggers"]] == [("queue", True, None), ("running", None, "Value")]
    assert spec["advanced"]["scaling_modifiers"] == {
        "formula": "max(queue / 5, running / 64)", "target": 1.0, "activation_target": 0.5,
        "metric_type": "AverageValue"}


def test_fallback_behavior_and_pause_annotations_are_read(tmp_path):
    def edit(so):
        so["spec"]["fallback"] = {"failureThreshold": 3, "replicas": 2,
                                  "behavior": "currentReplicasIfHigher"}
        so["metadata"]["annotations"] = {"autoscaling.keda.sh/paused-scale-in": "true",
                                         "autoscaling.keda.sh/paused-scale-out": "false",
                                         "autoscaling.keda.sh/force-activation": "yes"}
    spec = autoscaler(tmp_path, edit)
    assert spec["fallback"] == {"failure_threshold": 3, "replicas": 2,
                                "behavior": "currentReplicasIfHigher"}
    # getBoolAnnotation: "false" is false, a value that is not a Go bool counts as true.
    assert (spec.get("paused_scale_in"), spec.get("paused_scale_out"),
            spec.get("force_activation")) == (True, None, True)


def test_paused_replicas_hold_the_workload_at_that_count(tmp_path):
    imp = imported(tmp_path, with_scaled_object(lambda so: so["metadata"].update(
        annotations={"autoscaling.keda.sh/paused-replicas": "3"})))
    assert imp.data["initial_replicas"] == 3
    assert imp.data["strategies"][0]["autoscaler"]["paused_replicas"] == 3
    assert any("paused-replicas" in n for n in imp.notes)


@pytest.mark.parametrize("edit, expected", [
    (lambda so: so["spec"].update(pollingIntervall=5),
     "field spec.pollingIntervall is not simulated"),
    (lambda so: two_triggers(so, "queue + 1", target="2", activation="1"),
     "field spec.advanced.scalingModifiers.activation is not simulated"),
    (lambda so: so["spec"]["triggers"][0].update(nmae="x"),
     "field spec.triggers[0].nmae is not simulated"),
    (lambda so: two_triggers(so, "queue + other", target="2"),
     "spec.advanced.scalingModifiers.formula: formula 'queue + other' does not compile as KEDA "
     "compiles it: unknown name other"),
    (lambda so: two_triggers(so, "queue in [1] ? 1 : 0", target="2"),
     "the `in` operator at position 6 is not simulated"),
    (lambda so: two_triggers(so, "queue + running"), "scalingModifiers.target: missing"),
    (lambda so: two_triggers(so, "queue", target="0"), "expected a number > 0, got 0"),
    (lambda so: two_triggers(so, "queue", target="1", metricType="Utilization"),
     "metricType 'Utilization': scalingModifiers takes AverageValue"),
    (lambda so: (two_triggers(so), so["spec"]["triggers"][1].update(name="queue")),
     "trigger name 'queue' is defined more than once"),
    (lambda so: so["spec"].update(fallback={"failureThreshold": 1, "replicas": 1,
                                            "behavior": "scalingModifiers"}),
     "behavior scalingModifiers requires advanced.scalingModifiers.formula"),
    (lambda so: so["spec"].update(fallback={"failureThreshold": 1, "replicas": 1,
                                            "behavior": "sometimes"}),
     "behavior 'sometimes': expected static"),
    (lambda so: so["metadata"].update(
        annotations={"autoscaling.keda.sh/paused-replicas": "two"}),
     "autoscaling.keda.sh/paused-replicas: expected a replica count"),
    (lambda so: so["spec"].update(advanced={"horizontalPodAutoscalerConfig": {"behavior": {
        "scaledown": {}}}}),
     "unknown field of HorizontalPodAutoscalerBehavior 'scaledown'"),
    (lambda so: so["spec"].update(advanced={"horizontalPodAutoscalerConfig": {"behavior": {
        "scaleDown": {"policies": [{"type": "Pods", "value": 1, "periodSecond": 60}]}}}}),
     "unknown field of HPAScalingPolicy 'periodSecond'"),
])
def test_unsupported_or_invalid_fields_are_refused_by_path(tmp_path, edit, expected):
    message = refused(tmp_path, edit, expected)
    assert "ScaledObject/llm/qwen3-32b" in message


def test_a_fallback_kedas_own_check_ignores_is_dropped_with_a_note(tmp_path):
    def edit(so):
        two_triggers(so, "queue", target="1.0")
        so["spec"]["fallback"] = {"failureThreshold": 3, "replicas": 2}
    imp = imported(tmp_path, with_scaled_object(edit))
    assert "fallback" not in imp.data["strategies"][0]["autoscaler"]
    assert any("fallback ignored" in n and "'1.0'" in n for n in imp.notes)


def test_unknown_prometheus_metadata_is_noted_as_keda_ignores_it(tmp_path):
    imp = imported(tmp_path, with_scaled_object(
        lambda so: so["spec"]["triggers"][0]["metadata"].update(thresold="9")))
    assert any("thresold not read by KEDA's Prometheus scaler" in n for n in imp.notes)


def test_a_deployment_at_zero_under_an_hpa_stays_at_zero(tmp_path):
    docs = [d for d in copy.deepcopy(load_docs()) if d["kind"] != "ScaledObject"]
    of_kind(docs, "Deployment")["spec"]["replicas"] = 0
    docs.append({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                 "metadata": {"name": "qwen3-32b", "namespace": "llm"},
                 "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "qwen3-32b"},
                          "minReplicas": 0, "maxReplicas": 3,
                          "metrics": [{"type": "External", "external": {
                              "metric": {"name": "vllm_num_requests_waiting"},
                              "target": {"type": "AverageValue", "averageValue": "5"}}}]}})
    imp = imported(tmp_path, docs)
    assert imp.data["initial_replicas"] == 0
    assert any("leaves a target at 0 alone" in n for n in imp.notes)


def formula_run(tmp_path: Path, target: str) -> dict:
    def edit(so):
        two_triggers(so, "max(queue / 5, running / 16)", target=target)
        so["spec"]["minReplicaCount"] = 2  # enough to keep up: no backlog drains the bill
    docs = with_scaled_object(edit)
    bundle = write_bundle(tmp_path, docs, f"target-{target}")
    result = CliRunner().invoke(cli, ["simulate", "--manifests", str(bundle), "--trace",
                                      str(TRACE), "--catalog", str(CATALOG), "-o", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["runs"][0]


def test_a_lower_formula_target_costs_more(tmp_path):
    # The composite metric is divided by the target: a lower target asks for more replicas
    # for the same demand (both meet the SLO here, so the extra replicas are pure cost).
    low, high = formula_run(tmp_path, "1"), formula_run(tmp_path, "4")
    assert low["cost_usd"] > 1.3 * high["cost_usd"]
    assert low["replicas"]["mean"] > high["replicas"]["mean"]
    assert high["slo_attainment"] > 0.99


def test_idle_zero_with_an_explicit_min_zero_is_accepted_as_keda_accepts_it(tmp_path):
    # scaledobject_types.go CheckReplicaCountBoundsAreValid: an explicit min is compared as
    # max(min, 1); an unset min as 0, so idle 0 without min is refused.
    imp = imported(tmp_path, with_scaled_object(
        lambda so: so["spec"].update(minReplicaCount=0, idleReplicaCount=0)))
    assert "idle_replica_count" not in imp.data["strategies"][0]["autoscaler"]
    refused(tmp_path, lambda so: (so["spec"].pop("minReplicaCount"),
                                  so["spec"].update(idleReplicaCount=0)),
            "idle_replica_count must be lower than min_replica_count")
