"""Registry, discriminated params union, and the YAML shapes documented in docs/autoscaling.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from pydantic import TypeAdapter, ValidationError

from gpuscale.autoscaling import AUTOSCALERS, AutoscalerSpec, build_autoscalers, get_policy
from gpuscale.autoscaling.base import PolicySpec
from gpuscale.autoscaling.hpa import HpaParams
from gpuscale.autoscaling.keda_operator import generated_hpa_params
from gpuscale.errors import UserInputError

from .hpa_views import pods, view

DOC = Path(__file__).resolve().parents[2] / "docs" / "autoscaling.md"


def doc_yaml_blocks() -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", DOC.read_text(), flags=re.S)


def test_docs_yaml_examples_parse_and_build():
    """Every YAML sample in docs/autoscaling.md is a valid autoscaler spec."""
    blocks = doc_yaml_blocks()
    specs = [TypeAdapter(AutoscalerSpec).validate_python(yaml.safe_load(b)) for b in blocks]
    assert [s.kind for s in specs] == ["hpa", "keda", "keda", "keda", "hpa", "fixed", "keda"]
    assert [len(build_autoscalers(s)) for s in specs] == [1, 2, 2, 2, 1, 1, 2]
    gpu, keda, formula, promql, kv, _, cron = specs
    assert [t.type for t in cron.triggers] == ["prometheus", "cron"]
    assert [t.name for t in formula.triggers] == ["queue", "running"]
    # The doc's claim: one composite metric, ceil(max(queue / 5, running / 16) / 1).
    hpa_params = generated_hpa_params(formula)
    assert [m.query.metric for m in hpa_params.metrics] == ["composite-metric"]
    hpa = build_autoscalers(formula)[1]
    busy = pods("vllm:num_requests_waiting", [20.0, 20.0])
    # ceil(40 / 5 / 1) = 8, capped at max(2 x 2, 4) on the legacy path
    assert hpa.decide(view(0, 2, busy), hpa.initial_state())[0] == 4
    assert gpu.metrics[0].metric == "DCGM_FI_DEV_GPU_UTIL" and gpu.metrics[0].target.value == 70
    assert keda.triggers[0].query.aggregation == "sum" and keda.triggers[0].threshold == 5
    assert [t.name for t in promql.triggers] == ["queue", "tokens"]
    assert promql.triggers[1].query.promql == "sum(rate(vllm:generation_tokens_total[1m]))"
    assert (
        kv.metrics[0].query.aggregation == "avg"
        and kv.behavior.scale_down.policies[0].period_s == 120
    )


def test_docs_gpu_util_example_scales_out_on_any_traffic_and_never_in():
    """The doc's claim about the first example, checked: util ~100 % vs target 70."""
    from .hpa_views import drive, pods, view

    spec = TypeAdapter(AutoscalerSpec).validate_python(yaml.safe_load(doc_yaml_blocks()[0]))
    (hpa,) = build_autoscalers(spec)
    log = drive(
        hpa,
        lambda t, n: view(t, n, pods("DCGM_FI_DEV_GPU_UTIL", [99.0] * n)),
        start=1,
        until_s=1800,
    )
    assert log[0] == (0.0, 2)  # ceil(99/70 x 1) = 2
    assert [n for _, n in log] == sorted(n for _, n in log) and log[-1][
        1
    ] == 8  # only ever up, to max


def test_unknown_kind_lists_known_ones():
    with pytest.raises(UserInputError) as err:
        get_policy("kedaa")
    assert "fixed, hpa, keda" in str(err.value) and "'keda'" in str(err.value)


def test_duplicate_kind_fails():
    with pytest.raises(ValueError, match="duplicate"):
        AUTOSCALERS.register("hpa", PolicySpec("hpa", HpaParams, lambda p: [], "again"))


@pytest.mark.parametrize(
    "bad, message",
    [
        (
            {
                "max_replicas": 2,
                "metrics": [
                    {"type": "Pods", "metric": "m", "target": {"type": "Value", "value": 1}}
                ],
            },
            "Pods metrics accept",
        ),
        (
            {
                "min_replicas": 5,
                "max_replicas": 2,
                "metrics": [
                    {"type": "Pods", "metric": "m", "target": {"type": "AverageValue", "value": 1}}
                ],
            },
            "min_replicas 5 > max_replicas 2",
        ),
        (
            {
                "min_replicas": 0,
                "max_replicas": 2,
                "metrics": [
                    {"type": "Pods", "metric": "m", "target": {"type": "AverageValue", "value": 1}}
                ],
            },
            "Object or External",
        ),
        (
            {
                "max_replicas": 2,
                "metrics": [
                    {"type": "External", "metric": "m", "target": {"type": "Value", "value": 1}}
                ],
            },
            "need `query`",
        ),
        (
            {
                "max_replicas": 2,
                "metrics": [
                    {"type": "Pods", "metric": "m", "target": {"type": "AverageValue", "value": 1}}
                ],
                "behavior": {
                    "scale_up": {"policies": [{"type": "Pods", "value": 1, "period_s": 3600}]}
                },
            },
            "less than or equal to 1800",
        ),
    ],
)
def test_invalid_hpa_params_are_rejected(bad, message):
    with pytest.raises(ValidationError, match=message):
        HpaParams(**bad)


def test_keda_idle_must_be_below_min():
    with pytest.raises(ValidationError, match="idle_replica_count"):
        TypeAdapter(AutoscalerSpec).validate_python(
            {
                "kind": "keda",
                "idle_replica_count": 0,
                "triggers": [{"query": {"metric": "q"}, "threshold": 1}],
            }
        )


def test_fixed_holds_its_count():
    (ctrl,) = build_autoscalers(
        TypeAdapter(AutoscalerSpec).validate_python({"kind": "fixed", "replicas": 3})
    )
    from .hpa_views import view

    assert ctrl.decide(view(0, 5), ctrl.initial_state())[0] == 3
    assert ctrl.decide(view(0, 3), ctrl.initial_state())[0] is None
