"""PromQL for the plan's scalers, dashboards and kill switch, and the PrometheusRule/ServiceMonitor.

Metric names are current vLLM V1 ones (serving-engine-metrics.md 1.1-1.3): gauges
`vllm:num_requests_waiting`, `vllm:kv_cache_usage_perc` (a 0-1 fraction), histogram
`vllm:time_to_first_token_seconds`. Selectors use one label, `gpuscale_io_scaler_target`,
which the ServiceMonitor copies from the Service (`targetLabels`), never a namespace: a
kustomize `namespace:` overlay moves the objects but cannot edit a string inside a query, and a
hard-coded `namespace="default"` would then read nothing and never scale. (Two copies of one
plan in two namespaces of one Prometheus would share the label: rename the roles per copy.)
Never `model` either (vLLM emits `model_name`). Scaler queries aggregate with `sum(...)` to one
series, as KEDA's Prometheus scaler requires (5.5).
"""

from __future__ import annotations

from typing import Any

from gpuscale.plan.model import Plan, Role

PROMETHEUS_URL = "http://prometheus-operated.monitoring.svc:9090"
ALERT = "GpuscaleTTFTP99Breach"
ALERT_FOR = "5m"


TARGET_LABEL = "gpuscale.io/scaler-target"  # on the Service; Prometheus: gpuscale_io_scaler_target


def selector(role: Role) -> str:
    return f'gpuscale_io_scaler_target="{role.name}"'


def queue_query(role: Role) -> str:
    return f"sum(vllm:num_requests_waiting{{{selector(role)}}})"


def kv_query(role: Role) -> str:
    return f"sum(vllm:kv_cache_usage_perc{{{selector(role)}}})"


def ttft_p99_query(role: Role, window: str = "5m") -> str:
    return ("histogram_quantile(0.99, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket"
            f"{{{selector(role)}}}[{window}])))")


def _record(name: str, expr: str) -> dict[str, Any]:
    return {"record": name, "expr": expr}


def _role_rules(role: Role, ttft_slo_s: float) -> tuple[list[dict], dict]:
    sel = selector(role)
    pods = f'count(vllm:num_requests_running{{{sel}}})'
    records = [
        _record(f"gpuscale:queue_depth_per_replica:{role.name.replace('-', '_')}",
                f"{queue_query(role)} / {pods}"),
        _record(f"gpuscale:kv_cache_usage_per_replica:{role.name.replace('-', '_')}",
                f"{kv_query(role)} / {pods}"),
        _record(f"gpuscale:ttft_p99_seconds:{role.name.replace('-', '_')}", ttft_p99_query(role)),
    ]
    alert = {
        "alert": ALERT,
        "expr": f"{ttft_p99_query(role)} > {ttft_slo_s:g}",
        "for": ALERT_FOR,
        "labels": {"severity": "critical", "workload": role.workload, "role": role.role},
        "annotations": {
            "summary": f"P99 TTFT of {role.name} above {ttft_slo_s:g} s for {ALERT_FOR}",
            "description": (
                "The autoscaling plan is not holding the SLO. Roll back: kubectl -n "
                f"{role.namespace} annotate scaledobject {role.name} "
                "autoscaling.keda.sh/paused-replicas=<last good replicas>, then re-apply the "
                "previous manifests from version control."
            ),
        },
    }
    return records, alert


def render_prometheus_rule(plan: Plan) -> dict[str, Any]:
    """Recording rules for the dashboard plus the kill-switch alert, one group each."""
    records: list[dict] = [
        _record(
            "gpuscale:gpu_pods_pending",
            'sum(kube_pod_status_phase{phase="Pending"} * on (namespace, pod) group_left() '
            'max by (namespace, pod) '
            '(kube_pod_container_resource_requests{resource="nvidia_com_gpu"}) > bool 0)',
        ),
    ]
    alerts: list[dict] = []
    for role in plan.roles:
        r, a = _role_rules(role, plan.ttft_slo_s[role.workload])
        records += r
        alerts.append(a)
    return {
        "apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
        "metadata": {"name": f"{plan.name}-autoscaling", "namespace": "monitoring",
                     "labels": {"app.kubernetes.io/managed-by": "gpuscale"}},
        "spec": {"groups": [{"name": f"{plan.name}.dashboard", "interval": "30s", "rules": records},
                            {"name": f"{plan.name}.kill-switch", "rules": alerts}]},
    }


def render_service_monitor(role: Role) -> dict[str, Any]:
    """Scrape the role's vLLM /metrics every 15 s (the scrape lag the scalers were sized with)."""
    return {
        "apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
        "metadata": {"name": role.name, "namespace": role.namespace},
        "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": role.name}},
                 "targetLabels": [TARGET_LABEL],
                 "endpoints": [{"port": "http", "path": "/metrics", "interval": "15s"}]},
    }


def rules_file(rule: dict[str, Any]) -> dict[str, Any]:
    """The PrometheusRule's spec as a plain Prometheus rules file (for `promtool check rules`)."""
    return {"groups": rule["spec"]["groups"]}


def kill_switch_test(plan: Plan, role: Role, rules_path: str) -> dict[str, Any]:
    """A `promtool test rules` case: quiet for 5 min it must not fire; once every request is
    slower than the largest finite bucket (P99 reads 80 s) it must fire after `for`."""
    slo = plan.ttft_slo_s[role.workload]
    labels = f'{selector(role)}, service="{role.name}"'
    # 100 requests a minute. Minutes 0-10: all under 0.5 s (every finite bucket counts them);
    # from minute 11 all land above 80 s, i.e. only in +Inf.
    series = [
        {
            "series": f'vllm:time_to_first_token_seconds_bucket{{{labels}, le="{le}"}}',
            "values": "0+100x10 1000+0x30",
        }
        for le in ("0.5", "1", "2.5", "5", "10", "20", "40", "80")
    ]
    series.append({"series": f'vllm:time_to_first_token_seconds_bucket{{{labels}, le="+Inf"}}',
                   "values": "0+100x41"})
    _, alert = _role_rules(role, slo)
    return {
        "rule_files": [rules_path],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": series,
                "alert_rule_test": [
                    {"eval_time": "5m", "alertname": ALERT, "exp_alerts": []},
                    {
                        "eval_time": "30m",
                        "alertname": ALERT,
                        "exp_alerts": [
                            {
                                "exp_labels": dict(alert["labels"]),
                                "exp_annotations": dict(alert["annotations"]),
                            }
                        ],
                    },
                ],
            }
        ],
    }
