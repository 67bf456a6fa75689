"""Layer 2: which pod goes on which GPUs, and whether a group starts at all.

Belongs here: pod schedulers (the default kube-scheduler per pod, a KAI-style gang scheduler
with queues and topology), their metrics, and the placement rules the Alibaba replay shares.
Must not launch or remove nodes (layer 1) or change replica counts (layer 3): pods that do not
fit are reported through `on_unschedulable`.

Registry: `REGISTRY` (a `gpuscale.registry.Registry` of `PolicySpec`) maps the `kind` in
scenario YAML to its params model and constructor, as STYLE.md section 2; `SchedulerSpec`, the
pydantic union discriminated on `kind`, is derived from it.
"""

from __future__ import annotations

from pydantic import BaseModel

from gpuscale.registry import PolicySpec, Registry, params_union
from gpuscale.scheduling.base import PodScheduler, UnschedulableCallback, ignore_unschedulable
from gpuscale.scheduling.kai import KaiParams, KaiScheduler, QueueParams
from gpuscale.scheduling.kube_scheduler import KubeScheduler, KubeSchedulerParams

REGISTRY: Registry[PolicySpec] = Registry("scheduler kind")


def register(spec: PolicySpec) -> None:
    REGISTRY.register(spec.name, spec)


register(PolicySpec("kube-scheduler", KubeSchedulerParams, KubeScheduler,
                    "Default kube-scheduler: per pod, LeastAllocated on cpu/memory, preemption."))
register(PolicySpec("kai", KaiParams, KaiScheduler,
                    "KAI-style: gangs all-or-nothing, hierarchical queues, reclaim, topology."))

SchedulerSpec = params_union(REGISTRY)


def build_scheduler(spec: BaseModel) -> PodScheduler:
    """A fresh scheduler for one run from its params (a member of `SchedulerSpec`)."""
    return REGISTRY.require(getattr(spec, "kind", None), field="scheduler.kind").build(spec)


__all__ = ["REGISTRY", "KaiParams", "KubeSchedulerParams", "PodScheduler", "QueueParams",
           "SchedulerSpec", "UnschedulableCallback", "build_scheduler", "ignore_unschedulable"]
