"""A role's HPA (`autoscaling/v2`) on External metrics, plus the prometheus-adapter rules
that serve them, for clusters without KEDA.

The adapter rule sums the vLLM gauge per (namespace, service) and exposes it under a name
without the colon; the HPA targets an `AverageValue` per replica, so replicas =
ceil(total / target) as with KEDA (layer3 1.3). Same behavior as the ScaledObject.
"""

from __future__ import annotations

from typing import Any

import yaml

from gpuscale.manifests.keda import behavior
from gpuscale.plan.model import Role

EXTERNAL = {"queue_depth": ("vllm_num_requests_waiting", "vllm:num_requests_waiting"),
            "kv_cache": ("vllm_kv_cache_usage_perc", "vllm:kv_cache_usage_perc")}


def _metrics(role: Role) -> list[dict[str, Any]]:
    wanted = ["queue_depth", "kv_cache"] if role.signal == "composite" else [role.signal]
    out = []
    for signal in wanted:
        name = EXTERNAL[signal][0]
        value = role.queue_threshold if signal == "queue_depth" else role.kv_threshold
        out.append({"type": "External", "external": {
            "metric": {"name": name, "selector": {"matchLabels": {"service": role.name}}},
            "target": {"type": "AverageValue", "averageValue": f"{value:g}"}}})
    return out


def render_hpa(role: Role) -> dict[str, Any]:
    kind = "LeaderWorkerSet" if role.gang else "Deployment"
    api = "leaderworkerset.x-k8s.io/v1" if role.gang else "apps/v1"
    return {
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": role.name, "namespace": role.namespace},
        "spec": {"scaleTargetRef": {"apiVersion": api, "kind": kind, "name": role.name},
                 "minReplicas": role.min_replicas, "maxReplicas": role.max_replicas,
                 "metrics": _metrics(role), "behavior": behavior(role)},
    }


def adapter_rules(roles: list[Role]) -> dict[str, Any]:
    """prometheus-adapter `externalRules` (a ConfigMap the adapter's Helm values point at)."""
    rules = []
    for _external, series in sorted(set(EXTERNAL.values())):
        rules.append({
            "seriesQuery": f'{{__name__="{series}", namespace!="", service!=""}}',
            "resources": {"overrides": {"namespace": {"resource": "namespace"}}},
            "name": {"matches": "^vllm:(.*)$", "as": "vllm_${1}"},
            "metricsQuery": f"sum by (namespace, service) ({series}{{<<.LabelMatchers>>}})",
        })
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "prometheus-adapter-gpuscale", "namespace": "monitoring"},
            "data": {"config.yaml": yaml.safe_dump({"externalRules": rules}, sort_keys=False)}}
