"""PrometheusRule recording rules and the ScaledObject's PromQL come through `--manifests`
unchanged: rules become `metrics.rule_groups`, the queries read them, the labels the bundle
pins are on the simulated series, and what cannot be evaluated is refused naming the field."""

from __future__ import annotations

import copy

import pytest

from gpuscale.errors import UserInputError

from .bundle import load_docs, of_kind
from .test_manifests import imported

RULE = {
    "apiVersion": "monitoring.coreos.com/v1",
    "kind": "PrometheusRule",
    "metadata": {"name": "llm-d-autoscaling", "namespace": "llm"},
    "spec": {"groups": [{
        "name": "llm-d", "interval": "30s",
        "rules": [
            {"record": "llm:queue_depth",
             "expr": 'sum by (namespace) (vllm:num_requests_waiting{namespace="llm"})',
             "labels": {"team": "serving"}},
            {"alert": "QueueTooDeep", "expr": "llm:queue_depth > 100", "for": "5m"},
        ]}]},
}


def _bundle(query: str, rule: dict = RULE) -> list[dict]:
    docs = load_docs() + [copy.deepcopy(rule)]
    trigger = of_kind(docs, "ScaledObject")["spec"]["triggers"][0]
    trigger["metadata"]["query"] = query
    trigger["name"] = "queue"
    return docs


def test_recording_rules_and_the_query_reading_them(tmp_path):
    imp = imported(tmp_path, _bundle('avg_over_time(llm:queue_depth{service="vllm"}[2m])'))
    scenario = imp.scenario
    (group,) = scenario.metrics.rule_groups
    assert (group.name, group.interval_s) == ("llm-d", 30.0)
    (rule,) = group.rules
    assert rule.record == "llm:queue_depth" and rule.labels == {"team": "serving"}
    (trigger,) = scenario.strategies[0].autoscaler.triggers
    assert trigger.name == "queue" and trigger.query.promql.startswith("avg_over_time(")
    assert scenario.metrics.namespace == "llm"
    assert scenario.metrics.served_model_name == "Qwen/Qwen3-32B"
    assert any("alerting rule 'QueueTooDeep' not simulated" in n for n in imp.notes)


def test_a_label_the_query_pins_is_carried_by_the_simulated_series(tmp_path):
    imp = imported(tmp_path, _bundle('sum(vllm:num_requests_waiting{service="qwen3-32b"})'))
    assert imp.scenario.metrics.extra_labels == {
        "vllm:num_requests_waiting": {"service": "qwen3-32b"}}


@pytest.mark.parametrize("expr, field", [
    ("sum(vllm:num_requests_waitin)", "spec.groups[0].rules[0].expr"),
    ("rate(vllm:num_requests_waiting)", "spec.groups[0].rules[0].expr"),
])
def test_a_rule_that_cannot_be_evaluated_names_its_field(tmp_path, expr, field):
    rule = copy.deepcopy(RULE)
    rule["spec"]["groups"][0]["rules"][0]["expr"] = expr
    with pytest.raises(UserInputError) as info:
        imported(tmp_path, _bundle("sum(llm:queue_depth)", rule))
    assert field in str(info.value) and "\n" not in str(info.value)


def test_a_bad_group_interval_is_refused(tmp_path):
    rule = copy.deepcopy(RULE)
    rule["spec"]["groups"][0]["interval"] = "soon"
    with pytest.raises(UserInputError, match=r"spec\.groups\[0\]\.interval"):
        imported(tmp_path, _bundle("sum(llm:queue_depth)", rule))


def test_only_the_rules_a_scaler_reads_are_simulated(tmp_path):
    """A dashboard's recording rule over a series the simulated cluster does not expose (the
    plan's own gpu_pods_pending reads kube-state-metrics' resource requests) is skipped with a
    note; a rule read through another rule is kept; a rule no scaler reads still has to parse."""
    rule = copy.deepcopy(RULE)
    rule["spec"]["groups"][0]["rules"][:0] = [
        {"record": "llm:queue_depth_smooth", "expr": "avg_over_time(llm:queue_depth[2m])"},
        {"record": "dash:gpu_pods_pending", "expr": (
            'sum(kube_pod_container_resource_requests{resource="nvidia_com_gpu"})')},
    ]
    imp = imported(tmp_path, _bundle("sum(llm:queue_depth_smooth)", rule))
    (group,) = imp.scenario.metrics.rule_groups
    assert [r.record for r in group.rules] == ["llm:queue_depth_smooth", "llm:queue_depth"]
    assert any("'dash:gpu_pods_pending' is read by no scaler" in n for n in imp.notes)
    # the same unexposed series in a rule a scaler reads is refused, naming its field
    with pytest.raises(UserInputError, match=r"spec\.groups\[0\]\.rules\[1\]\.expr"):
        imported(tmp_path, _bundle("sum(dash:gpu_pods_pending)", rule))
    rule["spec"]["groups"][0]["rules"][1]["expr"] = "sum(("
    with pytest.raises(UserInputError, match=r"rules\[1\]\.expr.*cannot be evaluated"):
        imported(tmp_path, _bundle("sum(llm:queue_depth)", rule))
