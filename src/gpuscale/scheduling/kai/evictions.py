"""KAI's evicting actions: reclaim across queues, preempt inside one, stale-gang eviction.

Victims are whole running gangs (evicting part of a gang would leave it below minMember).
Each victim is removed from the snapshot in turn and the preemptor retried; if it never fits,
the removals are undone and nothing is evicted (layer2-scheduling.md 2.10).
"""

from __future__ import annotations

from gpuscale.scheduling.gangs import Gang
from gpuscale.scheduling.kai.book import QueueBook
from gpuscale.scheduling.kai.candidates import Candidates
from gpuscale.scheduling.snapshot import Snapshot


def _try_with_victims(sched, gang: Gang, victims: list[Gang], snap: Snapshot, book: QueueBook,
                      now_s: float, cause: str, counter: str, allow) -> bool:
    removed: list[Gang] = []
    for victim in victims:
        if not allow(victim):
            continue
        for pod in victim.bound:
            assert pod.node_name is not None  # `bound` pods have a node
            snap.forget(pod, snap.by_name[pod.node_name])
        book.add(victim, -sum(p.gpus for p in victim.bound))
        removed.append(victim)
        placement = sched.try_place(gang, snap, book)
        if placement is not None:
            for v in removed:
                sched.evict(v.bound, cause, counter)
            sched.commit(gang, placement, book, now_s)
            return True
    for victim in removed:  # nothing evicted: restore the snapshot and the book
        for pod in victim.bound:
            assert pod.node_name is not None
            snap.assume(pod, snap.by_name[pod.node_name])
        book.add(victim, sum(p.gpus for p in victim.bound))
    return False


def reclaim(sched, gang: Gang, candidates: Candidates, snap: Snapshot, book: QueueBook,
            now_s: float) -> bool:
    """Take GPUs from other queues that are above their fair share, for a queue that stays
    within its fair share or quota with this job (2.5, 2.6). Most saturated queue first,
    then lowest priority, newest first."""
    leaf = gang.spec.queue
    need = sum(p.gpus for p in gang.pending)
    if not book.may_reclaim(leaf, need):
        return False
    victims = [g for g in candidates.running() if g.spec.queue != leaf]

    def saturation(g: Gang) -> float:
        fair = book.fair.get(g.spec.queue, 0.0)
        return book.alloc[g.spec.queue] / fair if fair > 0 else float("inf")

    victims.sort(key=lambda g: (-saturation(g), g.spec.priority, -g.created_s, g.name))
    return _try_with_victims(sched, gang, victims, snap, book, now_s, "reclaim", "reclaims",
                             lambda v: book.over_fair_share(v.spec.queue))


def preempt(sched, gang: Gang, candidates: Candidates, snap: Snapshot, book: QueueBook,
            now_s: float) -> bool:
    """Inside one queue: evict preemptible jobs of strictly lower priority (2.5)."""
    victims = candidates.preemptible_below(gang.spec.queue, gang.spec.priority)
    return _try_with_victims(sched, gang, victims, snap, book, now_s, "preemption",
                             "preemptions", lambda v: True)


def stale_gangs(sched, gangs: dict[str, Gang], now_s: float) -> None:
    """Evict gangs whose bound pods fell below minMember for longer than the staleness grace
    period (default 60 s; negative = never) (2.5)."""
    for name, gang in gangs.items():
        if 0 < gang.num_bound < gang.min_member:
            since = sched.stale_since.setdefault(name, now_s)
            grace = gang.spec.staleness_grace_s
            sched.stale_deadline[name] = since + grace if grace >= 0 else float("inf")
            if now_s >= sched.stale_deadline[name]:
                sched.evict(gang.bound, "stale-gang", "stale_gang_evictions")
                sched.stale_since.pop(name, None)
                sched.stale_deadline.pop(name, None)
        else:
            sched.stale_since.pop(name, None)
            sched.stale_deadline.pop(name, None)
    for name in [n for n in sched.stale_since if n not in gangs]:
        del sched.stale_since[name]
        sched.stale_deadline.pop(name, None)
