"""Scenario parameters of the KAI-style scheduler (SchedulingShard + Queues)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpuscale.cluster.groups import DEFAULT_QUEUE, Queue


class QueueParams(BaseModel):
    """A KAI Queue's GPU resources (`spec.resources.gpu`), layer2-scheduling.md 2.2."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    parent: str | None = Field(None, description="parentQueue; None = top level.")
    priority: int = Field(100, description="Queue priority; KAI DefaultQueuePriority is 100.")
    quota_gpus: float = Field(0.0, ge=-1, description="Guaranteed GPUs; -1 unlimited, 0 none "
                              "guaranteed (the default queues ship with 0).")
    over_quota_weight: float = Field(1.0, ge=0, description="Share of leftover GPUs among "
                                     "queues of equal priority (default 1).")
    limit_gpus: float = Field(-1.0, ge=-1, description="Hard cap on allocated GPUs; -1 none. "
                              "Note KAI treats an unset/0 limit as a cap of 0.")

    def to_queue(self) -> Queue:
        return Queue(self.name, self.parent, self.priority, self.quota_gpus,
                     self.over_quota_weight, self.limit_gpus)


DEFAULT_QUEUES = (QueueParams(name="default-parent-queue"),
                  QueueParams(name=DEFAULT_QUEUE, parent="default-parent-queue"))


class KaiParams(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["kai"] = "kai"
    placement_strategy: Literal["binpack", "spread"] = Field(
        "binpack", description="SchedulingShard placementStrategy.gpu; binpack is KAI's default.")
    schedule_period_s: float = Field(1.0, gt=0, description="--schedule-period, s (default 1).")
    queues: tuple[QueueParams, ...] = Field(
        DEFAULT_QUEUES, description="Queue tree; default = KAI's fresh-install queues.")
    topology_levels: tuple[str, ...] = Field(
        (), description="Topology CRD levels: node-label keys, coarse to fine "
        "(e.g. zone, block, kubernetes.io/hostname).")
    consolidation: bool = Field(True, description="Run consolidation (off by itself under "
                                "spread, as in KAI).")
    max_consolidation_preemptees: int = Field(16, ge=0, description="--max-consolidation-"
                                              "preemptees: most pods one consolidation moves.")
    reclaim: bool = Field(True, description="Run the reclaim action (cross-queue).")
    preempt: bool = Field(True, description="Run the preempt action (inside a queue).")
    stale_gang_eviction: bool = Field(True, description="Run stalegangeviction.")

    @model_validator(mode="after")
    def _check_tree(self) -> KaiParams:
        names = [q.name for q in self.queues]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate queue names in {names}")
        for q in self.queues:
            if q.parent is not None and q.parent not in names:
                raise ValueError(f"queue {q.name!r}: parent {q.parent!r} is not defined")
        return self
