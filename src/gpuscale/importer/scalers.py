"""HPA (autoscaling/v2) manifests -> the scenario's `autoscaler` mapping, and the readers the
ScaledObject's (scaled_object.py) shares: quantities, integers, booleans, `behavior`.

Field names follow the APIs (reference layer3-replica-autoscaling.md sections 1 and 2); what an
object leaves unset takes the API default, which the scenario's params models already hold.
Each reader returns the mapping plus notes on how it read what it could not take literally.
"""

from __future__ import annotations

from typing import Any

from gpuscale.audit.loader import Manifest, format_path
from gpuscale.errors import UserInputError
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
    for key in data:
        if key not in ("scaleUp", "scaleDown"):
            raise _fail(obj, path + (key,), f"unknown field of HorizontalPodAutoscalerBehavior "
                        f"{key!r} (expected scaleUp, scaleDown)")
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
                mapped["policies"] = [_policy(obj, path + (api, key, i), p)
                                      for i, p in enumerate(value)]
            elif key == "tolerance":
                mapped["tolerance_frac"] = _quantity(obj, path + (api, key))
            elif key in _RULE_KEYS:
                mapped[_RULE_KEYS[key]] = value
            else:
                raise _fail(obj, path + (api, key), f"unknown field of HPAScalingRules {key!r}")
        out[ours] = mapped
    return out


def _policy(obj: Manifest, path: tuple, policy: object) -> object:
    """One `HPAScalingPolicy` (type, value, periodSeconds); another key is refused by name."""
    if not isinstance(policy, dict):
        return policy  # the scenario check names what was expected
    for key in policy:
        if key not in ("type", "value", "periodSeconds"):
            raise _fail(obj, path + (key,), f"unknown field of HPAScalingPolicy {key!r} "
                        "(expected type, value, periodSeconds)")
    return {"type": policy.get("type"), "value": policy.get("value"),
            "period_s": policy.get("periodSeconds")}


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


def target_name(obj: Manifest) -> str:
    """The workload a scaler scales (`spec.scaleTargetRef.name`)."""
    name = obj.get("spec", "scaleTargetRef", "name")
    if not isinstance(name, str):
        raise _fail(obj, ("spec", "scaleTargetRef", "name"), "expected the scaled workload's name")
    return name
