"""Layer 2: which pod goes on which GPUs, and whether a group starts at all.

Belongs here: pod schedulers (the default kube-scheduler per pod, a KAI-style gang scheduler
with queues and topology), their metrics, and the placement rules the Alibaba replay shares.
Must not launch or remove nodes (layer 1) or change replica counts (layer 3): pods that do not
fit are reported through `on_unschedulable`.

Registry: `kind` in scenario YAML -> params model and constructor, as STYLE.md section 2.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Annotated, Callable, Union

from pydantic import BaseModel, Field

from gpuscale.errors import UserInputError
from gpuscale.scheduling.base import PodScheduler, UnschedulableCallback, ignore_unschedulable
from gpuscale.scheduling.kai import KaiParams, KaiScheduler, QueueParams
from gpuscale.scheduling.kube_scheduler import KubeScheduler, KubeSchedulerParams


@dataclass(frozen=True)
class PolicySpec:
    name: str
    params: type[BaseModel]
    build: Callable[[BaseModel], PodScheduler]
    summary: str


REGISTRY: dict[str, PolicySpec] = {}


def register(spec: PolicySpec) -> None:
    if spec.name in REGISTRY:
        raise ValueError(f"scheduler kind {spec.name!r} registered twice")
    REGISTRY[spec.name] = spec


register(PolicySpec("kube-scheduler", KubeSchedulerParams, KubeScheduler,
                    "Default kube-scheduler: per pod, LeastAllocated on cpu/memory, preemption."))
register(PolicySpec("kai", KaiParams, KaiScheduler,
                    "KAI-style: gangs all-or-nothing, hierarchical queues, reclaim, topology."))

SchedulerSpec = Annotated[Union[KubeSchedulerParams, KaiParams], Field(discriminator="kind")]


def build_scheduler(spec: BaseModel) -> PodScheduler:
    """A fresh scheduler for one run from its params (a member of `SchedulerSpec`)."""
    kind = getattr(spec, "kind", None)
    if kind not in REGISTRY:
        close = difflib.get_close_matches(str(kind), list(REGISTRY), n=2)
        hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(REGISTRY)}"
        raise UserInputError(f"unknown scheduler kind {kind!r}; {hint}")
    return REGISTRY[kind].build(spec)


__all__ = ["REGISTRY", "KaiParams", "KubeSchedulerParams", "PodScheduler", "QueueParams",
           "SchedulerSpec", "UnschedulableCallback", "build_scheduler", "ignore_unschedulable"]
