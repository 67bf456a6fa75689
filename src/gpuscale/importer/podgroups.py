"""KAI PodGroups (`scheduling.run.ai/v2alpha2`) -> the scenario's `pod_group`.

The serving pods join a user-written PodGroup through their `pod-group-name` annotation (KAI's
pod-grouper otherwise makes one PodGroup per Deployment pod, reference layer2-scheduling.md
2.3). Read: `minMember`, `queue`, `priorityClassName` (KAI's built-in classes, the two system
classes, or a PriorityClass in the bundle), `preemptibility`, `preemptionDelay`,
`stalenessGracePeriod`. Refused in one line naming the file and field: `subGroups`,
`minSubGroup` and `topologyConstraint` (the serving replicas are one flat gang here), and
values the CRD itself refuses. `markUnschedulable` and `schedulingBackoff` change events and
retries only and are noted.
"""

from __future__ import annotations

from gpuscale.audit.context import namespace_of
from gpuscale.audit.loader import Manifest, format_path
from gpuscale.cluster.groups import (
    DEFAULT_QUEUE,
    PRIORITY_BUILD,
    PRIORITY_BUILD_PREEMPTIBLE,
    PRIORITY_INFERENCE,
    PRIORITY_TRAIN,
)
from gpuscale.errors import UserInputError
from gpuscale.importer.cluster_autoscaler import BadFlag, go_duration_s

GROUP = "scheduling.run.ai/"
POD_GROUP_ANNOTATION = "pod-group-name"  # KAI's pod -> PodGroup link
# KAI's built-in PriorityClasses (layer2-scheduling.md 2.3) and Kubernetes' system classes.
BUILT_IN_PRIORITIES = {"train": PRIORITY_TRAIN, "build-preemptible": PRIORITY_BUILD_PREEMPTIBLE,
                       "build": PRIORITY_BUILD, "inference": PRIORITY_INFERENCE,
                       "system-cluster-critical": 2_000_000_000,
                       "system-node-critical": 2_000_001_000}
_UNSUPPORTED = ("subGroups", "minSubGroup", "topologyConstraint")


def _fail(obj: Manifest, path: tuple, message: str) -> UserInputError:
    line, _ = obj.position(path)
    return UserInputError(f"{message} ({obj.ref}, line {line})", source=obj.source,
                          field=format_path(path))


def _priority(obj: Manifest, objects: list[Manifest]) -> int:
    name = obj.get("spec", "priorityClassName")
    if name is None:
        return 0  # the CRD: no class and no default class -> zero
    for pc in objects:
        if pc.kind == "PriorityClass" and pc.name == name:
            value = pc.get("value")
            if isinstance(value, bool) or not isinstance(value, int):
                raise _fail(pc, ("value",), f"expected an integer, got {value!r}")
            return value
    if name in BUILT_IN_PRIORITIES:
        return BUILT_IN_PRIORITIES[name]
    raise _fail(obj, ("spec", "priorityClassName"), f"PriorityClass {name!r} is neither KAI's "
                f"({', '.join(BUILT_IN_PRIORITIES)}) nor in the manifests; add it")


def _duration_s(obj: Manifest, key: str, negative_is_never: bool = False) -> float | None:
    value = obj.get("spec", key)
    if value is None:
        return None
    text = str(value)
    negative = text.startswith("-")
    try:
        seconds = go_duration_s(text.lstrip("-"))
    except BadFlag as exc:
        raise _fail(obj, ("spec", key), str(exc)) from None
    if negative:
        if not negative_is_never:
            raise _fail(obj, ("spec", key), f"expected a duration >= 0, got {text!r}")
        return -1.0  # negative: stale-gang eviction off for this PodGroup, as KAI reads it
    return seconds


def _one(obj: Manifest, objects: list[Manifest], notes: list[str]) -> dict:
    for key in _UNSUPPORTED:
        if obj.get("spec", key) not in (None, [], {}):
            raise _fail(obj, ("spec", key), f"{key} is not simulated: the serving replicas "
                        "are one flat gang (use minMember)")
    min_member = obj.get("spec", "minMember", default=1)
    if isinstance(min_member, bool) or not isinstance(min_member, int) or min_member < 0:
        raise _fail(obj, ("spec", "minMember"), f"expected an integer >= 0, got {min_member!r}")
    out: dict = {"name": obj.name, "min_member": min_member, "queue": DEFAULT_QUEUE,
                 "priority": _priority(obj, objects)}
    preemptibility = obj.get("spec", "preemptibility")
    if preemptibility is not None:
        if preemptibility not in ("preemptible", "non-preemptible"):
            raise _fail(obj, ("spec", "preemptibility"), "expected preemptible or "
                        f"non-preemptible, got {preemptibility!r}")
        out["preemptible"] = preemptibility == "preemptible"
    delay_s = _duration_s(obj, "preemptionDelay")
    if delay_s is not None:
        out["preemption_delay_s"] = delay_s
    grace_s = _duration_s(obj, "stalenessGracePeriod", negative_is_never=True)
    if grace_s is not None:
        out["staleness_grace_s"] = grace_s
    ignored = [k for k in ("markUnschedulable", "schedulingBackoff")
               if obj.get("spec", k) is not None]
    if ignored:
        notes.append(f"{obj.ref}: {', '.join(ignored)} not simulated (events and retries only)")
    return out


def pod_group(objects: list[Manifest], workload: Manifest, pod_annotations: dict,
              kai: bool, max_replicas: int, notes: list[str]) -> tuple[dict | None, str | None]:
    """(the scenario's `pod_group` mapping or None, the PodGroup's `spec.queue` if any)."""
    groups = [o for o in objects if o.kind == "PodGroup" and o.api_version.startswith(GROUP)]
    wanted = pod_annotations.get(POD_GROUP_ANNOTATION)
    chosen = None
    for obj in groups:
        if obj.name == wanted and namespace_of(obj) == namespace_of(workload):
            chosen = obj
        else:
            notes.append(f"{obj.ref}: no serving pod names it ({POD_GROUP_ANNOTATION}); not "
                         "simulated")
    if chosen is None:
        if wanted:
            notes.append(f"the serving pod names PodGroup {wanted!r}, which is not in the "
                         "manifests; each pod is simulated as its own group")
        return None, None
    if not kai:
        notes.append(f"{chosen.ref} not simulated: the serving pod's schedulerName is not "
                     "kai-scheduler and the bundle has no KAI Queue")
        return None, None
    out = _one(chosen, objects, notes)
    if out["min_member"] > max_replicas:
        notes.append(f"{chosen.ref}: minMember {out['min_member']} > the {max_replicas} "
                     "replicas the autoscaler allows; KAI never starts the gang")
    queue = chosen.get("spec", "queue")
    return out, (str(queue) if queue else None)
