"""A role's KEDA ScaledObject (`keda.sh/v1alpha1`) with Prometheus triggers.

Queue depth and KV-cache use are summed over the role's pods and divided by a per-replica
threshold (`metricType: AverageValue`: replicas = ceil(total / threshold), layer3 2.2); a
composite role gets both triggers and KEDA's HPA takes the larger proposal (layer3 1.5).
`minReplicaCount` is the simulated warm pool; the scale-down stabilization window goes into
the generated HPA's `behavior`.
"""

from __future__ import annotations

from typing import Any

from gpuscale.manifests.prometheus import PROMETHEUS_URL, kv_query, queue_query
from gpuscale.plan.model import Role
from gpuscale.plan.scaler import SCALE_DOWN_POLICIES, SCALE_UP_POLICIES


def triggers(role: Role) -> list[dict[str, Any]]:
    queue = {"type": "prometheus", "metricType": "AverageValue", "metadata": {
        "serverAddress": PROMETHEUS_URL, "query": queue_query(role),
        "threshold": f"{role.queue_threshold:g}"}}
    kv = {"type": "prometheus", "metricType": "AverageValue", "metadata": {
        "serverAddress": PROMETHEUS_URL, "query": kv_query(role),
        "threshold": f"{role.kv_threshold:g}"}}
    reactive = {"queue_depth": [queue], "kv_cache": [kv], "composite": [queue, kv]}[role.signal]
    # Scheduled capacity: KEDA feeds each trigger's metric to the HPA, which takes the largest
    # proposal, so a cron window is a floor that arrives before the demand it was learned from.
    return reactive + [{"type": "cron", "metadata": {
        "timezone": w.timezone, "start": w.start, "end": w.end,
        "desiredReplicas": str(w.desired_replicas)}} for w in role.schedule]


def behavior(role: Role) -> dict[str, Any]:
    """The behavior the plan simulated (plan/scaler.py hpa_behavior), in the API's names."""
    def policies(rules) -> list[dict[str, Any]]:
        return [{"type": t, "value": v, "periodSeconds": p} for t, v, p in rules]
    return {
        "scaleUp": {"stabilizationWindowSeconds": 0, "policies": policies(SCALE_UP_POLICIES),
                    "selectPolicy": "Max"},
        "scaleDown": {"stabilizationWindowSeconds": role.scale_down_window_s,
                      "policies": policies(SCALE_DOWN_POLICIES)},
    }


def render_scaled_object(role: Role) -> dict[str, Any]:
    kind = "LeaderWorkerSet" if role.gang else "Deployment"
    api = "leaderworkerset.x-k8s.io/v1" if role.gang else "apps/v1"
    return {
        "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
        "metadata": {"name": role.name, "namespace": role.namespace,
                     "labels": {"app.kubernetes.io/name": role.name,
                                "app.kubernetes.io/managed-by": "gpuscale"}},
        "spec": {
            "scaleTargetRef": {"apiVersion": api, "kind": kind, "name": role.name},
            "pollingInterval": role.polling_interval_s,
            # Only governs the transition to zero, which minReplicaCount >= 1 rules out; set to
            # the scale-down window anyway so a later min of 0 does not inherit 300 s.
            "cooldownPeriod": role.scale_down_window_s,
            "minReplicaCount": role.min_replicas,
            "maxReplicaCount": role.max_replicas,
            "fallback": {"failureThreshold": 3, "replicas": role.min_replicas},
            "advanced": {"horizontalPodAutoscalerConfig": {"behavior": behavior(role)}},
            "triggers": triggers(role),
        },
    }
