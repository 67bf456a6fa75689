"""Forming PodGroups from pods, as KAI's pod-grouper does from a workload's owner.

A pod with `group_spec` uses it; a pod with only `group` joins a group formed with
minMember = all pods seen with that name (PyTorchJob/LWS default: all replicas,
layer2-scheduling.md 2.3); an owner-less pod is its own group with minMember 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from gpuscale.cluster.groups import DEFAULT_QUEUE, PodGroupSpec
from gpuscale.cluster.objects import Pod


@dataclass(slots=True)
class Gang:
    """The pods of one PodGroup in the cluster now."""

    spec: PodGroupSpec
    pods: list[Pod] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def min_member(self) -> int:
        return max(1, self.spec.min_member)

    @property
    def bound(self) -> list[Pod]:
        return [p for p in self.pods if p.node_name is not None]

    @property
    def pending(self) -> list[Pod]:
        return [p for p in self.pods if p.node_name is None]

    @property
    def num_bound(self) -> int:
        # A counting loop, not `sum` over a generator: KAI's cycle asks thousands of times a
        # run (stale gangs, completed gangs, victim lists), mostly of one-pod gangs.
        bound = 0
        for p in self.pods:
            if p.node_name is not None:
                bound += 1
        return bound

    @property
    def is_complete(self) -> bool:
        """Enough pods bound for the job to run (minMember reached)."""
        return self.num_bound >= self.min_member

    @property
    def created_s(self) -> float:
        return min(p.created_s for p in self.pods)


def group_name(pod: Pod) -> str:
    if pod.group_spec is not None:
        return pod.group_spec.name
    return pod.group or pod.name


def form_gangs(pods) -> dict[str, Gang]:
    """Group pods by PodGroup name, in pod order (dict order of the cluster: deterministic)."""
    gangs: dict[str, Gang] = {}
    for pod in pods:
        name = group_name(pod)
        gang = gangs.get(name)
        if gang is None:
            gang = gangs[name] = Gang(pod.group_spec or _default_spec(pod, name))
        gang.pods.append(pod)
    for gang in gangs.values():
        resize_default_gang(gang)
    return gangs


def resize_default_gang(gang: Gang) -> None:
    """pod-grouper default for multi-pod workloads: every replica is in the gang (minMember =
    its pods now), for a gang formed from a `group` name without a `group_spec`."""
    if gang.pods[0].group_spec is None and gang.pods[0].group is not None:
        gang.spec = PodGroupSpec(**{**_spec_fields(gang.spec), "min_member": len(gang.pods)})


def _default_spec(pod: Pod, name: str) -> PodGroupSpec:
    return _default_spec_of(name, pod.queue or DEFAULT_QUEUE, pod.priority)


@lru_cache(maxsize=4096, typed=True)  # typed: a float priority keeps its type
def _default_spec_of(name: str, queue: str, priority: int) -> PodGroupSpec:
    """One owner-less pod's PodGroup: a frozen value of its three inputs, so one object
    serves every cycle that forms the pod's gang (a KAI cycle forms every gang of the
    cluster, and a frozen dataclass's construction was most of `form_gangs`)."""
    return PodGroupSpec(name=name, min_member=1, queue=queue, priority=priority)


def _spec_fields(spec: PodGroupSpec) -> dict:
    return {f: getattr(spec, f) for f in spec.__dataclass_fields__}


def queue_of(pod: Pod) -> str:
    if pod.group_spec is not None:
        return pod.group_spec.queue
    return pod.queue or DEFAULT_QUEUE
