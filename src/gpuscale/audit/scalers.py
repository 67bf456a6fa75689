"""The signals an HPA (`autoscaling/v2`) or KEDA ScaledObject scales on, with their paths.

References: layer3-replica-autoscaling.md sections 1.2 (HPA metric sources and targets) and
2.1-2.3 (ScaledObject fields, defaults, the Prometheus scaler).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuscale.audit.loader import Manifest, PathKey
from gpuscale.audit.promql import metric_names
from gpuscale.audit.values import integer

# layer3-replica-autoscaling.md 2.1: KEDA defaults.
KEDA_DEFAULT_MIN_REPLICAS = 0
KEDA_DEFAULT_COOLDOWN_S = 300
# layer3-replica-autoscaling.md 1.8: downscale stabilization when behavior leaves it unset.
HPA_DEFAULT_SCALE_DOWN_WINDOW_S = 300


@dataclass(frozen=True)
class Signal:
    """One metric a scaler reads. `source` is resource, pods, object, external or prometheus."""

    path: PathKey  # to the field naming the metric (or holding the query)
    source: str
    name: str  # metric name, resource name (cpu/memory) or the PromQL query
    query: str = ""  # PromQL, when the scaler holds one
    target_type: str = ""  # Utilization, AverageValue or Value

    @property
    def names(self) -> list[str]:
        """Metric names the signal reads (parsed from the query when there is one)."""
        return metric_names(self.query) if self.query else [self.name]


def _hpa_signals(obj: Manifest) -> list[Signal]:
    metrics = obj.get("spec", "metrics")
    if not metrics:
        # kubernetes/kubernetes pkg/apis/autoscaling/v2/defaults.go: no metrics = cpu at 80 %.
        return [Signal(("spec",), "resource", "cpu", target_type="Utilization")]
    out = []
    for i, metric in enumerate(metrics if isinstance(metrics, list) else []):
        kind = str(metric.get("type", ""))
        key = (
            kind[:1].lower() + kind[1:]
        )  # Resource -> resource, ContainerResource -> containerResource
        body = metric.get(key) or {}
        target = (body.get("target") or {}).get("type", "")
        if kind in ("Resource", "ContainerResource"):
            out.append(Signal(("spec", "metrics", i, key, "name"), "resource",
                              str(body.get("name", "")), target_type=target))
        elif kind in ("Pods", "Object", "External"):
            metric_ref = body.get("metric") or {}
            out.append(Signal(("spec", "metrics", i, key, "metric", "name"), kind.lower(),
                              str(metric_ref.get("name", "")), target_type=target))
    return out


def _keda_signals(obj: Manifest) -> list[Signal]:
    out = []
    for i, trigger in enumerate(obj.get("spec", "triggers") or []):
        if not isinstance(trigger, dict):
            continue
        kind = str(trigger.get("type", ""))
        meta = trigger.get("metadata") or {}
        target = str(trigger.get("metricType") or "AverageValue")  # keda scaledobject_types.go
        if kind in ("cpu", "memory"):
            out.append(Signal(("spec", "triggers", i, "type"), "resource", kind,
                              target_type=str(trigger.get("metricType") or "Utilization")))
        elif kind == "prometheus":
            query = str(meta.get("query", ""))
            out.append(Signal(("spec", "triggers", i, "metadata", "query"), "prometheus", query,
                              query=query, target_type=target))
        elif "metricName" in meta:
            out.append(Signal(("spec", "triggers", i, "metadata", "metricName"), kind,
                              str(meta["metricName"]), target_type=target))
    return out


def signals(obj: Manifest) -> list[Signal]:
    if obj.kind == "HorizontalPodAutoscaler":
        return _hpa_signals(obj)
    if obj.kind == "ScaledObject":
        return _keda_signals(obj)
    return []


def min_replicas(obj: Manifest) -> tuple[int, PathKey, bool]:
    """(floor, path, explicit?) of a scaler; KEDA's floor defaults to 0, the HPA's to 1."""
    if obj.kind == "ScaledObject":
        spec = obj.get("spec") or {}
        if (
            "idleReplicaCount" in spec
            and integer(spec["idleReplicaCount"], "spec.idleReplicaCount") == 0
        ):
            return 0, ("spec", "idleReplicaCount"), True
        if "minReplicaCount" in spec:
            return (
                integer(spec["minReplicaCount"], "spec.minReplicaCount"),
                ("spec", "minReplicaCount"),
                True,
            )
        return KEDA_DEFAULT_MIN_REPLICAS, ("spec",), False
    value = obj.get("spec", "minReplicas")
    return (
        (integer(value, "spec.minReplicas"), ("spec", "minReplicas"), True)
        if value is not None
        else (1, ("spec",), False)
    )
