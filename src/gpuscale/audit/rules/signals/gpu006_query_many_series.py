"""GPU006: a KEDA Prometheus trigger whose query returns one series per pod."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.promql import returns_one_series
from gpuscale.audit.scalers import signals


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    for signal in signals(obj):
        if signal.source == "prometheus" and signal.query and not returns_one_series(signal.query):
            yield Hit(signal.path, {"query": " ".join(signal.query.split())})


RULE = Rule(
    id="GPU006", name="keda-query-returns-series-per-pod", severity=Severity.ERROR,
    kinds=("ScaledObject",), family="signals",
    summary="A KEDA Prometheus trigger's query can return more than one series.",
    message="query `{query}` is not aggregated to a single series; KEDA fails with "
            "\"returned multiple elements\" as soon as two pods are scraped",
    why="KEDA's Prometheus scaler runs an instant query and rejects any result with more than one "
        "element. A bare `vllm:num_requests_waiting`, or one aggregated `by (pod)`, works while a "
        "single replica exists and breaks at the second: the scaler errors, and without a "
        "`fallback` the workload is stuck at its current size exactly when it needs to grow.",
    fix="Wrap the selector in an aggregation without per-pod grouping, e.g. "
        "`sum(vllm:num_requests_waiting{model_name=\"m\"})`, and keep `metricType: AverageValue` "
        "so replicas = ceil(total / threshold).",
    references=("layer3-replica-autoscaling.md section 2.3 (more than one series is an error)",
                "serving-engine-metrics.md section 5.5, pitfall 1",
                "kedacore/keda pkg/scalers/prometheus_scaler.go"),
    check=check,
)
