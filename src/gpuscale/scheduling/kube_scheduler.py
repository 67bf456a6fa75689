"""The default kube-scheduler, per pod: sort, filter, score, bind, or preempt.

PrioritySort then FIFO; filters NodeResourcesFit / TaintToleration / NodeAffinity; score
NodeResourcesFit with LeastAllocated (default) or MostAllocated on cpu and memory only, so GPUs
are not scored (layer2-scheduling.md 1.2); ties at random. DefaultPreemption when no node fits.
A multi-pod job is just N pods: some bind while the rest wait (1.4), which is the point.
Unschedulable pods back off 1 s doubling to 10 s (1.1) and are requeued when a node turns Ready.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from gpuscale.cluster.objects import Node, Pod
from gpuscale.scheduling.driver import CycleScheduler
from gpuscale.scheduling.placement import SCORERS, argmax_random_tie
from gpuscale.scheduling.snapshot import NodeFree, Snapshot, passes_filters, passes_static_filters


class KubeSchedulerParams(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["kube-scheduler"] = "kube-scheduler"
    scoring_strategy: Literal["LeastAllocated", "MostAllocated"] = Field(
        "LeastAllocated", description="NodeResourcesFit scoringStrategy.type over cpu and memory; "
        "LeastAllocated is the Kubernetes default (layer2-scheduling.md 1.2).")
    pod_initial_backoff_s: float = Field(1.0, gt=0, description="podInitialBackoffSeconds, s "
                                         "(kube-scheduler default 1).")
    pod_max_backoff_s: float = Field(
        10.0, gt=0, description="podMaxBackoffSeconds, s (default 10)."
    )
    preemption: bool = Field(True, description="DefaultPreemption plugin enabled (default on).")
    topology_levels: tuple[str, ...] = Field(
        (), description="Node labels, coarse to fine, used only to count placements that "
        "cross a boundary (kube-scheduler itself ignores them).")


class KubeScheduler(CycleScheduler):
    kind = "kube-scheduler"

    def __init__(self, params: KubeSchedulerParams) -> None:
        super().__init__(params.topology_levels)
        self.params = params
        self.scorer = SCORERS[params.scoring_strategy]
        self.attempts: dict[str, int] = {}
        self.backoff_until: dict[str, float] = {}

    def node_added(self, node: Node) -> None:
        self.backoff_until.clear()  # NodeAdd moves unschedulable pods to the active queue

    def cycle(self, now_s: float, quiet: bool) -> float | None:
        snap = Snapshot(self.cluster)
        queue = sorted(
            self.cluster.pending_pods(), key=lambda p: (-p.priority, p.created_s, p.name)
        )
        failed: list[Pod] = []
        next_s = np.inf
        for pod in queue:
            until = self.backoff_until.get(pod.name, 0.0)
            if until > now_s:
                next_s = min(next_s, until)
                continue
            if self._schedule_one(pod, snap, now_s):
                self.attempts.pop(pod.name, None)
                self.backoff_until.pop(pod.name, None)
                continue
            n = self.attempts[pod.name] = self.attempts.get(pod.name, 0) + 1
            delay = min(
                self.params.pod_initial_backoff_s * 2 ** (n - 1), self.params.pod_max_backoff_s
            )
            self.backoff_until[pod.name] = now_s + delay
            next_s = min(next_s, now_s + delay)
            failed.append(pod)
        self.report_unschedulable(failed, now_s)
        return next_s if failed or next_s < np.inf else None

    def _schedule_one(self, pod: Pod, snap: Snapshot, now_s: float) -> bool:
        # Filter and score on the snapshot's arrays: one numpy pass per pod, not a Python
        # call per node (same nodes, same order, same scores as per-node filtering).
        feasible = snap.feasible_indices(pod)
        if not len(feasible):
            if not (self.params.preemption and pod.preemption_policy != "Never"):
                return False
            target = self._preempt(pod, snap)
            if target is None:
                return False
            feasible = np.array([target.index])
        a = snap.arrays()
        scores = self.scorer(pod.cpu_milli, pod.memory_mib, a[1, feasible], a[2, feasible],
                             a[3, feasible], a[4, feasible])
        nf = snap.nodes[int(feasible[argmax_random_tie(np.asarray(scores, float), self.rng)])]
        snap.assume(pod, nf)
        self.bind(pod, nf.node, now_s)
        return True

    def _preempt(self, pod: Pod, snap: Snapshot) -> NodeFree | None:
        """DefaultPreemption: on each node, remove lower-priority pods (lowest first), then
        reprieve as many as still fit (highest first); pick the node whose victims have the
        lowest top priority, then lowest priority sum, then fewest (layer2-scheduling.md 1.3).
        Victims are evicted now; graceful termination time is not modelled."""
        if not snap.has_bound_priority_below(pod.priority):
            return None  # no node has a victim: skip the per-node scan
        best_key, best = None, None
        for nf in snap.nodes:
            if not passes_static_filters(pod, nf):
                continue
            victims = self._victims_on(pod, nf, snap)
            if victims is None:
                continue
            key = (max(v.priority for v in victims), sum(v.priority for v in victims), len(victims))
            if best_key is None or key < best_key:
                best_key, best = key, (nf, victims)
        if best is None:
            return None
        nf, victims = best
        for victim in victims:
            snap.forget(victim, nf)
        self.evict(victims, "preemption", "preemptions")
        return nf

    def _victims_on(self, pod: Pod, nf: NodeFree, snap: Snapshot) -> list[Pod] | None:
        lower = [self.cluster.pods[n] for n in nf.node.pod_names
                 if n in self.cluster.pods and self.cluster.pods[n].priority < pod.priority]
        if not lower:
            return None
        for victim in lower:
            snap.forget(victim, nf)
        if not passes_filters(pod, nf):
            for victim in lower:
                snap.assume(victim, nf)
            return None
        victims = []
        for victim in sorted(lower, key=lambda p: (-p.priority, p.name)):  # reprieve
            snap.assume(victim, nf)
            if not passes_filters(pod, nf):
                snap.forget(victim, nf)
                victims.append(victim)
        for victim in victims:
            snap.assume(victim, nf)  # leave the snapshot as it was; caller commits
        return victims or None
