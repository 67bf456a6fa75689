"""What layer 2 costs and delivers: the `scheduling` block of a run's summary.

Integrals are piecewise constant between observations: each `observe(now_s)` first adds
rate x elapsed for the rates seen at the previous observation, then recomputes the rates from
the cluster. Schedulers observe around every cycle (new pods and evictions always trigger one
at the same instant) and on every pod deletion, so every change they cause or see is on a
boundary. Definitions are in docs/scheduling.md ("Metrics").
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import NamedTuple

import numpy as np

from gpuscale.cluster.objects import Node, Pod, tolerates_all
from gpuscale.cluster.state import ClusterState
from gpuscale.metrics.store import percentile_linear
from gpuscale.scheduling.gangs import form_gangs, group_name, queue_of, resize_default_gang
from gpuscale.scheduling.topology import crossed_levels

MAX_SERIES_POINTS = 240  # keeps the JSON small; the series is thinned evenly past this


class GangSums(NamedTuple):
    """What the gangs hold at one observation."""

    queue_rate: dict[str, int]  # GPUs bound, by queue
    held_gpus: float  # GPUs bound to gangs that cannot start (the 7-of-8 waste)
    held_usd: float  # their price, per second
    blocked: bool  # a multi-pod gang has a pod pending


def _gang_sums(gangs: dict, cluster: ClusterState) -> GangSums:
    held_gpus = held_usd = 0.0
    blocked = False
    # int-defaulting as the Counter was, without its Python-level __missing__ per queue
    queue_rate: defaultdict[str, int] = defaultdict(int)
    for gang in gangs.values():
        spec = gang.spec
        pods = gang.pods
        if len(pods) == 1 and spec.min_member <= 1:
            # One pod that needs no gang (a serving replica, most gangs of a run): it is
            # complete once bound and never blocked or held, so only its queue's allocation
            # counts; what the general path below does for it, without the list and the tests.
            pod = pods[0]
            if pod.node_name is not None:
                queue_rate[spec.queue] += pod.gpus
            continue
        # `Gang.bound` and `Gang.min_member` inlined: this runs at every observation over
        # every gang; same order and sums as the properties give.
        bound = [p for p in pods if p.node_name is not None]
        if bound:
            queue = spec.queue
            for pod in bound:
                queue_rate[queue] += pod.gpus
        min_member = spec.min_member if spec.min_member > 1 else 1
        if len(bound) >= min_member:  # gang.is_complete
            continue
        if min_member > 1 and len(bound) < len(gang.pods):  # some pod is pending
            blocked = True
        for pod in bound:  # bound but the job cannot start: the 7-of-8 waste
            node = cluster.nodes.get(pod.node_name) if pod.node_name else None
            held_gpus += pod.gpus
            if node is not None and node.num_gpus:
                held_usd += pod.gpus * node.price_usd_per_hour / node.num_gpus / 3600.0
    return GangSums(queue_rate, held_gpus, held_usd, blocked)


class NodeSums(NamedTuple):
    """What the ready nodes hold at one observation."""

    free_gpus: int
    allocated_gpus: int
    frees: list[int]  # each ready node's free GPUs, in the cluster's order
    free_usd: float  # the free GPUs' price, per second
    empty_gpus: int  # GPUs of ready nodes that host no pod
    empty_usd: float  # their price, per second


def _node_sums(ready: list[Node]) -> NodeSums:
    """One pass over the ready nodes, each node's properties read once (`Node.num_gpus`,
    `gpus_free` of a ready node and `price_usd_per_hour` written out): the integer sums are
    order-free, the float ones add the same terms in the same order as one generator per sum
    did."""
    free = allocated = empty_gpus = 0
    frees: list[int] = []
    free_usd_terms: list[float] = []
    empty_prices: list[float] = []
    for n in ready:
        num_gpus = n.instance_type.num_gpus
        free_gpus = num_gpus - n.gpus_allocated
        frees.append(free_gpus)
        free += free_gpus
        allocated += n.gpus_allocated
        if num_gpus:
            price = n.instance_type.price_usd_per_hour(n.capacity_type)
            free_usd_terms.append(free_gpus * price / num_gpus / 3600.0)
            # Ready nodes hosting no pod: billing, and under a gang scheduler typically the
            # nodes already launched for a gang still waiting for its last ones (no atomic
            # multi-node launch, reference layer2-scheduling.md 1.4).
            if not n.pod_names:
                empty_gpus += num_gpus
                empty_prices.append(price)
    return NodeSums(free, allocated, frees, sum(free_usd_terms), empty_gpus,
                    sum(empty_prices) / 3600.0)


class SchedulingMetrics:
    def __init__(self, topology_levels: tuple[str, ...] = ()) -> None:
        self.levels = topology_levels
        self.last_s: float | None = None
        self.rates: dict[str, float] = {}
        # Integrals: name -> value x seconds. defaultdict(int), as the Counter was: a name never
        # integrated reads 0 (an int), so the summary's JSON is unchanged.
        self.totals: defaultdict[str, float] = defaultdict(int)
        self.queue_alloc_s: defaultdict[str, float] = defaultdict(int)
        self.queue_fair_s: defaultdict[str, float] = defaultdict(int)
        self.queue_rate: dict[str, float] = {}
        self.fair_rate: dict[str, float] = {}
        self.counters: Counter = Counter()
        self.crossings: Counter = Counter()
        self.waits: dict[str, list[float]] = defaultdict(list)
        self.pending_since: dict[str, float] = {}
        self.series: list[tuple[float, int, int]] = []
        self.start_s: float | None = None
        self._gangs_of: ClusterState | None = None
        self._gangs: dict | None = None
        self._gang_pods = 0  # pods in the cached gangs

    # -- events ------------------------------------------------------------------------------
    def pod_pending(self, pod: Pod, now_s: float) -> None:
        self.pending_since[pod.name] = now_s

    def pod_bound(self, pod: Pod, now_s: float) -> None:
        since = self.pending_since.pop(pod.name, pod.created_s)
        self.waits[queue_of(pod)].append(now_s - since)

    def gang_placed(self, node_labels: list[dict[str, str]]) -> None:
        self.counters["gangs_placed"] += 1
        for level in crossed_levels(node_labels, self.levels):
            self.crossings[level] += 1

    def set_fair_shares(self, shares: dict[str, float]) -> None:
        self.fair_rate = dict(shares)

    # -- integration -------------------------------------------------------------------------
    def observe(self, now_s: float, cluster: ClusterState) -> None:
        if self.start_s is None:
            self.start_s = now_s
        if self.last_s is not None and now_s > self.last_s:
            dt = now_s - self.last_s
            for name, rate in self.rates.items():
                self.totals[name] += rate * dt
            for q, rate in self.queue_rate.items():
                self.queue_alloc_s[q] += rate * dt
            for q, rate in self.fair_rate.items():
                self.queue_fair_s[q] += rate * dt
        self.last_s = now_s
        self._recompute(now_s, cluster)

    def gangs(self, cluster: ClusterState) -> dict:
        """`form_gangs` of the cluster's pods, kept up to date pod by pod. Observations come
        two to three per cycle and one per pod deletion, each over every pod: recomputing the
        gangs at each made long runs quadratic, and rebuilding them at each pod change was
        still most of an observation. Binding and evicting change no gang (a pod stays in the
        cluster and its gang, `Gang.bound` reads the pods); an added pod is the cluster's last,
        so it joins the end of its gang or starts the last gang, as `form_gangs` would put it;
        a deleted pod leaves its gang. Whatever that cannot follow exactly (the first pod of a
        gang leaves, so the gang's order and spec may move; several pods deleted at once seen
        between two of their events) is rebuilt from scratch. Read-only for callers; equal to
        `form_gangs(cluster.pods.values())` (tests/scheduling/test_metrics_gang_cache.py)."""
        if self._gangs_of is not cluster:
            self._gangs_of, self._gangs = cluster, None
            # First in line, so the cache is updated before any other listener can observe.
            cluster.on_pod_pending.insert(0, self._pod_added)
            cluster.on_pod_deleted.insert(0, self._pod_deleted)
        if self._gangs is not None and self._gang_pods != len(cluster.pods):
            self._gangs = None  # mid-way through a multi-pod deletion: some are gone already
        if self._gangs is None:
            self._gangs = form_gangs(cluster.pods.values())
            self._gang_pods = len(cluster.pods)
        return self._gangs

    def _pod_added(self, pod: Pod) -> None:
        gangs = self._gangs
        if gangs is None:
            return
        self._gang_pods += 1
        name = group_name(pod)
        gang = gangs.get(name)
        if gang is None:
            gangs[name] = form_gangs((pod,))[name]
            return
        gang.pods.append(pod)
        resize_default_gang(gang)

    def _pod_deleted(self, pod: Pod) -> None:
        gangs = self._gangs
        if gangs is None:
            return
        name = group_name(pod)
        gang = gangs.get(name)
        index = -1 if gang is None else next(
            (i for i, member in enumerate(gang.pods) if member is pod), -1)
        if gang is None or index < 0:
            # Not in the cache: it was rebuilt after this pod had left (a multi-pod deletion).
            return
        self._gang_pods -= 1
        if index == 0 and len(gang.pods) > 1:
            self._gangs = None  # the next pod leads the gang now: its place and spec may move
            return
        del gang.pods[index]
        if not gang.pods:
            del gangs[name]
        else:
            resize_default_gang(gang)

    def _recompute(self, now_s: float, cluster: ClusterState) -> None:
        gangs = _gang_sums(self.gangs(cluster), cluster)
        ready = cluster.ready_nodes()
        nodes = _node_sums(ready)
        free = nodes.free_gpus
        blocked = gangs.blocked
        fragmented = self._fragmented_gpus(cluster, ready, nodes.frees)
        self.queue_rate = dict(gangs.queue_rate)
        self.rates = {
            "gang_idle_gpu_s": gangs.held_gpus, "gang_idle_usd": gangs.held_usd,
            "free_gpu_s_while_gang_blocked": free if blocked else 0.0,
            "free_usd_while_gang_blocked": nodes.free_usd if blocked else 0.0,
            "empty_node_gpu_s_while_gang_blocked": nodes.empty_gpus if blocked else 0.0,
            "empty_node_usd_while_gang_blocked": nodes.empty_usd if blocked else 0.0,
            "free_gpu_s": free, "fragmented_gpu_s": fragmented,
            "allocated_gpu_s": nodes.allocated_gpus,
        }
        if not self.series or self.series[-1][1:] != (free, fragmented):
            self.series.append((now_s, free, fragmented))

    @staticmethod
    def _fragmented_gpus(cluster: ClusterState, ready: list[Node], frees: list[int]) -> int:
        """Free GPUs on nodes where no pending GPU pod fits (0 when no GPU pod is pending);
        `frees` holds each ready node's free GPUs."""
        pending = [p for p in cluster.pending_pods() if p.gpus > 0]
        if not pending:
            return 0
        shapes = {(p.gpus, p.tolerations, tuple(sorted(p.node_selector.items()))): p
                  for p in pending}
        return sum(free_gpus for n, free_gpus in zip(ready, frees, strict=True)
                   if free_gpus > 0 and not any(
                       p.gpus <= free_gpus and tolerates_all(p.tolerations, n.taints)
                       and p.fits_selector(n) for p in shapes.values()))

    # -- summary -----------------------------------------------------------------------------
    def summary(self, kind: str, pending_by_queue: dict[str, int] | None = None) -> dict:
        span = (self.last_s or 0.0) - (self.start_s or 0.0)
        mean = (lambda key: self.totals[key] / span) if span > 0 else (lambda key: 0.0)
        pending_by_queue = pending_by_queue or {}
        waits = {}
        for q in sorted(set(self.waits) | set(pending_by_queue)):
            w = self.waits.get(q, [])
            waits[q] = {"count": len(w),
                        # np.percentile's float, without its numpy.ma import
                        "p50_s": percentile_linear(w, 50) if w else None,
                        "p99_s": percentile_linear(w, 99) if w else None,
                        "pending_at_end": pending_by_queue.get(q, 0)}
        queues = sorted(set(self.queue_alloc_s) | set(self.queue_fair_s))
        share = {}
        for q in queues:
            alloc = self.queue_alloc_s[q] / span if span > 0 else 0.0
            fair = self.queue_fair_s[q] / span if span > 0 and q in self.queue_fair_s else None
            share[q] = {"mean_allocated_gpus": round(alloc, 4),
                        "mean_fair_share_gpus": None if fair is None else round(fair, 4),
                        "received_over_fair_frac": round(alloc / fair, 4) if fair else None}
        series = self.series
        if len(series) > MAX_SERIES_POINTS:
            idx = np.linspace(0, len(series) - 1, MAX_SERIES_POINTS).round().astype(int)
            series = [series[i] for i in idx]
        return {
            "scheduler": kind,
            "span_s": span,
            "gang_idle_gpu_minutes": round(self.totals["gang_idle_gpu_s"] / 60.0, 4),
            "gang_idle_usd": round(self.totals["gang_idle_usd"], 4),
            "free_gpu_minutes_while_gang_blocked":
                round(self.totals["free_gpu_s_while_gang_blocked"] / 60.0, 4),
            "free_usd_while_gang_blocked": round(self.totals["free_usd_while_gang_blocked"], 4),
            "empty_node_gpu_minutes_while_gang_blocked":
                round(self.totals["empty_node_gpu_s_while_gang_blocked"] / 60.0, 4),
            "empty_node_usd_while_gang_blocked":
                round(self.totals["empty_node_usd_while_gang_blocked"], 4),
            "mean_allocated_gpus": round(mean("allocated_gpu_s"), 4),
            "fragmentation": {
                "mean_free_gpus": round(mean("free_gpu_s"), 4),
                "mean_fragmented_gpus": round(mean("fragmented_gpu_s"), 4),
                "max_fragmented_gpus": max((s[2] for s in self.series), default=0),
                "series": [[round(t, 3), f, g] for t, f, g in series],
            },
            "queue_wait_s": waits,
            "preemptions": self.counters["preemptions"],
            "reclaims": self.counters["reclaims"],
            "consolidations": self.counters["consolidations"],
            "stale_gang_evictions": self.counters["stale_gang_evictions"],
            "unschedulable_reports": self.counters["unschedulable_reports"],
            "share": share,
            "gangs_placed": self.counters["gangs_placed"],
            "topology_crossings": dict(sorted(self.crossings.items())),
        }
