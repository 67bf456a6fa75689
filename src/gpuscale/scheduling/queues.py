"""Hierarchical queues and KAI's fair-share division (GPUs only).

Per level of the hierarchy (layer2-scheduling.md 2.6; KAI docs/fairness/README.md):
1. each queue gets min(quota, requested);
2. what is left goes to the highest queue `priority` first, and inside one priority it is
   split by `overQuotaWeight`, capped by each queue's remaining request; queues that are
   satisfied drop out and the rest is split again (water filling).
A parent's fair share is then divided among its children the same way. `requested` is capped
by `limit` (a queue can never be given more than it may use). quota -1 = unlimited.
"""

from __future__ import annotations

from collections import defaultdict

from gpuscale.cluster.groups import Queue

EPS = 1e-9


def _cap(queue: Queue, requested: float) -> float:
    return requested if queue.limit_gpus < 0 else min(requested, queue.limit_gpus)


def divide(amount: float, queues: list[Queue], requested: dict[str, float]) -> dict[str, float]:
    """Split `amount` GPUs among sibling queues; returns name -> fair share."""
    share = {q.name: 0.0 for q in queues}
    want = {q.name: _cap(q, requested.get(q.name, 0.0)) for q in queues}
    left = amount
    for q in queues:  # step 1: quota, priority irrelevant
        quota = want[q.name] if q.quota_gpus < 0 else min(q.quota_gpus, want[q.name])
        give = min(quota, left)
        share[q.name] += give
        left -= give
    for priority in sorted({q.priority for q in queues}, reverse=True):  # step 2
        bucket = [q for q in queues if q.priority == priority]
        while left > EPS:
            hungry = [q for q in bucket if want[q.name] - share[q.name] > EPS
                      and q.over_quota_weight > 0]
            if not hungry:
                break
            total_w = sum(q.over_quota_weight for q in hungry)
            given = 0.0
            for q in hungry:
                # Weight fraction first: left * w / total underflows for tiny weights
                # (hypothesis found 0.75 * 5e-324 / 5e-324 == 1.0 > 0.75).
                give = min(left * (q.over_quota_weight / total_w), want[q.name] - share[q.name])
                share[q.name] += give
                given += give
            left -= given
            if given <= EPS:
                break
    return share


def fair_shares(queues: dict[str, Queue], leaf_requested: dict[str, float],
                total_gpus: float) -> dict[str, float]:
    """Fair share of every queue (parents and leaves) for `total_gpus` of capacity.

    `leaf_requested`: GPUs each leaf queue uses or asks for (allocated + pending).
    """
    children: dict[str | None, list[Queue]] = defaultdict(list)
    for q in queues.values():
        children[q.parent].append(q)
    requested: dict[str, float] = {}

    def total_request(q: Queue) -> float:
        kids = children.get(q.name, [])
        value = sum(total_request(k) for k in kids) if kids else leaf_requested.get(q.name, 0.0)
        requested[q.name] = value
        return value

    for top in children[None]:
        total_request(top)
    shares: dict[str, float] = {}

    def assign(parent: str | None, amount: float) -> None:
        kids = children.get(parent, [])
        if not kids:
            return
        for name, value in divide(amount, kids, requested).items():
            shares[name] = value
            assign(name, value)

    assign(None, total_gpus)
    return shares


def ancestors(queues: dict[str, Queue], name: str | None) -> list[Queue]:
    """The queue itself and its parents up to the top level."""
    out = []
    while name is not None and name in queues:
        out.append(queues[name])
        name = queues[name].parent
    return out
