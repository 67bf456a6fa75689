"""One KAI scheduling cycle: allocate, reclaim, preempt, stale-gang eviction.

Each job (PodGroup) is tried inside a transaction on the cycle's snapshot: pods are assumed
one by one and the whole attempt is rolled back unless minMember pods found a place, so a gang
never holds GPUs it cannot use (layer2-scheduling.md 2.10). Evictions are tried first on the
snapshot and committed only if the preemptor then fits; consolidation moves running pods
only if every one of them finds a new place.

KAI's cycle runs every `schedule_period_s` (1 s) while anything is pending, but a cycle on an
unchanged cluster makes the decisions of the one before: pods that could not fit still cannot.
So when a cycle ends with pods waiting, the next one runs only when something changed
(`ClusterState.stamp` advanced: pods, nodes, taints, nominations) or a timer expires (a gang's
`preemption_delay_s`, a stale-gang grace), at the first point of the 1 s grid at or after that
moment, where the periodic cycle would have seen it. Decisions are those of a cycle every
second; only `unschedulable_reports`, which counts reports per cycle run, is smaller.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial

from gpuscale.cluster.objects import Pod
from gpuscale.cluster.state import ClusterState
from gpuscale.core import RandomStreams, Simulation
from gpuscale.scheduling.base import UnschedulableCallback
from gpuscale.scheduling.driver import CycleScheduler
from gpuscale.scheduling.gangs import Gang, form_gangs
from gpuscale.scheduling.kai.book import QueueBook
from gpuscale.scheduling.kai.candidates import Candidates
from gpuscale.scheduling.kai.consolidation import consolidate
from gpuscale.scheduling.kai.evictions import preempt, reclaim, stale_gangs
from gpuscale.scheduling.kai.params import KaiParams
from gpuscale.scheduling.snapshot import NodeFree, Snapshot, passes_filters
from gpuscale.scheduling.topology import placement_attempts

Placement = list[tuple[Pod, NodeFree]]


class KaiScheduler(CycleScheduler):
    kind = "kai"

    def __init__(self, params: KaiParams) -> None:
        super().__init__(params.topology_levels)
        self.params = params
        self.queues = {q.name: q.to_queue() for q in params.queues}
        self.stale_since: dict[str, float] = {}
        self.stale_deadline: dict[str, float] = {}  # gang -> when stalegangeviction may act
        self.binpack = params.placement_strategy == "binpack"
        self._idle_report: list = []
        self._deadline_s = 0.0  # next preemption-delay or staleness expiry
        self._idle_since_s: float | None = None  # last cycle, when it ended with pods waiting
        self._wake_requested = False  # a change since then has asked for a cycle

    def attach(self, sim: Simulation, cluster: ClusterState, streams: RandomStreams,
               on_unschedulable: UnschedulableCallback) -> None:
        super().attach(sim, cluster, streams, on_unschedulable)
        cluster.on_changed.append(self._cluster_changed)

    # -- waking on a change ------------------------------------------------------------------
    def _grid_at_or_after(self, since_s: float, time_s: float) -> float:
        """The first periodic cycle after the one at `since_s`, at or after `time_s`. Built by
        adding the period as the every-second cycle did, so the instants are the same floats."""
        period = self.params.schedule_period_s
        at_s = since_s + period
        while at_s < time_s:
            at_s += period
        return at_s

    def _cluster_changed(self) -> None:
        if self._idle_since_s is None or self._wake_requested:
            return
        self._wake_requested = True
        self.request_cycle(self._grid_at_or_after(self._idle_since_s, self.sim.now_s))

    # -- cycle -------------------------------------------------------------------------------
    def cycle(self, now_s: float, quiet: bool) -> float | None:
        idle_since_s, self._idle_since_s, self._wake_requested = self._idle_since_s, None, False
        if quiet and now_s < self._deadline_s and idle_since_s is not None:
            # same snapshot as last cycle and no timer expired: same decisions, same reports
            self.report_unschedulable(self._idle_report, now_s)
            return self._wait(now_s)
        snap = Snapshot(self.cluster)
        gangs = form_gangs(self.cluster.pods.values())
        book = QueueBook(self.queues, gangs, sum(nf.node.num_gpus for nf in snap.nodes))
        self.metrics.set_fair_shares(book.fair)
        failed, blocked_by_quota = self._allocate(gangs, snap, book, now_s)
        still_failed = []
        victims = Candidates(gangs)
        for gang in failed:
            if self.params.consolidation and self.binpack and consolidate(
                    self, gang, victims, snap, book, now_s):
                victims.changed()
                continue
            if self._may_evict(gang, now_s) and (
                    (self.params.reclaim and reclaim(self, gang, victims, snap, book, now_s))
                    or (self.params.preempt and preempt(self, gang, victims, snap, book, now_s))):
                victims.changed()
                continue
            still_failed.append(gang)
        if self.params.stale_gang_eviction:
            stale_gangs(self, gangs, now_s)
        self._idle_report = [p for g in still_failed for p in g.pending]
        self.report_unschedulable(self._idle_report, now_s)
        self._deadline_s = self._next_deadline(still_failed, now_s)
        waiting = still_failed or blocked_by_quota or self.stale_since
        return self._wait(now_s) if waiting else None

    def _wait(self, since_s: float) -> float:
        """Pods wait: the next cycle is due at the next timer, or earlier on a change."""
        self._idle_since_s = since_s
        if not math.isfinite(self._deadline_s):
            return math.inf
        return self._grid_at_or_after(since_s, self._deadline_s)

    def _next_deadline(self, failed: list[Gang], now_s: float) -> float:
        times = [self._pending_since(g) + g.spec.preemption_delay_s for g in failed]
        times += list(self.stale_deadline.values())
        return min([t for t in times if t > now_s], default=float("inf"))

    def _pending_since(self, gang: Gang) -> float:
        return min(self.metrics.pending_since.get(p.name, p.created_s) for p in gang.pending)

    def _may_evict(self, gang: Gang, now_s: float) -> bool:
        """preemptionDelay: a job waits this long before evicting anyone, so a node
        autoscaler can add capacity first (2.10)."""
        return now_s - self._pending_since(gang) >= gang.spec.preemption_delay_s

    # -- allocate ----------------------------------------------------------------------------
    def _allocate(self, gangs: dict[str, Gang], snap: Snapshot, book: QueueBook,
                  now_s: float) -> tuple[list[Gang], list[Gang]]:
        jobs = [g for g in gangs.values() if g.pending and len(g.pods) >= g.min_member]
        by_queue: dict[str, list[Gang]] = {}
        for gang in sorted(jobs, key=lambda g: (-g.spec.priority, g.created_s, g.name)):
            by_queue.setdefault(gang.spec.queue, []).append(gang)
        failed, blocked = [], []
        while by_queue:
            # One queue with work (every serving run without queues): it is the one `min`
            # would pick, without working out its order key (a pure read) per gang.
            leaf = next(iter(by_queue)) if len(by_queue) == 1 else min(
                by_queue, key=lambda q: book.order_key(q, _need_gpus(by_queue[q][0])))
            gang = by_queue[leaf].pop(0)
            if not by_queue[leaf]:
                del by_queue[leaf]
            log = self.sim.decisions
            if not book.allows(gang, _need_gpus(gang)):
                blocked.append(gang)  # over limit or non-preemptible over quota: nodes won't help
                if log is not None:
                    self._log(log, gang, "defer", "queue limit or quota", now_s)
                continue
            placement = self.try_place(gang, snap, book)
            if placement is None:
                failed.append(gang)
                if log is not None:
                    self._log(log, gang, "defer", "does not fit the free GPUs", now_s)
                continue
            self.commit(gang, placement, book, now_s)
            if log is not None:
                self._log(log, gang, "allocate", "fits", now_s,
                          nodes=sorted({nf.node.name for _, nf in placement}))
        return failed, blocked

    def _log(self, log, gang: Gang, decision: str, reason: str, now_s: float,
             **extra) -> None:
        log.record(now_s, "scheduling", "kai", f"{decision} {gang.name}", reason,
                   queue=gang.spec.queue, priority=gang.spec.priority,
                   min_member=gang.min_member, bound=gang.num_bound,
                   gpus_needed=_need_gpus(gang), **extra)

    def try_place(self, gang: Gang, snap: Snapshot, book: QueueBook) -> Placement | None:
        """All-or-nothing: minMember pods (counting those already bound) or nothing; pods
        above minMember are elastic and placed if they fit and the queue allows."""
        pods = gang.pods
        if len(pods) == 1 and pods[0].node_name is None:
            # A one-pod gang, pending: minMember (at least 1) requires it; what the sort
            # and split below make of it.
            return self.place_pods(gang, pods[:], [], snap, book)
        pending = sorted(gang.pending, key=lambda p: p.name)
        need = max(0, gang.min_member - gang.num_bound)
        return self.place_pods(gang, pending[:need], pending[need:], snap, book)

    def place_pods(self, gang: Gang, required: list[Pod], optional: list[Pod], snap: Snapshot,
                   book: QueueBook | None) -> Placement | None:
        """One Statement: assume `required` on the snapshot or roll all of them back."""
        need_gpus = sum(p.gpus for p in required)
        topology = gang.spec.topology
        # No topology constraint: one attempt over every node, rank 0 everywhere, picked on
        # the snapshot's arrays (same node as `_pick`, without a Python call per node).
        attempts: Sequence[tuple[Sequence[NodeFree] | None, dict[str, int]]]
        attempts = ([(None, {})] if not (topology.required_level or topology.preferred_level)
                    else placement_attempts(snap.nodes, topology, self.topology_levels,
                                            need_gpus))
        for nodes, rank in attempts:
            placed: Placement = []
            pick: Callable[[Pod], NodeFree | None]
            if nodes is None:
                pick = partial(snap.best_fit, pack=self.binpack)
            else:
                pick = partial(self._pick, nodes=nodes, rank=rank)
            for pod in required:
                nf = pick(pod)
                if nf is None:
                    break
                snap.assume(pod, nf)
                placed.append((pod, nf))
            else:
                extra = need_gpus
                for pod in optional:
                    nf = pick(pod)
                    if nf is not None and book is not None and book.allows(gang, extra + pod.gpus):
                        snap.assume(pod, nf)
                        placed.append((pod, nf))
                        extra += pod.gpus
                return placed
            for pod, nf in placed:  # roll the statement back
                snap.forget(pod, nf)
        return None

    def _pick(self, pod: Pod, nodes: Sequence[NodeFree], rank: dict[str, int]) -> NodeFree | None:
        """gpupack: fewest GPUs left after placing; gpuspread: most (2.7). Preferred-topology
        rank first; node order breaks ties, so runs are deterministic."""
        best, best_key = None, None
        sign = 1 if self.binpack else -1
        for i, nf in enumerate(nodes):
            if not passes_filters(pod, nf):
                continue
            left = nf.gpus - pod.gpus if pod.gpus else nf.cpu_milli - pod.cpu_milli
            key = (rank.get(nf.name, 0), sign * left, i)
            if best_key is None or key < best_key:
                best, best_key = nf, key
        return best

    def commit(self, gang: Gang, placement: Placement, book: QueueBook, now_s: float) -> None:
        for pod, nf in placement:
            self.bind(pod, nf.node, now_s)
        book.add(gang, sum(p.gpus for p, _ in placement))
        self.stale_since.pop(gang.name, None)
        self.stale_deadline.pop(gang.name, None)


def _need_gpus(gang: Gang) -> float:
    pods = gang.pods
    if len(pods) == 1:
        # A one-pod gang (a serving replica): its pod's GPUs while it is pending (minMember
        # is at least 1), none once bound; the general sum below gives the same int.
        pod = pods[0]
        return pod.gpus if pod.node_name is None else 0
    need = max(0, gang.min_member - gang.num_bound)
    return sum(p.gpus for p in sorted(gang.pending, key=lambda p: p.name)[:need])
