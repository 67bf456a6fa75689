"""The router in front of the replicas: least outstanding requests by default.

Ties go to the replica that became ready first (list order), so routing is deterministic.
A fleet routes through a `Router`: called with its ready list (in order of readiness), and told
when a replica joins the end of that list (`add`) or leaves it (`remove`), so a router may keep
an index instead of scanning the list per request.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heapify, heappop, heappush
from typing import Any, Final

from gpuscale.serving.replica import Replica

RANK_SPAN: Final = 1 << 32  # LeastOutstanding: > any rank (one per `add` over a run)


def least_outstanding(replicas: list[Replica]) -> Replica:
    """Replica with the fewest waiting + running requests (vLLM production-stack's default).

    The reference scan; `LeastOutstanding` gives the same answer without scanning."""
    best = replicas[0]
    best_load = len(best.waiting) + len(best.running)
    for replica in replicas:
        load = len(replica.waiting) + len(replica.running)
        if load < best_load:
            best, best_load = replica, load
    return best


class Router:
    """A fleet's router; `add`/`remove` are no-ops for one that looks only at the list.

    A router whose choice depends on the request sets `needs_request` and answers
    `pick(replicas, rid)`; the fleet reads the flag once, so the default path pays nothing."""

    needs_request = False

    def __call__(self, replicas: list[Replica]) -> Replica:
        raise NotImplementedError

    def pick(self, replicas: list[Replica], rid: int) -> Replica:
        """Route request `rid`; only called when `needs_request` is set."""
        return self(replicas)

    def add(self, replica: Replica) -> None:
        """`replica` was appended to the ready list."""

    def remove(self, replica: Replica) -> None:
        """`replica` left the ready list (draining or evicted)."""


class FunctionRouter(Router):
    """A plain `Callable[[list[Replica]], Replica]` as a Router."""

    def __init__(self, choose: Callable[[list[Replica]], Replica]) -> None:
        self.choose = choose

    def __call__(self, replicas: list[Replica]) -> Replica:
        return self.choose(replicas)


class LeastOutstanding(Router):
    """`least_outstanding` over a fleet's ready list, in O(log n) a request instead of O(n).

    The fleet tells it when a replica joins (`add`, appended at the end of the ready list) or
    leaves (`remove`); each replica appends itself to `_changed` whenever its waiting + running
    count changes (Replica.load_log). At a routing call the changed replicas get a fresh heap
    entry, the int load x RANK_SPAN + rank (ordered as the pair (load, rank), compared as one
    int, no tuple); entries whose load is no longer the replica's, or whose replica left, are
    stale and dropped when they reach the top. `rank` grows with each `add`, so among equal
    loads the heap's minimum is the replica earliest in the ready list (removals keep the
    others' order): the scan's tie-break, hence always the scan's choice.
    """

    def __init__(self) -> None:
        self._heap: list[int] = []
        self._changed: list[Replica] = []
        self._by_rank: list[Replica | None] = [None]  # rank -> replica; None once removed
        self._count = 0

    def add(self, replica: Replica) -> None:
        self._count += 1
        replica.route_rank = len(self._by_rank)
        self._by_rank.append(replica)
        replica.load_log = self._changed
        self._changed.append(replica)

    def remove(self, replica: Replica) -> None:
        if replica.route_rank:
            self._count -= 1
            self._by_rank[replica.route_rank] = None
        replica.route_rank = 0
        replica.load_log = None

    def __call__(self, replicas: list[Replica]) -> Replica:
        if len(replicas) != self._count:
            return least_outstanding(replicas)  # not the list this index follows
        heap = self._heap
        changed = self._changed
        span = RANK_SPAN
        if changed:
            for r in changed:
                if r.route_rank:
                    heappush(heap, (len(r.waiting) + len(r.running)) * span + r.route_rank)
            changed.clear()
            if len(heap) > 4 * len(replicas) + 64:  # stale entries piling up below the top
                heap[:] = [(len(r.waiting) + len(r.running)) * span + r.route_rank
                           for r in replicas]
                heapify(heap)
        by_rank = self._by_rank
        while True:
            key = heap[0]
            load = key // span
            found = by_rank[key - load * span]
            if found is not None and len(found.waiting) + len(found.running) == load:
                return found
            heappop(heap)


def round_robin_factory() -> Router:
    counter = [0]

    def round_robin(replicas: list[Replica]) -> Replica:
        counter[0] += 1
        return replicas[counter[0] % len(replicas)]

    return FunctionRouter(round_robin)


class PrefixAwareRouter(Router):
    """`router: prefix_aware`: longest cached prefix, then least outstanding, then readiness.

    llm-d's inference scheduler scores each endpoint by the share of the prompt's blocks found
    in its prefix cache (the "precise prefix cache" scorer reads the engines' KV events) beside
    load scorers; NVIDIA Dynamo's KV router picks the worker with the lowest
    `overlap_score_weight x prefill blocks still to compute + active decode blocks`. Both send a
    request where most of its prefix is cached and let load break the tie. This is the simplest
    form of that: most cached leading blocks first, then fewest outstanding (waiting + running)
    requests, then list order, so routing is deterministic. It reads each replica's actual cache
    (as the KV-event-fed "precise" indexes do), not an approximate copy kept by the router. It
    never trades a hit against load, as the weighted scores can (docs/serving.md).
    """

    needs_request = True

    # Any, not Replica: this router reads only `prefix_cache`, `waiting` and `running`, and
    # its tests pass stand-ins, which compiled (mypyc) code would reject.
    def __call__(self, replicas: list[Any]) -> Any:
        """Without the request (no hashes to match): least outstanding (`min` keeps the first
        of equals, as `least_outstanding`)."""
        return min(replicas, key=lambda r: len(r.waiting) + len(r.running))

    def pick(self, replicas: list[Any], rid: int) -> Any:
        best = replicas[0]
        best_key: tuple[int, int] | None = None
        for replica in replicas:
            cache = replica.prefix_cache
            matched = 0 if cache is None else cache.match_units(rid)
            key = (-matched, len(replica.waiting) + len(replica.running))
            if best_key is None or key < best_key:
                best, best_key = replica, key
        return best


ROUTERS: dict[str, Callable[[], Router]] = {"least_outstanding": LeastOutstanding,
                                            "round_robin": round_robin_factory,
                                            "prefix_aware": PrefixAwareRouter}
