"""PodGroups and Queues: the gang and quota objects KAI-style scheduling reads.

Frozen specs only (what a controller or an admin wrote); the scheduler keeps the mutable
per-cycle state. Field names follow KAI's CRDs (`scheduling.run.ai/v2alpha2` PodGroup,
`scheduling.run.ai/v2` Queue), see ../shared/reference/layer2-scheduling.md 2.2-2.3.
"""

from __future__ import annotations

from dataclasses import dataclass

# KAI built-in PriorityClasses (layer2-scheduling.md 2.3): >= 100 is non-preemptible.
PRIORITY_TRAIN = 50
PRIORITY_BUILD_PREEMPTIBLE = 75
PRIORITY_BUILD = 100
PRIORITY_INFERENCE = 125
NON_PREEMPTIBLE_MIN_PRIORITY = 100

DEFAULT_QUEUE = "default-queue"  # KAI's fresh-install leaf queue (2.2)
# The annotation LeaderWorkerSet puts on a group's pods (kubernetes-sigs/lws, its `size`): the
# pods of one replica spanning nodes, which the default scheduler places as one gang.
LWS_SIZE_ANNOTATION = "leaderworkerset.sigs.k8s.io/size"
DEFAULT_STALENESS_GRACE_S = 60.0  # --default-staleness-grace-period (2.5)


@dataclass(frozen=True)
class TopologyConstraint:
    """`topologyConstraint`: node-label keys of a Topology level, or "" for none.

    required: every pod of the group lands in one domain of that level.
    preferred: try one domain of that level first, fall back to coarser levels (2.4).
    """

    required_level: str = ""
    preferred_level: str = ""


@dataclass(frozen=True)
class PodGroupSpec:
    """A PodGroup as the pod-grouper would create it for a workload.

    `min_member` 0 means "no gang" (each pod alone); the scheduler treats it as 1.
    `preemptible` None derives it from the priority (< 100 preemptible, 2.3).
    """

    name: str
    min_member: int = 1
    queue: str = DEFAULT_QUEUE
    priority: int = PRIORITY_TRAIN
    preemptible: bool | None = None
    topology: TopologyConstraint = TopologyConstraint()
    preemption_delay_s: float = 0.0
    staleness_grace_s: float = DEFAULT_STALENESS_GRACE_S

    @property
    def is_preemptible(self) -> bool:
        if self.preemptible is not None:
            return self.preemptible
        return self.priority < NON_PREEMPTIBLE_MIN_PRIORITY


@dataclass(frozen=True)
class Queue:
    """A KAI Queue, GPU resources only (cpu/memory quotas are not modelled).

    quota: GPUs guaranteed (-1 = unlimited). limit: hard cap (-1 = none; 0 = nothing, as in
    KAI's max_allowed_check). Only leaf queues hold jobs; `parent` None = top level.
    """

    name: str
    parent: str | None = None
    priority: int = 100  # KAI DefaultQueuePriority
    quota_gpus: float = 0.0
    over_quota_weight: float = 1.0
    limit_gpus: float = -1.0
