"""HPA (autoscaling/v2) and KEDA ScaledObject manifests -> the scenario's `autoscaler` mapping.

Field names follow the APIs (reference layer3-replica-autoscaling.md sections 1 and 2); what an
object leaves unset takes the API default, which the scenario's params models already hold.
Each reader returns the mapping plus notes on how it read what it could not take literally.
"""

from __future__ import annotations

from typing import Any

from gpuscale.audit.loader import Manifest, format_path
from gpuscale.audit.promql import returns_one_series
from gpuscale.errors import UserInputError
from gpuscale.importer.promql import QueryContext, import_query
from gpuscale.metrics.store import POD_SERIES
from gpuscale.units import parse_quantity

_RULE_KEYS = {"stabilizationWindowSeconds": "stabilization_window_s",
              "selectPolicy": "select_policy", "tolerance": "tolerance_frac"}


def _fail(obj: Manifest, path: tuple, message: str) -> UserInputError:
    line, _ = obj.position(path)
    return UserInputError(f"{message} ({obj.ref}, line {line})", source=obj.source,
                          field=format_path(path))


def _quantity(obj: Manifest, path: tuple) -> float:
    value = obj.get(*path)
    try:
        return float(parse_quantity(value))
    except (TypeError, ValueError):
        raise _fail(obj, path, f"expected a number or quantity, got {value!r}") from None


def _int(obj: Manifest, path: tuple, default: int | None = None) -> int | None:
    value = obj.get(*path, default=default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(obj, path, f"expected an integer, got {value!r}")
    return value


def behavior(obj: Manifest, path: tuple) -> dict | None:
    """`behavior:` with its camelCase keys -> the scenario's Behavior mapping."""
    data = obj.get(*path)
    if data is None:
        return None
    if not isinstance(data, dict):
        raise _fail(obj, path, "expected a mapping with scaleUp/scaleDown")
    out = {}
    for api, ours in (("scaleUp", "scale_up"), ("scaleDown", "scale_down")):
        rules = data.get(api)
        if rules is None:
            continue
        if not isinstance(rules, dict):
            raise _fail(obj, path + (api,), "expected a mapping of scaling rules")
        mapped: dict = {}
        for key, value in rules.items():
            if key == "policies":
                if not isinstance(value, list):
                    raise _fail(obj, path + (api, key), "expected a list of policies")
                mapped["policies"] = [
                    {
                        "type": p.get("type"),
                        "value": p.get("value"),
                        "period_s": p.get("periodSeconds"),
                    }
                    if isinstance(p, dict)
                    else p
                    for p in value
                ]
            elif key == "tolerance":
                mapped["tolerance_frac"] = _quantity(obj, path + (api, key))
            elif key in _RULE_KEYS:
                mapped[_RULE_KEYS[key]] = value
            else:
                raise _fail(obj, path + (api, key), f"unknown field of HPAScalingRules {key!r}")
        out[ours] = mapped
    return out


def _adapter_metric(name: str) -> tuple[str, str]:
    """A custom/external metrics API name -> the Prometheus series it most likely serves.

    prometheus-adapter cannot expose ':' in a metric name, so `vllm:num_requests_waiting` is
    usually renamed `vllm_num_requests_waiting`; read it back with a note."""
    if name in POD_SERIES:
        return name, ""
    if name.startswith("vllm_") and name.replace("vllm_", "vllm:", 1) in POD_SERIES:
        series = name.replace("vllm_", "vllm:", 1)
        return series, f"adapter metric {name} read as {series}"
    return name, ""


def _target(obj: Manifest, path: tuple) -> dict:
    target = obj.get(*path)
    if not isinstance(target, dict):
        raise _fail(obj, path, "expected a metric target")
    kind = target.get("type")
    key = {"AverageValue": "averageValue", "Value": "value",
           "Utilization": "averageUtilization"}.get(str(kind))
    if key is None:
        raise _fail(
            obj, path + ("type",), f"expected AverageValue, Value or Utilization, got {kind!r}"
        )
    return {"type": kind, "value": _quantity(obj, path + (key,))}


def hpa(obj: Manifest) -> tuple[dict, list[str]]:
    """An autoscaling/v2 HorizontalPodAutoscaler -> (autoscaler mapping, notes)."""
    if not obj.api_version.startswith("autoscaling/v2"):
        raise _fail(obj, ("apiVersion",), f"apiVersion {obj.api_version} is not simulated; "
                    "expected autoscaling/v2")
    notes: list[str] = []
    metrics = []
    items = obj.get("spec", "metrics")
    if not isinstance(items, list) or not items:
        raise _fail(obj, ("spec", "metrics"), "no metrics: the API default (cpu 80%) does not "
                    "scale a GPU serving pod; give a vLLM metric")
    for index, item in enumerate(items):
        path = ("spec", "metrics", index)
        kind = item.get("type") if isinstance(item, dict) else None
        section = {"Pods": "pods", "External": "external", "Object": "object",
                   "Resource": "resource"}.get(str(kind))
        if section is None:
            raise _fail(obj, path + ("type",), f"expected Pods, External, Object or Resource, "
                        f"got {kind!r}")
        if kind == "Resource":
            # The simulated pods export no CPU/memory usage, and HPA takes the largest
            # proposal over its metrics, so this one cannot be left out either.
            raise _fail(obj, path, f"Resource metric {obj.get(*path, section, 'name')!r} "
                        "(the pod's CPU/memory) is not simulated for GPU serving pods; scale on "
                        "a vLLM series (Pods or External metric) instead (audit rule GPU003)")
        target = _target(obj, path + (section, "target"))
        name = obj.get(*path, section, "metric", "name")
        if not isinstance(name, str):
            raise _fail(obj, path + (section, "metric", "name"), "expected a metric name")
        series, note = _adapter_metric(name)
        notes += [note] if note else []
        if kind == "Pods":
            metrics.append({"type": kind, "metric": series, "target": target})
        else:
            notes.append(f"{kind} metric {name}: its adapter's query is not in the HPA; read "
                         f"as sum({series}) over the deployment's pods")
            metrics.append({"type": kind, "query": {"metric": series, "aggregation": "sum"},
                            "target": target})
    out: dict[str, Any] = {"kind": "hpa", "min_replicas": _int(obj, ("spec", "minReplicas"), 1),
           "max_replicas": _int(obj, ("spec", "maxReplicas")), "metrics": metrics}
    if out["max_replicas"] is None:
        raise _fail(obj, ("spec", "maxReplicas"), "missing (required by the API)")
    rules = behavior(obj, ("spec", "behavior"))
    if rules is not None:
        out["behavior"] = rules
    return out, notes


def _bool_text(obj: Manifest, path: tuple, default: bool) -> bool:
    value = obj.get(*path, default=default)
    if isinstance(value, bool):
        return value
    if str(value).lower() in ("true", "false"):
        return str(value).lower() == "true"
    raise _fail(obj, path, f"expected \"true\" or \"false\", got {value!r}")


def _trigger(obj: Manifest, index: int, notes: list[str], ctx: QueryContext) -> dict:
    path = ("spec", "triggers", index)
    kind = obj.get(*path, "type")
    if kind != "prometheus":
        raise _fail(obj, path + ("type",), f"trigger type {kind!r} is not simulated; the "
                    "simulator reads Prometheus triggers (type: prometheus)")
    meta = path + ("metadata",)
    if obj.get(*meta, "threshold") is None:
        raise _fail(obj, meta + ("threshold",), "missing (required by the Prometheus scaler)")
    query = import_query(obj.get(*meta, "query"), ctx, source=obj.source,
                         field_path=format_path(meta + ("query",)), notes=notes)
    if not returns_one_series(query):
        notes.append(f"query {' '.join(query.split())!r} can return one series per pod: "
                     "KEDA's Prometheus scaler fails when it returns more than one (the "
                     "simulation reads it the same way)")
    out = {
        "query": query,
        "threshold": _quantity(obj, meta + ("threshold",)),
        "ignore_null_values": _bool_text(obj, meta + ("ignoreNullValues",), True),
    }
    name = obj.get(*path, "name")
    if name is not None:
        out["name"] = str(name)
    if obj.get(*meta, "activationThreshold") is not None:
        out["activation_threshold"] = _quantity(obj, meta + ("activationThreshold",))
    metric_type = obj.get(*path, "metricType")
    if metric_type is not None:
        # KEDA's CRD enum; Utilization is for the cpu/memory scalers only.
        if metric_type not in ("AverageValue", "Value"):
            raise _fail(obj, path + ("metricType",), f"metricType {metric_type!r}: a Prometheus "
                        "trigger takes AverageValue (the default) or Value")
        out["metric_type"] = metric_type
    return out


def scaled_object(obj: Manifest, ctx: QueryContext) -> tuple[dict, list[str]]:
    """A KEDA ScaledObject -> (autoscaler mapping, notes); its queries are checked against
    the simulated series (`ctx`)."""
    notes: list[str] = []
    triggers = obj.get("spec", "triggers")
    if not isinstance(triggers, list) or not triggers:
        raise _fail(obj, ("spec", "triggers"), "expected at least one trigger")
    out: dict = {
        "kind": "keda",
        "triggers": [_trigger(obj, i, notes, ctx) for i in range(len(triggers))],
    }
    for api, ours in (("pollingInterval", "polling_interval_s"),
                      ("cooldownPeriod", "cooldown_period_s"),
                      ("initialCooldownPeriod", "initial_cooldown_period_s"),
                      ("minReplicaCount", "min_replica_count"),
                      ("maxReplicaCount", "max_replica_count"),
                      ("idleReplicaCount", "idle_replica_count")):
        value = _int(obj, ("spec", api))
        if value is not None:
            out[ours] = value
    fallback = obj.get("spec", "fallback")
    if isinstance(fallback, dict):
        out["fallback"] = {"failure_threshold": fallback.get("failureThreshold"),
                           "replicas": fallback.get("replicas")}
    rules = behavior(obj, ("spec", "advanced", "horizontalPodAutoscalerConfig", "behavior"))
    if rules is not None:
        out["advanced"] = {"horizontal_pod_autoscaler_config": {"behavior": rules}}
    return out, notes


def target_name(obj: Manifest) -> str:
    """The workload a scaler scales (`spec.scaleTargetRef.name`)."""
    name = obj.get("spec", "scaleTargetRef", "name")
    if not isinstance(name, str):
        raise _fail(obj, ("spec", "scaleTargetRef", "name"), "expected the scaled workload's name")
    return name
