"""Shape checks of a loaded object before any rule reads it.

Kubernetes gives most field names one type across every kind: `metadata`, `spec`, `template`,
`resources` are always mappings, `containers`, `tolerations`, `metrics`, `triggers` always lists
of mappings, `replicas` and `minReplicas` always integers. A manifest that breaks one of these
would be refused by the API server; here it gets the same one-line answer (file, line, field,
what was expected) instead of a traceback from whichever rule reads the field first. Only the
kinds a rule (or the diagnosis) reads are checked: an unknown kind's fields are its own. Free-form
maps (labels, annotations, a KEDA trigger's `metadata`, ...) are not descended into: their keys
are the user's own. IntOrString fields (`maxUnavailable`, `minAvailable`) are left alone.

A few names mean a mapping only inside an HPA metric (`metrics[i].pods`, `.resource`,
`.external`, `.object`, and `target`/`metric` inside those): elsewhere Kubernetes uses the same
word for a scalar (a Node's `status.allocatable.pods: "110"`, an env var's
`valueFrom.resourceFieldRef.resource: limits.memory`), so they are checked only there.
"""

from __future__ import annotations

from gpuscale.audit.loader import Manifest, PathKey, format_path
from gpuscale.errors import UserInputError

MAPPING_KEYS = frozenset({
    "metadata", "spec", "template", "labels", "annotations", "resources", "limits", "requests",
    "selector", "matchLabels", "nodeSelector", "affinity", "nodeAffinity", "podAffinity",
    "podAntiAffinity", "behavior", "scaleUp", "scaleDown", "disruption", "scaleTargetRef",
    "leaderWorkerTemplate", "leaderTemplate", "workerTemplate", "headGroupSpec", "advanced",
    "horizontalPodAutoscalerConfig", "kubelet", "rayStartParams", "securityContext",
    "allocatable", "capacity", "involvedObject", "nodeClassRef", "ebs",
})
# An HPA's `metrics[i]` (and its status's `currentMetrics[i]`): the metric source by type
# (k8s.io/api autoscaling/v2 MetricSpec), and inside a source its `target`/`metric`/`current`.
METRIC_LISTS = frozenset({"metrics", "currentMetrics"})
METRIC_SOURCE_KEYS = frozenset({"resource", "containerResource", "pods", "object", "external"})
METRIC_SOURCE_MAPPING_KEYS = frozenset({"target", "metric", "current", "describedObject"})
LIST_OF_MAPPINGS_KEYS = frozenset({
    "containers", "initContainers", "tolerations", "metrics", "triggers", "requirements",
    "budgets", "policies", "env", "volumes", "volumeMounts", "ports", "nodeSelectorTerms",
    "matchExpressions", "workerGroupSpecs", "groups", "rules", "taints", "startupTaints",
    "conditions", "items", "blockDeviceMappings",
})
LIST_OF_SCALARS_KEYS = frozenset({"args", "command", "values"})
# Names and references: always strings (rules look objects up by them).
STRING_KEYS = frozenset({"kind", "name", "namespace", "key", "operator", "apiVersion"})
INT_KEYS = frozenset({
    "replicas", "minReplicas", "maxReplicas", "minReplicaCount", "maxReplicaCount",
    "idleReplicaCount", "pollingInterval", "cooldownPeriod", "stabilizationWindowSeconds",
    "periodSeconds", "terminationGracePeriodSeconds",
})
# Maps whose keys are the user's (or a scaler's) own: their values are not checked.
FREE_FORM_KEYS = frozenset({"labels", "annotations", "matchLabels", "nodeSelector",
                            "rayStartParams", "data", "stringData"})

# Free-form maps whose values Kubernetes requires to be strings.
STRING_VALUED_KEYS = frozenset({"labels", "annotations", "matchLabels", "nodeSelector"})


def _kind_of(value) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value) if len(repr(value)) <= 40 else type(value).__name__


def _metric_mapping(path: PathKey, key: str) -> bool:
    """Whether `key` under `path` is a mapping because it sits in an HPA metric (module doc)."""
    in_metric = len(path) >= 2 and isinstance(path[-1], int) and path[-2] in METRIC_LISTS
    if in_metric:
        return key in METRIC_SOURCE_KEYS
    in_source = (len(path) >= 3 and path[-1] in METRIC_SOURCE_KEYS
                 and isinstance(path[-2], int) and path[-3] in METRIC_LISTS)
    return in_source and key in METRIC_SOURCE_MAPPING_KEYS


def shape_error(data: dict) -> tuple[PathKey, str] | None:
    """The first field (path, expectation) whose type no Kubernetes object would have."""
    stack: list[tuple[PathKey, object]] = [((), data)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            free = bool(path) and (
                path[-1] in FREE_FORM_KEYS
                or (len(path) >= 3 and path[-3] == "triggers" and path[-1] == "metadata")
            )
            for key, value in reversed(list(node.items())):
                here = path + (key,)
                if free:
                    if path[-1] in STRING_VALUED_KEYS and isinstance(value, (dict, list)):
                        return here, f"expected a string, got {_kind_of(value)}"
                    continue
                # `status` is a mapping at the top of an object (a condition's is a string).
                mapping = key in MAPPING_KEYS or (not path and key == "status") or \
                    _metric_mapping(path, key)
                if mapping and value is not None and not isinstance(value, dict):
                    return here, f"expected a mapping, got {_kind_of(value)}"
                if key in LIST_OF_MAPPINGS_KEYS and value is not None:
                    if not isinstance(value, list):
                        return here, f"expected a list, got {_kind_of(value)}"
                    for i, item in enumerate(value):
                        if not isinstance(item, dict):
                            return here + (i,), f"expected a mapping, got {_kind_of(item)}"
                if key in LIST_OF_SCALARS_KEYS and value is not None:
                    if not isinstance(value, list):
                        return here, f"expected a list, got {_kind_of(value)}"
                    for i, item in enumerate(value):
                        if isinstance(item, (dict, list)):
                            return here + (i,), f"expected a string, got {_kind_of(item)}"
                if key in STRING_KEYS and isinstance(value, (dict, list)):
                    return here, f"expected a string, got {_kind_of(value)}"
                if key in INT_KEYS and value is not None and (
                        isinstance(value, bool) or not isinstance(value, int)):
                    return here, f"expected an integer, got {_kind_of(value)}"
                stack.append((here, value))
        elif isinstance(node, list):
            stack.extend((path + (i,), item) for i, item in reversed(list(enumerate(node))))
    return None


def check_shape(obj: Manifest) -> None:
    """Raise the one-line error (file, line, column, field, expectation) for the first
    misshapen field of an object a rule or the diagnosis is about to read."""
    found = shape_error(obj.data)
    if found is None:
        return
    path, expected = found
    line, column = obj.position(path)
    raise UserInputError(f"line {line}, column {column}: {obj.ref}: "
                         f"{format_path(obj.base_path + path)}: {expected}", source=obj.source)
