"""Per-cycle queue accounting: allocated GPUs up the tree, fair shares, limit checks."""

from __future__ import annotations

from collections import Counter, defaultdict

from gpuscale.cluster.groups import Queue
from gpuscale.scheduling.gangs import Gang
from gpuscale.scheduling.queues import ancestors, fair_shares


class QueueBook:
    def __init__(self, queues: dict[str, Queue], gangs: dict[str, Gang], total_gpus: float):
        self.queues = dict(queues)
        for gang in gangs.values():  # a job naming an unknown queue gets a default top-level one
            self.queues.setdefault(gang.spec.queue, Queue(gang.spec.queue))
        # Each leaf's chain up the tree, found once: the queues are fixed from here on, and
        # the cycle asks for a chain at every gang it books or checks.
        self._chains: dict[str, tuple[Queue, ...]] = {}
        self.alloc: dict[str, float] = defaultdict(float)
        self.alloc_np: dict[str, float] = defaultdict(float)  # non-preemptible, within quota
        requested: Counter = Counter()
        for gang in gangs.values():
            pods = gang.pods
            if len(pods) == 1:  # a one-pod gang (a serving replica): the same sums, unrolled
                gpus = pods[0].gpus
                self.add(gang, gpus if pods[0].node_name is not None else 0)
                requested[gang.spec.queue] += gpus
                continue
            bound = sum(p.gpus for p in gang.bound)
            self.add(gang, bound)
            requested[gang.spec.queue] += sum(p.gpus for p in pods)
        self.fair = fair_shares(self.queues, dict(requested), total_gpus)

    def chain(self, leaf: str) -> tuple[Queue, ...]:
        chain = self._chains.get(leaf)
        if chain is None:
            chain = self._chains[leaf] = tuple(ancestors(self.queues, leaf))
        return chain

    def add(self, gang: Gang, gpus: float) -> None:
        for q in self.chain(gang.spec.queue):
            self.alloc[q.name] += gpus
            if not gang.spec.is_preemptible:
                self.alloc_np[q.name] += gpus

    def allows(self, gang: Gang, gpus: float) -> bool:
        """Queue `limit` on every level; non-preemptible work only inside `quota` (2.2, 2.3)."""
        for q in self.chain(gang.spec.queue):
            if q.limit_gpus >= 0 and self.alloc[q.name] + gpus > q.limit_gpus + 1e-9:
                return False
            if (not gang.spec.is_preemptible and q.quota_gpus >= 0
                    and self.alloc_np[q.name] + gpus > q.quota_gpus + 1e-9):
                return False
        return True

    def order_key(self, leaf: str, gpus: float) -> tuple:
        """Queue order for allocation (KAI queue_order.go, simplified to GPUs): below fair share
        first, then within quota with the job, then higher priority, then lower saturation."""
        q = self.queues[leaf]
        alloc, fair = self.alloc[leaf], self.fair.get(leaf, 0.0)
        within_quota = q.quota_gpus < 0 or alloc + gpus <= q.quota_gpus
        saturation = alloc / fair if fair > 0 else (0.0 if alloc == 0 else float("inf"))
        return (alloc >= fair, not within_quota, -q.priority, saturation, leaf)

    def may_reclaim(self, leaf: str, gpus: float) -> bool:
        """A queue reclaims only while, with the job, it stays within its fair share
        (MaintainFairShare) or its quota (GuaranteeDeservedQuota) (2.6)."""
        q = self.queues[leaf]
        after = self.alloc[leaf] + gpus
        quota = float("inf") if q.quota_gpus < 0 else q.quota_gpus
        return after <= max(self.fair.get(leaf, 0.0), quota) + 1e-9

    def over_fair_share(self, leaf: str) -> bool:
        """Reclaim victims come only from queues above their fair share; in-quota usage of a
        queue at or below its fair share is never reclaimed (2.6)."""
        return self.alloc[leaf] > self.fair.get(leaf, 0.0) + 1e-9
