"""A KEDA ScaledObject -> the scenario's `keda` autoscaler mapping, every field read or refused.

Fields and defaults: kedacore/keda `apis/keda/v1alpha1/scaledobject_types.go` and
`scaletriggers_types.go`; validation as KEDA's admission webhook does it
(`scaledobject_webhook.go`: the formula compiled against the named triggers, a target > 0,
`fallback.behavior: scalingModifiers` only with a formula); pause annotations as
`scaledobject_types.go` reads them (`getBoolAnnotation`: a value that is not a Go bool counts as
true; `paused-replicas` must be an integer). A field the simulation does not model is refused
with its path; connection settings (server address, auth, TLS, timeouts) are read and not
simulated, as the docs say.
"""

from __future__ import annotations

from typing import Any

from gpuscale.audit.loader import Manifest, format_path
from gpuscale.audit.promql import returns_one_series
from gpuscale.autoscaling.formula import Formula, FormulaError, FormulaRefused
from gpuscale.importer.promql import QueryContext, import_query
from gpuscale.importer.scalers import _bool_text, _fail, _int, _quantity, behavior

PAUSED = "autoscaling.keda.sh/paused"
PAUSED_REPLICAS = "autoscaling.keda.sh/paused-replicas"
PAUSED_SCALE_IN = "autoscaling.keda.sh/paused-scale-in"
PAUSED_SCALE_OUT = "autoscaling.keda.sh/paused-scale-out"
FORCE_ACTIVATION = "autoscaling.keda.sh/force-activation"
_SPEC_KEYS = {"scaleTargetRef", "pollingInterval", "cooldownPeriod", "initialCooldownPeriod",
              "idleReplicaCount", "minReplicaCount", "maxReplicaCount", "advanced", "triggers",
              "fallback"}
_TRIGGER_KEYS = {"type", "name", "useCachedMetrics", "metadata", "authenticationRef",
                 "metricType"}
# prometheus_scaler.go `prometheusMetadata`: what changes the value, and how it is reached.
_PROMETHEUS_READ = {"query", "threshold", "activationThreshold", "ignoreNullValues"}
_PROMETHEUS_CONNECTION = {"serverAddress", "namespace", "customHeaders", "queryParameters",
                          "unsafeSsl", "timeout", "awsRegion", "identityOwner", "authModes",
                          "metricName", "cortexOrgID"}
_COUNTS = (("pollingInterval", "polling_interval_s"), ("cooldownPeriod", "cooldown_period_s"),
           ("initialCooldownPeriod", "initial_cooldown_period_s"),
           ("minReplicaCount", "min_replica_count"), ("maxReplicaCount", "max_replica_count"),
           ("idleReplicaCount", "idle_replica_count"))


def read(obj: Manifest, ctx: QueryContext) -> tuple[dict, list[str]]:
    """(autoscaler mapping, notes) of a ScaledObject; its queries are kept as written and
    checked against the simulated series and recorded rules (`ctx`)."""
    notes: list[str] = []
    _only(obj, ("spec",), _SPEC_KEYS)
    triggers = obj.get("spec", "triggers")
    if not isinstance(triggers, list) or not triggers:
        raise _fail(obj, ("spec", "triggers"), "expected at least one trigger")
    out: dict[str, Any] = {
        "kind": "keda", "triggers": [_trigger(obj, i, notes, ctx) for i in range(len(triggers))]}
    for api, ours in _COUNTS:
        value = _int(obj, ("spec", api))
        if value is not None:
            out[ours] = value
    if out.get("idle_replica_count") == 0 and obj.get("spec", "minReplicaCount") == 0:
        # CheckReplicaCountBoundsAreValid compares idle with max(min, 1) when min is given, so
        # KEDA accepts idle 0 with min 0; it then scales exactly as min 0 alone does.
        del out["idle_replica_count"]
        notes.append(f"{obj.ref}: idleReplicaCount 0 with minReplicaCount 0 scales as "
                     "minReplicaCount 0 alone")
    _unique_names(obj, out["triggers"])
    advanced = _advanced(obj, out["triggers"], notes)
    if advanced:
        out["advanced"] = advanced
    fallback = _fallback(obj, advanced.get("scaling_modifiers"), notes)
    if fallback is not None:
        out["fallback"] = fallback
    out.update(pause_annotations(obj))
    return out, notes


def _only(obj: Manifest, path: tuple, known: set[str]) -> None:
    """Refuse a field this reader does not know at `path` (a typo KEDA's CRD would reject,
    or a newer field not simulated)."""
    data = obj.get(*path)
    if not isinstance(data, dict):
        return
    for key in data:
        if key not in known:
            raise _fail(obj, path + (key,), f"field {format_path(path + (key,))} is not "
                        f"simulated (known here: {', '.join(sorted(known))})")


def _cron_trigger(obj: Manifest, path: tuple) -> dict:
    """A `type: cron` trigger (kedacore/keda pkg/scalers/cron_scaler.go: timezone, start, end
    and desiredReplicas are all required; desiredReplicas is a string holding an integer)."""
    meta = path + ("metadata",)
    _only(obj, meta, {"timezone", "start", "end", "desiredReplicas"})
    out: dict[str, Any] = {"type": "cron"}
    for api, ours in (("timezone", "timezone"), ("start", "start"), ("end", "end"),
                      ("desiredReplicas", "desired_replicas")):
        value = obj.get(*meta, api)
        if value is None or value == "":
            raise _fail(obj, meta + (api,), "missing (required by the cron scaler)")
        out[ours] = str(value)
    try:
        out["desired_replicas"] = int(out["desired_replicas"])
    except ValueError:
        raise _fail(obj, meta + ("desiredReplicas",), "expected an integer, got "
                    f"{out['desired_replicas']!r}") from None
    name = obj.get(*path, "name")
    if isinstance(name, str) and name:
        out["name"] = name
    return out


def _trigger(obj: Manifest, index: int, notes: list[str], ctx: QueryContext) -> dict:
    path = ("spec", "triggers", index)
    _only(obj, path, _TRIGGER_KEYS)
    kind = obj.get(*path, "type")
    if kind == "cron":
        return _cron_trigger(obj, path)
    if kind != "prometheus":
        raise _fail(obj, path + ("type",), f"trigger type {kind!r} is not simulated; the "
                    "simulator reads Prometheus and cron triggers")
    meta = path + ("metadata",)
    _prometheus_keys(obj, meta, notes)
    if obj.get(*meta, "threshold") is None:
        raise _fail(obj, meta + ("threshold",), "missing (required by the Prometheus scaler)")
    query = import_query(obj.get(*meta, "query"), ctx, source=obj.source,
                         field_path=format_path(meta + ("query",)), notes=notes)
    if not returns_one_series(query):
        notes.append(f"query {_one_line(query)!r} can return one series per pod: KEDA's "
                     "Prometheus scaler fails when it returns more than one (the simulation "
                     "reads it the same way)")
    out: dict[str, Any] = {
        "query": query,
        "threshold": _quantity(obj, meta + ("threshold",)),
        "ignore_null_values": _bool_text(obj, meta + ("ignoreNullValues",), True),
    }
    name = obj.get(*path, "name")
    if name is not None:
        if not isinstance(name, str) or not name:
            raise _fail(obj, path + ("name",), f"expected a trigger name, got {name!r}")
        out["name"] = name
    if obj.get(*path, "useCachedMetrics") is not None:
        out["use_cached_metrics"] = _bool_text(obj, path + ("useCachedMetrics",), False)
    if obj.get(*meta, "activationThreshold") is not None:
        out["activation_threshold"] = _quantity(obj, meta + ("activationThreshold",))
    metric_type = obj.get(*path, "metricType")
    if metric_type is not None:
        out["metric_type"] = _metric_type(obj, path + ("metricType",), "a Prometheus trigger")
    return out


def _prometheus_keys(obj: Manifest, meta: tuple, notes: list[str]) -> None:
    data = obj.get(*meta)
    if not isinstance(data, dict):
        raise _fail(obj, meta, "expected the trigger's metadata mapping (query, threshold)")
    unknown = sorted(k for k in data if k not in _PROMETHEUS_READ | _PROMETHEUS_CONNECTION)
    if unknown:  # KEDA ignores metadata keys its scaler does not declare; so do we, saying so
        notes.append(f"{obj.ref} {format_path(meta)}: {', '.join(unknown)} not read by KEDA's "
                     "Prometheus scaler (ignored)")


def _metric_type(obj: Manifest, path: tuple, what: str) -> str:
    value = obj.get(*path)
    if value not in ("AverageValue", "Value"):  # Utilization is for the cpu/memory scalers
        raise _fail(obj, path, f"metricType {value!r}: {what} takes AverageValue (the default) "
                    "or Value")
    return str(value)


def _unique_names(obj: Manifest, triggers: list[dict]) -> None:
    seen: set[str] = set()
    for index, trigger in enumerate(triggers):
        name = trigger.get("name")
        if name in seen:  # scaletriggers_types.go ValidateTriggers
            raise _fail(obj, ("spec", "triggers", index, "name"), f"trigger name {name!r} is "
                        "defined more than once; KEDA requires unique names")
        if name:
            seen.add(name)


def _advanced(obj: Manifest, triggers: list[dict], notes: list[str]) -> dict:
    path = ("spec", "advanced")
    _only(obj, path, {"horizontalPodAutoscalerConfig", "restoreToOriginalReplicaCount",
                      "scalingModifiers"})
    _only(obj, path + ("horizontalPodAutoscalerConfig",), {"name", "behavior"})
    out: dict[str, Any] = {}
    rules = behavior(obj, path + ("horizontalPodAutoscalerConfig", "behavior"))
    if rules is not None:
        out["horizontal_pod_autoscaler_config"] = {"behavior": rules}
    if obj.get(*path, "restoreToOriginalReplicaCount"):
        notes.append(f"{obj.ref}: restoreToOriginalReplicaCount acts when the ScaledObject is "
                     "deleted, which the simulation never does")
    modifiers = obj.get(*path, "scalingModifiers")
    if isinstance(modifiers, dict) and modifiers:  # IsUsingModifiers: any field set
        out["scaling_modifiers"] = _modifiers(obj, path + ("scalingModifiers",), triggers)
    return out


def _modifiers(obj: Manifest, path: tuple, triggers: list[dict]) -> dict:
    _only(obj, path, {"formula", "target", "activationTarget", "metricType"})
    formula = obj.get(*path, "formula")
    if not isinstance(formula, str) or not formula.strip():
        raise _fail(obj, path + ("formula",), "missing: scalingModifiers needs a formula "
                    "(KEDA: \"ScalingModifiers.Formula is mandatory\")")
    if obj.get(*path, "target") is None:
        raise _fail(obj, path + ("target",), "missing: a formula needs a target")
    names = [t["name"] for t in triggers if t.get("name")]
    try:
        Formula.compile(formula, names)
    except FormulaRefused as exc:
        raise _fail(obj, path + ("formula",), f"formula {_one_line(formula)!r}: {exc}; "
                    "simulated: arithmetic, comparisons, and/or/not, ?:, ??, if/else, let, "
                    "arrays, abs ceil floor round int float max min mean median sum count all "
                    "any none one filter map len") from None
    except FormulaError as exc:
        raise _fail(obj, path + ("formula",), f"formula {_one_line(formula)!r} does not "
                    f"compile as KEDA compiles it: {exc}") from None
    target = _quantity(obj, path + ("target",))
    if not target > 0:
        raise _fail(obj, path + ("target",), f"expected a number > 0, got {target:g}")
    out: dict[str, Any] = {"formula": formula, "target": target}
    if obj.get(*path, "activationTarget") is not None:
        out["activation_target"] = _quantity(obj, path + ("activationTarget",))
    if obj.get(*path, "metricType") is not None:
        out["metric_type"] = _metric_type(obj, path + ("metricType",), "scalingModifiers")
    return out


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _fallback(obj: Manifest, modifiers: dict | None, notes: list[str]) -> dict | None:
    path = ("spec", "fallback")
    data = obj.get(*path)
    if data is None:
        return None
    if not isinstance(data, dict):
        raise _fail(obj, path, "expected a mapping with failureThreshold and replicas")
    _only(obj, path, {"failureThreshold", "replicas", "behavior"})
    out: dict[str, Any] = {"failure_threshold": _int(obj, path + ("failureThreshold",)),
                           "replicas": _int(obj, path + ("replicas",))}
    for key in ("failureThreshold", "replicas"):
        if obj.get(*path, key) is None:
            raise _fail(obj, path + (key,), "missing (required by the fallback API)")
    kind = obj.get(*path, "behavior", default="static")
    if kind not in ("static", "currentReplicas", "currentReplicasIfHigher",
                    "currentReplicasIfLower", "scalingModifiers"):
        raise _fail(obj, path + ("behavior",), f"behavior {kind!r}: expected static, "
                    "currentReplicas, currentReplicasIfHigher, currentReplicasIfLower or "
                    "scalingModifiers")
    if kind == "scalingModifiers" and modifiers is None:
        raise _fail(obj, path + ("behavior",), "behavior scalingModifiers requires "
                    "advanced.scalingModifiers.formula (KEDA admission check)")
    out["behavior"] = kind
    target = obj.get("spec", "advanced", "scalingModifiers", "target")
    if modifiers is not None and not _go_int(target):
        # fallback.go HasValidFallback parses the target with strconv.ParseInt.
        notes.append(f"{obj.ref}: fallback ignored, as KEDA ignores it: with scalingModifiers "
                     f"it needs an integer target, got {target!r}")
        return None
    return out


def _go_int(value: Any) -> bool:
    """strconv.ParseInt(value, 10, 64) succeeds and the value is > 0."""
    text = str(value)
    digits = text[1:] if text[:1] in "+-" else text
    return digits.isdigit() and digits.isascii() and int(text) > 0


def _go_bool(value: Any) -> bool:
    """`getBoolAnnotation`: strconv.ParseBool, anything else counts as true."""
    return str(value) not in ("0", "f", "F", "false", "FALSE", "False")


def pause_annotations(obj: Manifest) -> dict:
    """The pause and force-activation annotations as scenario fields."""
    notes = obj.annotations
    out: dict[str, Any] = {}
    if PAUSED_REPLICAS in notes:
        value = str(notes[PAUSED_REPLICAS])
        if not (value.lstrip("+-").isdigit() and value.isascii()) or int(value) < 0 \
                or int(value) > 2**31 - 1:
            raise _fail(obj, ("metadata", "annotations", PAUSED_REPLICAS), "expected a "
                        f"replica count (an int32 >= 0), got {value!r}")
        out["paused_replicas"] = int(value)
    for key, field in ((PAUSED, "paused"), (PAUSED_SCALE_IN, "paused_scale_in"),
                       (PAUSED_SCALE_OUT, "paused_scale_out"),
                       (FORCE_ACTIVATION, "force_activation")):
        if key in notes and _go_bool(notes[key]):
            out[field] = True
    return out
