"""KAI's consolidation action: move running pods to make room for a pending job.

Defragmentation without loss of capacity: victims are whole running preemptible gangs, taken
smallest first up to `max_consolidation_preemptees` pods; after each one the pending job is
retried, and the move commits only if the job fits *and* every moved gang finds a new place
(layer2-scheduling.md 2.5). A moved pod is evicted and bound again at once (its restart is
what the job controller sees); the queue book does not change, since allocation is unchanged.
"""

from __future__ import annotations

from gpuscale.scheduling.gangs import Gang
from gpuscale.scheduling.kai.book import QueueBook
from gpuscale.scheduling.kai.candidates import Candidates
from gpuscale.scheduling.snapshot import Snapshot


def consolidate(sched, gang: Gang, candidates: Candidates, snap: Snapshot, book: QueueBook,
                now_s: float) -> bool:
    # Moving pods never changes how many GPUs are free in all: if fewer are free than the
    # job's required pods ask for, no sequence of moves can make it fit (a pending replica pod
    # waiting for a new node, every cycle). Same answer as the full search, without it.
    need = max(0, gang.min_member - gang.num_bound)
    need_gpus = sum(p.gpus for p in sorted(gang.pending, key=lambda p: p.name)[:need])
    if need_gpus > snap.free_gpus():
        return False
    budget = sched.params.max_consolidation_preemptees
    removed: list[tuple[Gang, list]] = []  # (gang, [(pod, original node)])
    moved = 0
    for victim in candidates.movable():
        if victim is gang:
            continue
        pods = victim.bound
        if moved + len(pods) > budget:
            break
        original = []
        for p in pods:
            assert p.node_name is not None  # a complete gang's pods are all bound
            original.append((p, snap.by_name[p.node_name]))
        for pod, nf in original:
            snap.forget(pod, nf)
        removed.append((victim, original))
        moved += len(pods)
        placement = sched.try_place(gang, snap, book)
        if placement is None:
            continue
        homes = _rehome(sched, removed, snap)
        if homes is not None:
            _commit(sched, gang, placement, homes, book, now_s)
            return True
        for pod, nf in placement:
            snap.forget(pod, nf)
    for _victim, original in removed:  # nothing moved: restore the snapshot
        for pod, nf in original:
            snap.assume(pod, nf)
    return False


def _rehome(sched, removed, snap: Snapshot):
    """A place for every removed gang, all-or-nothing; a pod may land where it was."""
    homes: list[tuple[Gang, list]] = []
    for victim, original in removed:
        placement = sched.place_pods(victim, [p for p, _ in original], [], snap, None)
        if placement is None:
            for _victim, done in homes:
                for pod, nf in done:
                    snap.forget(pod, nf)
            return None
        homes.append((victim, placement))
    return homes


def _commit(sched, gang: Gang, placement, homes, book: QueueBook, now_s: float) -> None:
    for _victim, moves in homes:
        moving = [(pod, nf) for pod, nf in moves if pod.node_name != nf.name]
        sched.evict([p for p, _ in moving], "consolidation", "consolidations")
        for pod, nf in moving:
            sched.bind(pod, nf.node, now_s)
    sched.commit(gang, placement, book, now_s)
