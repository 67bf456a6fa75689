"""The Cluster Autoscaler priority expander's ConfigMap -> `ClusterAutoscalerParams.priorities`.

With `--expander=priority` CA reads the ConfigMap `cluster-autoscaler-priority-expander` in its
own namespace: `data.priorities` is YAML mapping a priority (an integer) to a list of regular
expressions over node group names; the highest priority with a matching group wins and groups
no expression matches are never chosen (cluster-autoscaler `expander/priority/priority.go`,
`expander/priority/readme.md`; reference layer1-node-provisioning.md 2.2). CA's expressions
are Go RE2; Python's `re` reads the RE2 subset people write (`.*p5.*`, `^gpu-.*$`), and one it
cannot compile is refused.
"""

from __future__ import annotations

import re

from gpuscale.audit.context import namespace_of
from gpuscale.audit.loader import Manifest
from gpuscale.errors import UserInputError
from gpuscale.inputs import parse_yaml

CONFIG_MAP = "cluster-autoscaler-priority-expander"


def find(objects: list[Manifest], ca: Manifest) -> Manifest | None:
    for obj in objects:
        if (obj.kind == "ConfigMap" and obj.name == CONFIG_MAP
                and namespace_of(obj) == namespace_of(ca)):
            return obj
    return None


def priorities(objects: list[Manifest], ca: Manifest, group_names: list[str],
               notes: list[str]) -> dict[int, list[str]]:
    """The ConfigMap's priorities, validated; refused when it is missing or misshapen."""
    obj = find(objects, ca)
    if obj is None:
        raise UserInputError(f"--expander=priority but no ConfigMap {CONFIG_MAP} in namespace "
                             f"{namespace_of(ca)} among the manifests; add it (CA reads its "
                             "priorities from there)", source=ca.source, field="--expander")
    line, _ = obj.position(("data", "priorities"))
    where = f"{obj.ref}, line {line}"
    text = obj.get("data", "priorities")
    if not isinstance(text, str):
        raise UserInputError(f"expected data.priorities as a YAML string ({where})",
                             source=obj.source, field="data.priorities")
    data = parse_yaml(text, f"{obj.source} ({obj.ref} data.priorities)")
    if not isinstance(data, dict) or not data:
        raise UserInputError(f"expected a mapping of priority -> list of regexes ({where})",
                             source=obj.source, field="data.priorities")
    out: dict[int, list[str]] = {}
    for key, value in data.items():
        try:
            level = int(str(key))
        except ValueError:
            raise UserInputError(f"priority {key!r} is not an integer ({where})",
                                 source=obj.source, field=f"data.priorities.{key}") from None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UserInputError(f"expected a list of regexes under {key} ({where})",
                                 source=obj.source, field=f"data.priorities.{key}")
        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise UserInputError(f"regex {pattern!r} does not compile: {exc} ({where})",
                                     source=obj.source, field=f"data.priorities.{key}") from None
        out[level] = list(value)
    matched = [g for g in group_names if any(re.search(p, g) for ps in out.values() for p in ps)]
    if not matched:
        notes.append(f"{obj.ref}: no node group ({', '.join(group_names)}) matches a priority; "
                     "CA never scales up (simulated so)")
    return out
