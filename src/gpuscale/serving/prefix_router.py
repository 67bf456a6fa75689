"""Prefix-aware routing: the replica holding the longest cached prefix of the prompt.

llm-d's inference scheduler scores each endpoint by the share of the prompt's blocks found in
its prefix cache (the "precise prefix cache" scorer reads the engines' KV events) beside load
scorers (queue, KV use); NVIDIA Dynamo's KV router picks the worker with the lowest cost,
`overlap_score_weight x prefill blocks still to compute + active decode blocks`, from the
same kind of per-worker block index. Both send a request where most of its prefix is cached
and let load break the tie. This router does the simplest form of that: most cached leading
blocks first, then fewest outstanding (waiting + running) requests, then readiness order
(list order), so routing is deterministic. It reads each replica's actual cache (as the
KV-event-fed "precise" indexes do), not an approximate copy kept by the router.

Routers are called as `router(replicas)`; this one also offers `pick(replicas, rid)`, which
the fleet calls instead when present, since the choice depends on the request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpuscale.serving.replica import Replica


def _least_loaded(replicas: list[Replica]) -> Replica:
    best = replicas[0]
    best_load = len(best.waiting) + len(best.running)
    for replica in replicas:
        load = len(replica.waiting) + len(replica.running)
        if load < best_load:
            best, best_load = replica, load
    return best


class PrefixAwareRouter:
    """`router: prefix_aware`: longest cached prefix, then least outstanding."""

    def __call__(self, replicas: list[Replica]) -> Replica:
        """Without the request (no hashes to match): least outstanding."""
        return _least_loaded(replicas)

    def pick(self, replicas: list[Replica], rid: int) -> Replica:
        best = replicas[0]
        best_key: tuple[int, int] | None = None
        for replica in replicas:
            cache = replica.prefix_cache
            matched = 0 if cache is None else cache.match_units(rid)
            key = (-matched, len(replica.waiting) + len(replica.running))
            if best_key is None or key < best_key:
                best, best_key = replica, key
        return best
