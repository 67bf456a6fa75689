"""PodDisruptionBudgets (`policy/v1`) -> the node provider's `pod_disruption_budgets`
(provisioning/disruption_budget.py).

A PDB is simulated when its selector (matchLabels and matchExpressions) selects the serving
pod's labels in the workload's namespace; the simulated serving pods are then all the pods it
covers, so it is written with an empty selector. One that selects other pods is noted and left
out (no other pods are simulated). The API's own rules are checked: exactly one of
`minAvailable` / `maxUnavailable`, each a count >= 0 or a percentage.
"""

from __future__ import annotations

import re

from gpuscale.audit.context import namespace_of, selector_matches
from gpuscale.audit.loader import Manifest, format_path
from gpuscale.errors import UserInputError

_PERCENT = re.compile(r"^\d+%$")
_SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist")


def _fail(obj: Manifest, path: tuple, message: str) -> UserInputError:
    line, _ = obj.position(path)
    return UserInputError(f"{message} ({obj.ref}, line {line})", source=obj.source,
                          field=format_path(path))


def _int_or_percent(obj: Manifest, key: str) -> int | str:
    value = obj.get("spec", key)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    # The API server refuses a percentage above 100% (policy validation,
    # IsNotMoreThan100Percent); "150%" was read as more pods than the workload has.
    if isinstance(value, str) and _PERCENT.match(value) and int(value[:-1]) <= 100:
        return value
    raise _fail(obj, ("spec", key), f"expected an integer >= 0 or a percentage such as "
                f"\"50%\" (0%..100%), got {value!r}")


def _selector(obj: Manifest) -> dict | None:
    """The label selector; None when absent (policy/v1: a null selector selects no pods)."""
    selector = obj.get("spec", "selector")
    if selector is None:
        return None
    if not isinstance(selector, dict):
        raise _fail(obj, ("spec", "selector"), "expected a label selector")
    for index, expr in enumerate(selector.get("matchExpressions") or []):
        if not isinstance(expr, dict) or expr.get("operator") not in _SELECTOR_OPS:
            raise _fail(obj, ("spec", "selector", "matchExpressions", index),
                        f"expected an operator among {', '.join(_SELECTOR_OPS)}")
    return selector


def _one(obj: Manifest) -> dict:
    given = [k for k in ("minAvailable", "maxUnavailable") if obj.get("spec", k) is not None]
    if len(given) != 1:
        raise _fail(obj, ("spec",), "set exactly one of minAvailable and maxUnavailable (the "
                    "API refuses both; neither budgets nothing)")
    key = given[0]
    ours = "min_available" if key == "minAvailable" else "max_unavailable"
    return {"name": obj.name, "match_labels": {}, ours: _int_or_percent(obj, key)}


def budgets(objects: list[Manifest], workload: Manifest, pod_labels: dict,
            provider: str | None, notes: list[str]) -> list[dict]:
    """The bundle's PDBs that select the serving pods, as provider params mappings."""
    out = []
    for obj in objects:
        if obj.kind != "PodDisruptionBudget":
            continue
        selector = _selector(obj)
        if selector is None or namespace_of(obj) != namespace_of(workload) or not selector_matches(
                selector, pod_labels):
            notes.append(f"{obj.ref} does not select the serving pods; not simulated (no "
                         "other pods are)")
            continue
        entry = _one(obj)
        if obj.get("spec", "unhealthyPodEvictionPolicy") == "AlwaysAllow":
            notes.append(f"{obj.ref}: unhealthyPodEvictionPolicy AlwaysAllow read as the "
                         "default (a bound serving pod counts healthy)")
        if provider is None:
            notes.append(f"{obj.ref} applies to the serving pods; not simulated: no Karpenter "
                         "NodePool or Cluster Autoscaler drains nodes in this bundle")
            continue
        out.append(entry)
    return out
