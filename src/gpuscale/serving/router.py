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
    """`router: prefix_aware`: the best weighted score of cached prefix, queue and KV cache, as
    llm-d's inference scheduler scores endpoints (its well-lit path's EndpointPickerConfig:
    prefix-cache-scorer weight 3, queue-scorer 2, kv-cache-utilization-scorer 2, then
    max-score-picker; llm-d guides/inference-scheduling and the Gateway API Inference
    Extension's scorers):

    - prefix: the share of the prompt's blocks the replica holds, leading blocks only
      (prefix-cache-scorer: matched blocks / the prompt's blocks), 0..1;
    - queue: (most waiting - this replica's waiting) / (most - least) over the candidates, 1
      when all wait alike (queue-scorer, on vllm:num_requests_waiting);
    - KV cache: 1 - the replica's KV-cache usage (kv-cache-utilization-scorer, on
      vllm:kv_cache_usage_perc).

    A long cached prefix on a replica whose queue is the longest and whose KV cache is full
    scores at most 3 where an idle one scores 4, so a hit never outweighs load the way it did
    when the prefix was the only criterion (issue 28: 0 % SLO and half the requests dropped
    on a long-prompt trace). NVIDIA Dynamo's KV router trades the same two (cost =
    overlap_score_weight x blocks to prefill + active blocks, lowest wins); the weights are
    the knob (`prefix_aware_weights` in a scenario). Ties: fewest outstanding (waiting +
    running), then the replica ready first. It reads each replica's actual cache and queue,
    as the KV-event-fed "precise" scorer does, so it is exact where theirs lag by a scrape or
    an event. Without a request (no hashes to match) it is least outstanding.
    """

    needs_request = True

    def __init__(self, prefix_weight: float = 3.0, queue_weight: float = 2.0,
                 kv_cache_weight: float = 2.0) -> None:
        self.prefix_weight = prefix_weight
        self.queue_weight = queue_weight
        self.kv_cache_weight = kv_cache_weight

    # Any, not Replica: this router reads only `prefix_cache`, `num_waiting()`,
    # `kv_usage_frac()`, `outstanding()` and `sim`, and its tests pass stand-ins, which
    # compiled (mypyc) code would reject.
    def __call__(self, replicas: list[Any]) -> Any:
        """Without the request (no hashes to match): least outstanding (`min` keeps the first
        of equals, as `least_outstanding`)."""
        return min(replicas, key=lambda r: r.outstanding())

    def pick(self, replicas: list[Any], rid: int) -> Any:
        waiting = [r.num_waiting() for r in replicas]
        least, most = min(waiting), max(waiting)
        spread = most - least
        best = replicas[0]
        best_key: tuple[float, int] | None = None
        for i, replica in enumerate(replicas):
            cache = replica.prefix_cache
            prefix = 0.0 if cache is None else cache.match_frac(rid)
            queue = 1.0 if spread == 0 else (most - waiting[i]) / spread
            kv_free = 1.0 - replica.kv_usage_frac(replica.sim.now_s)
            score = (self.prefix_weight * prefix + self.queue_weight * queue
                     + self.kv_cache_weight * kv_free)
            key = (-score, replica.outstanding())
            if best_key is None or key < best_key:
                best, best_key = replica, key
        return best


def make_router(name: str, prefix_aware_weights: tuple[float, float, float] | None = None
                ) -> Router:
    """A fresh router of kind `name`; `prefix_aware_weights`: (prefix, queue, KV cache)
    scorer weights of `prefix_aware` (PrefixAwareRouter's defaults when None)."""
    if name == "prefix_aware" and prefix_aware_weights is not None:
        return PrefixAwareRouter(*prefix_aware_weights)
    return ROUTERS[name]()


ROUTERS: dict[str, Callable[[], Router]] = {"least_outstanding": LeastOutstanding,
                                            "round_robin": round_robin_factory,
                                            "prefix_aware": PrefixAwareRouter}
