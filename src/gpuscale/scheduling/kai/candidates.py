"""The gangs KAI's moving and evicting actions draw their victims from, listed once a cycle.

Consolidation, reclaim and preemption each start from every gang of the cluster: the complete
preemptible ones (consolidation, smallest first) or the running preemptible ones (reclaim,
preemption). The lists are the same for every failed job of a cycle until one action succeeds
(a bind or an eviction changes which gangs are bound), so they are built on first use and
dropped by `changed()`. On the whole openb list (~6,800 gangs, ~1,400 jobs failing a cycle)
building them per job was most of `gpuscale schedule`'s time.
"""

from __future__ import annotations

import bisect

from gpuscale.scheduling.gangs import Gang


class Candidates:
    def __init__(self, gangs: dict[str, Gang]) -> None:
        self.gangs = gangs
        self._running: list[Gang] | None = None
        self._movable: list[Gang] | None = None
        self._by_queue: dict[str, tuple[list[int], list[Gang]]] | None = None

    def changed(self) -> None:
        """An action bound or evicted pods: the lists are rebuilt on next use."""
        self._running = self._movable = self._by_queue = None

    def preemptible_below(self, queue: str, priority: int) -> list[Gang]:
        """Running preemptible gangs of `queue` with a priority below `priority`, lowest
        priority first, then newest, then by name (preemption's victim order)."""
        if self._by_queue is None:
            grouped: dict[str, list[Gang]] = {}
            for g in self.running():
                grouped.setdefault(g.spec.queue, []).append(g)
            self._by_queue = {}
            for q, gangs in grouped.items():
                gangs.sort(key=lambda g: (g.spec.priority, -g.created_s, g.name))
                self._by_queue[q] = ([g.spec.priority for g in gangs], gangs)
        priorities, gangs = self._by_queue.get(queue, ([], []))
        return gangs[:bisect.bisect_left(priorities, priority)]

    def running(self) -> list[Gang]:
        """Gangs with a bound pod whose PodGroup is preemptible, in gang order."""
        if self._running is None:
            self._running = [g for g in self.gangs.values()
                             if g.spec.is_preemptible and g.num_bound > 0]
        return self._running

    def movable(self) -> list[Gang]:
        """Complete preemptible gangs with no pending pod, by (bound GPUs, name)."""
        if self._movable is None:
            keyed = []
            for g in self.gangs.values():
                if not g.spec.is_preemptible:
                    continue
                bound = g.bound
                if len(bound) < g.min_member or len(bound) != len(g.pods):
                    continue  # incomplete, or has a pending pod
                keyed.append(((sum(p.gpus for p in bound), g.name), g))
            keyed.sort(key=lambda kg: kg[0])
            self._movable = [g for _, g in keyed]
        return self._movable
