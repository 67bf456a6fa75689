"""The router in front of the replicas: least outstanding requests by default.

Ties go to the replica that became ready first (list order), so routing is deterministic.
A fleet routes through a `Router`: called with its ready list (in order of readiness), and told
when a replica joins the end of that list (`add`) or leaves it (`remove`), so a router may keep
an index instead of scanning the list per request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from gpuscale.serving.replica import Replica

_EMPTY: Final = 1 << 60  # LeastOutstanding: the load of a leaf without a replica, above any


def least_outstanding(replicas: list[Replica]) -> Replica:
    """Replica with the fewest waiting + running requests (vLLM production-stack's default).

    The reference scan; `LeastOutstanding` gives the same answer without scanning."""
    best = replicas[0]
    best_load = best.outstanding()
    for replica in replicas:
        load = replica.outstanding()
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

    def choose(self, replicas: list[Replica]) -> Replica:
        """`self(replicas)` as a method: the fleet calls this one, which the compiled build
        dispatches natively (calling the instance goes through argument parsing)."""
        return self(replicas)

    def pick(self, replicas: list[Replica], rid: int) -> Replica:
        """Route request `rid`; only called when `needs_request` is set."""
        return self(replicas)

    def add(self, replica: Replica) -> None:
        """`replica` was appended to the ready list."""

    def remove(self, replica: Replica) -> None:
        """`replica` left the ready list (draining or evicted)."""


class FunctionRouter(Router):
    """A plain `Callable[[list[Replica]], Replica]` as a Router."""

    def __init__(self, function: Callable[[list[Replica]], Replica]) -> None:
        self.function = function

    def __call__(self, replicas: list[Replica]) -> Replica:
        return self.function(replicas)


class RouteLeaf:
    """A leaf of `LeastOutstanding`'s tree: one rank's load (_EMPTY: no replica)."""

    __slots__ = ("load", "rank")

    def __init__(self, rank: int, load: int) -> None:
        self.rank = rank
        self.load = load


class LeastOutstanding(Router):
    """`least_outstanding` over a fleet's ready list, in O(log n) a change instead of O(n) a
    request.

    The fleet tells it when a replica joins (`add`, appended at the end of the ready list) or
    leaves (`remove`); each replica appends itself to `_changed` whenever its waiting + running
    count changes (Replica.load_log). A tournament tree over the replicas' ranks holds, at each
    inner node, the rank of the least loaded replica below it (ties to the lower rank), so the
    root names the minimum. At a routing call the changed replicas' loads are stored and their
    paths to the root replayed, stopping where a node keeps a winner other than the changed
    replica. `rank` grows with each `add`, so among equal loads the minimum is the replica
    earliest in the ready list (removals keep the others' order): the scan's tie-break, hence
    always the scan's choice. Each leaf is a `RouteLeaf` (its rank and load as native fields)
    and each inner node holds the leaf that wins below it: a node store is a pointer store,
    where a list of ints allocates an object for every store of a value above 256 in the
    compiled build, and a comparison reads two fields, not two list items to unbox.
    """

    def __init__(self, capacity: int = 16) -> None:
        self._changed: list[Replica] = []
        self._by_rank: list[Replica | None] = [None]  # rank -> replica; None once removed
        self._count = 0
        self._capacity = max(2, capacity)  # leaves (> every rank); doubles when outgrown
        # Node i (1 <= i < capacity) -> the leaf winning below it; node capacity + r is the
        # leaf of rank r (node 0 is unused). `_rebuild` fills it.
        self._nodes: list[RouteLeaf] = []
        self._rebuild(self._capacity)

    def add(self, replica: Replica) -> None:
        self._count += 1
        if len(self._by_rank) >= self._capacity:
            # Out of leaves: renumber the live replicas 1..k in their order (ranks of removed
            # ones are never reused, so without this a run with 279 replicas over time but 64
            # at once would walk a 512-leaf tree), doubling until a fifth of it is free.
            live = [r for rank, r in enumerate(self._by_rank) if r is not None and rank]
            self._by_rank = [None]
            for r in live:
                r.route_rank = len(self._by_rank)
                self._by_rank.append(r)
            capacity = self._capacity
            while capacity < (len(self._by_rank) + 1) * 5 // 4:
                capacity *= 2
            self._rebuild(capacity)
        rank = len(self._by_rank)
        self._by_rank.append(replica)
        replica.route_rank = rank
        replica.load_log = self._changed
        self._changed.append(replica)

    def remove(self, replica: Replica) -> None:
        if replica.route_rank:
            self._count -= 1
            self._by_rank[replica.route_rank] = None
            self._set(replica.route_rank, _EMPTY)
        replica.route_rank = 0
        replica.load_log = None

    def _set(self, rank: int, load: int) -> None:
        """Store a replica's load and restore every node's winner on its path. Only the nodes
        the change can move are visited: a better load climbs while it beats the other
        subtree's winner; a worse one replays the nodes it was winning (none at all, for a
        replica that was not winning even its first node: one read)."""
        nodes = self._nodes
        node = self._capacity + rank
        leaf = nodes[node]
        old = leaf.load
        if old == load:
            return
        leaf.load = load
        i = node >> 1
        if load < old:
            while i:
                other = nodes[node ^ 1]
                load_other = other.load
                if load_other < load or (load_other == load and other.rank < rank):
                    return  # the other side still wins here: this node and those above keep theirs
                nodes[i] = leaf
                node = i
                i >>= 1
            return
        # Worse: above the first node it does not win, no winner can change (a node won by
        # `leaf` has it winning every node below on the path).
        while i and nodes[i] is leaf:
            a = nodes[2 * i]
            b = nodes[2 * i + 1]
            load_a = a.load
            load_b = b.load
            nodes[i] = a if load_a < load_b or (load_a == load_b and a.rank < b.rank) else b
            i >>= 1

    def _rebuild(self, capacity: int) -> None:
        """A tree of `capacity` leaves, from current loads."""
        self._capacity = capacity
        leaves = [RouteLeaf(rank, _EMPTY) for rank in range(capacity)]
        for rank, r in enumerate(self._by_rank):
            if r is not None and r.route_rank == rank:
                leaves[rank].load = r.outstanding()
        nodes = [leaves[0]] * capacity + leaves
        for i in range(capacity - 1, 0, -1):
            a = nodes[2 * i]
            b = nodes[2 * i + 1]
            nodes[i] = a if a.load < b.load or (a.load == b.load and a.rank < b.rank) else b
        self._nodes = nodes

    def __call__(self, replicas: list[Replica]) -> Replica:
        return self.choose(replicas)

    def choose(self, replicas: list[Replica]) -> Replica:
        if len(replicas) != self._count:
            return least_outstanding(replicas)  # not the list this index follows
        changed = self._changed
        if changed:
            for r in changed:
                if r.route_rank:
                    self._set(r.route_rank, r.outstanding())
            changed.clear()
        best = self._nodes[1]
        found = self._by_rank[best.rank] if best.load != _EMPTY else None
        return found if found is not None else least_outstanding(replicas)


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

    # Any, not Replica: this router reads only `prefix_cache` and `outstanding()`, and
    # its tests pass stand-ins, which compiled (mypyc) code would reject.
    def __call__(self, replicas: list[Any]) -> Any:
        """Without the request (no hashes to match): least outstanding (`min` keeps the first
        of equals, as `least_outstanding`)."""
        return min(replicas, key=lambda r: r.outstanding())

    def pick(self, replicas: list[Any], rid: int) -> Any:
        best = replicas[0]
        best_key: tuple[int, int] | None = None
        for replica in replicas:
            cache = replica.prefix_cache
            matched = 0 if cache is None else cache.match_units(rid)
            key = (-matched, replica.outstanding())
            if best_key is None or key < best_key:
                best, best_key = replica, key
        return best


ROUTERS: dict[str, Callable[[], Router]] = {"least_outstanding": LeastOutstanding,
                                            "round_robin": round_robin_factory,
                                            "prefix_aware": PrefixAwareRouter}
