"""The signals an HPA (`autoscaling/v2`), a KEDA ScaledObject, an AIBrix PodAutoscaler or a
KServe LLMInferenceService's `scaling` scales on, with their paths.

References: layer3-replica-autoscaling.md sections 1.2 (HPA metric sources and targets) and
2.1-2.3 (ScaledObject fields, defaults, the Prometheus scaler); AIBrix
(vllm-project/aibrix api/autoscaling/v1alpha1/podautoscaler_types.go: `metricsSources`,
`minReplicas`, `scaleTargetRef`; pkg/metrics/metrics.go maps a pod metric's standard name,
e.g. `gpu_cache_usage_perc`, to the engine's, `vllm:gpu_cache_usage_perc`); KServe
(pkg/apis/serving/v1alpha1/llm_inference_service_types.go ScalingSpec: `minReplicas` default 1,
`keda.triggers`, `keda.idleReplicaCount`).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuscale.audit.loader import Manifest, PathKey
from gpuscale.audit.promql import metric_names
from gpuscale.audit.values import integer

# layer3-replica-autoscaling.md 2.1: KEDA defaults.
KEDA_DEFAULT_MIN_REPLICAS = 0
KEDA_DEFAULT_MAX_REPLICAS = 100  # keda.sh ScaledObject spec: maxReplicaCount defaults to 100
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


def _aibrix_signals(obj: Manifest) -> list[Signal]:
    out = []
    sources = obj.get("spec", "metricsSources") or []
    for i, source in enumerate(sources if isinstance(sources, list) else []):
        if not isinstance(source, dict):
            continue
        kind = str(source.get("metricSourceType", "pod")).lower()
        name = str(source.get("targetMetric", ""))
        path = ("spec", "metricsSources", i, "targetMetric")
        if kind == "resource":
            out.append(Signal(path, "resource", name, target_type="Utilization"))
        else:
            # A pod metric by its standard name reads the engine's (vLLM's unless labelled).
            engine_name = f"vllm:{name}" if kind == "pod" and ":" not in name else name
            out.append(Signal(path, "pods" if kind == "pod" else kind, engine_name,
                              target_type="AverageValue"))
    return out


def _llmisvc_signals(obj: Manifest) -> list[Signal]:
    """The KEDA triggers of an LLMInferenceService's `scaling` (decode, then prefill)."""
    out = []
    for base in (("spec",), ("spec", "prefill")):
        triggers = obj.get(*base, "scaling", "keda", "triggers") or []
        view = Manifest(obj.kind, obj.api_version, obj.name, obj.namespace,
                        {"spec": {"triggers": triggers}}, obj.source, obj.line)
        for signal in _keda_signals(view):
            path = base + ("scaling", "keda") + tuple(signal.path[1:])
            out.append(Signal(path, signal.source, signal.name, signal.query, signal.target_type))
    return out


def signals(obj: Manifest) -> list[Signal]:
    if obj.kind == "HorizontalPodAutoscaler":
        return _hpa_signals(obj)
    if obj.kind == "ScaledObject":
        return _keda_signals(obj)
    if obj.kind == "PodAutoscaler":
        return _aibrix_signals(obj)
    if obj.kind == "LLMInferenceService":
        return _llmisvc_signals(obj)
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
    if obj.kind == "LLMInferenceService":
        return _llmisvc_min_replicas(obj)
    value = obj.get("spec", "minReplicas")
    return (
        (integer(value, "spec.minReplicas"), ("spec", "minReplicas"), True)
        if value is not None
        else (1, ("spec",), False)
    )


def _llmisvc_min_replicas(obj: Manifest) -> tuple[int, PathKey, bool]:
    """KServe's floor: `scaling.keda.idleReplicaCount` 0 scales to zero, else
    `scaling.minReplicas` (default 1), else the static `replicas`."""
    scaling = obj.get("spec", "scaling")
    if not isinstance(scaling, dict):
        replicas = obj.get("spec", "replicas")
        return ((integer(replicas, "spec.replicas"), ("spec", "replicas"), True)
                if replicas is not None else (1, ("spec",), False))
    idle = (scaling.get("keda") or {}).get("idleReplicaCount")
    if idle is not None and integer(idle, "spec.scaling.keda.idleReplicaCount") == 0:
        return 0, ("spec", "scaling", "keda", "idleReplicaCount"), True
    if "minReplicas" in scaling:
        return (integer(scaling["minReplicas"], "spec.scaling.minReplicas"),
                ("spec", "scaling", "minReplicas"), True)
    return 1, ("spec", "scaling"), False


def max_replicas(scaler: Manifest) -> int:
    """The most replicas a scaler may set (KEDA's maxReplicaCount defaults to 100; an HPA's
    and a PodAutoscaler's maxReplicas are required; an LLMInferenceService's scaling too)."""
    if scaler.kind == "ScaledObject":
        value = scaler.get("spec", "maxReplicaCount")
        return KEDA_DEFAULT_MAX_REPLICAS if value is None else integer(value,
                                                                       "spec.maxReplicaCount")
    if scaler.kind == "LLMInferenceService":
        value = scaler.get("spec", "scaling", "maxReplicas")
        return 1 if value is None else integer(value, "spec.scaling.maxReplicas")
    value = scaler.get("spec", "maxReplicas")
    return 1 if value is None else integer(value, "spec.maxReplicas")


def replica_ceiling(workload: Manifest, ctx) -> int:
    """The most replicas (engine instances) `workload` can run: its own `replicas` (default
    1) or what any scaler of it may set (`ctx`: the audit's AuditContext)."""
    value = workload.get("spec", "replicas")
    ceiling = 1 if value is None else integer(value, "spec.replicas")
    scalers = list(ctx.scalers_of(workload))
    if workload.kind == "LLMInferenceService" and isinstance(workload.get("spec", "scaling"),
                                                             dict):
        scalers.append(workload)
    return max([ceiling, *(max_replicas(s) for s in scalers)])
