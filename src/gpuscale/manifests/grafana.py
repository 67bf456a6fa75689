"""A Grafana dashboard for the plan's signals, as a ConfigMap Grafana's sidecar loads.

kube-prometheus-stack's Grafana sidecar imports every ConfigMap labelled
`grafana_dashboard: "1"` (its default label) in the namespaces it watches; the ConfigMap goes
to `monitoring` beside the PrometheusRule. Per role, the panels are the signals the scaler
acts on (queue depth and/or KV-cache use per replica, with the threshold drawn), the P99 TTFT
against the SLO, and ready replicas; one panel for Pending GPU pods (node provisioning wait).
Queries are the same PromQL the scalers and recording rules use (manifests/prometheus.py).
"""

from __future__ import annotations

import json
from typing import Any

from gpuscale.manifests.prometheus import kv_query, queue_query, selector, ttft_p99_query
from gpuscale.plan.model import Plan, Role

DASHBOARD_LABEL = {"grafana_dashboard": "1"}


def _panel(panel_id: int, title: str, exprs: list[tuple[str, str]], y: int, x: int,
           unit: str = "short", threshold: float | None = None) -> dict[str, Any]:
    panel: dict[str, Any] = {
        "id": panel_id, "type": "timeseries", "title": title,
        "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "targets": [{"refId": chr(ord("A") + i), "expr": expr, "legendFormat": legend}
                    for i, (expr, legend) in enumerate(exprs)],
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
    }
    if threshold is not None:
        panel["fieldConfig"]["defaults"]["thresholds"] = {
            "mode": "absolute", "steps": [{"color": "green", "value": None},
                                          {"color": "red", "value": threshold}]}
        panel["fieldConfig"]["defaults"]["custom"] = {"thresholdsStyle": {"mode": "line"}}
    return panel


def _role_panels(role: Role, ttft_slo_s: float, first_id: int, y: int) -> list[dict[str, Any]]:
    pods = f"count(vllm:num_requests_running{{{selector(role)}}})"
    panels = []
    if role.signal in ("queue_depth", "composite"):
        panels.append(_panel(first_id, f"{role.name}: waiting requests per replica",
                             [(f"{queue_query(role)} / {pods}", "per replica")], y, 0,
                             threshold=role.queue_threshold))
    if role.signal in ("kv_cache", "composite"):
        panels.append(_panel(first_id + 1, f"{role.name}: KV-cache use per replica",
                             [(f"{kv_query(role)} / {pods}", "per replica")], y, 12,
                             "percentunit", threshold=role.kv_threshold))
    panels.append(_panel(first_id + 2, f"{role.name}: P99 TTFT (SLO {ttft_slo_s:g} s)",
                         [(ttft_p99_query(role), "p99")], y + 8, 0, "s", threshold=ttft_slo_s))
    panels.append(_panel(first_id + 3, f"{role.name}: ready replicas",
                         [(pods, "replicas")], y + 8, 12))
    return panels


def render_dashboard(plan: Plan) -> dict[str, Any]:
    """The dashboard JSON model (Grafana schema 39)."""
    panels = [_panel(1, "Pending GPU pods (node provisioning wait)",
                     [("gpuscale:gpu_pods_pending", "pending")], 0, 0)]
    for index, role in enumerate(plan.roles):
        panels += _role_panels(role, plan.ttft_slo_s[role.workload], 10 + 10 * index,
                               8 + 16 * index)
    return {
        "title": f"gpuscale: {plan.name}", "uid": f"gpuscale-{plan.name}"[:40],
        "schemaVersion": 39, "editable": True, "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": [{"name": "datasource", "type": "datasource",
                                 "query": "prometheus"}]},
        "panels": panels, "tags": ["gpuscale", "autoscaling"],
    }


def render_dashboard_configmap(plan: Plan) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"{plan.name}-dashboard",
            "namespace": "monitoring",
            "labels": dict(DASHBOARD_LABEL, **{"app.kubernetes.io/managed-by": "gpuscale"}),
        },
        "data": {f"{plan.name}.json": json.dumps(render_dashboard(plan), indent=2)},
    }
