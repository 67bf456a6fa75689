"""The model deployment: pods for replicas, their cold start, the router and the gateway queue.

It plays the Deployment/ReplicaSet controller (replicas -> pods; scale-down removes pending
pods first, then starting ones, then the newest ready ones, as a ReplicaSet ranks them) and the
kubelet + vLLM start-up (pod bound -> image pull -> weight load -> engine init -> ready).
Requests that arrive while no replica is ready wait in the gateway queue until one is, or
until their timeout.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, cast

from gpuscale.cluster.groups import PodGroupSpec
from gpuscale.cluster.objects import GPU_RESOURCE, Pod, Toleration
from gpuscale.cluster.state import ClusterState
from gpuscale.core import Priority, Simulation
from gpuscale.core.simulation import TimerOwner
from gpuscale.metrics.store import (
    FB_USED,
    GPU_UTIL,
    KV_USAGE,
    PREFILL_TOKENS_WAITING,
    PREFIX_CACHE_HITS,
    PREFIX_CACHE_QUERIES,
    RUNNING,
    WAITING,
    PoolScrape,
)
from gpuscale.serving.performance import ReplicaHardware, StepCost
from gpuscale.serving.prefix_cache import PrefixCache, PrefixCacheStats
from gpuscale.serving.replica import EngineConfig, Replica, ReplicaEvents
from gpuscale.serving.requests_table import RequestTable
from gpuscale.serving.router import Router

STARTING, READY, DRAINING = "starting", "ready", "draining"
_ARRIVAL_PRIORITY: Final = int(Priority.ARRIVAL)  # a plain int in the compiled hot path


@dataclass
class ReplicaSlot:
    pod: Pod
    state: str = STARTING  # only meaningful once bound
    replica: Replica | None = None
    start_version: int = 0
    ready_s: float | None = None


class Fleet(TimerOwner):
    """Replicas of one model, kept at `desired` by creating and deleting pods."""

    def __init__(self, *, name: str, hw: ReplicaHardware, engine_cfg: EngineConfig,
                 sim: Simulation, cluster: ClusterState, table: RequestTable,
                 cold_start_s: Callable[[Pod], float], router: Router,
                 evicted_requests: str, pod_priority: int = 0, role: str = "serve",
                 on_prefilled: Callable[[int, float], None] | None = None,
                 retry: Callable[[int, float], None] | None = None,
                 pod_annotations: dict[str, str] | None = None,
                 pod_group: PodGroupSpec | None = None) -> None:
        self.name = name
        self.pod_group = pod_group  # the KAI PodGroup every pod joins (None: its own)
        self.pod_annotations = pod_annotations or {}
        self.role = role
        self.on_prefilled = on_prefilled
        # Where a request lost by an evicted replica goes again (its whole path restarts).
        self.retry = retry if retry is not None else self.route
        self.hw = hw
        self.cost = StepCost(hw)
        self.engine_cfg = engine_cfg
        self.sim = sim
        self.cluster = cluster
        self.table = table
        self.cold_start_s = cold_start_s
        self.router = router  # told of every change to `ready` (the default keeps an index)
        # A router whose choice depends on the request (prefix_aware) routes through `pick`.
        self.pick_for_request = router.pick if router.needs_request else None
        # Prefix caching acts only on a trace with prompt block hashes; the run's token
        # counters outlive the replicas (summed here for prefix_cache.hit_rate).
        self.prefix_caching = engine_cfg.enable_prefix_caching and table.prefix_ids is not None
        self.prefix_stats = PrefixCacheStats()
        self.evicted_requests = evicted_requests
        self.pod_priority = pod_priority
        self.slots: dict[str, ReplicaSlot] = {}
        self.ready: list[Replica] = []  # routing targets, in order of readiness
        self.gateway: deque[tuple[int, bool]] = deque()  # (request id, kv_ready)
        self.desired = 0
        self.scale_events = 0
        # (time_s, kind, detail) for reports: scale events and evictions, a few per run.
        self.markers: list[tuple[float, str, str]] = []
        self.peak_replicas = 0
        self.retired_busy_gpu_s = 0.0  # busy GPU-seconds of replicas that are gone
        self._pod_seq = 0
        self._arrival_timer = -1  # the next workload arrival's timer, made at the first
        # Whether each new engine keeps its ReplicaEvents (per-pod request series are read).
        self.record_events = False
        cluster.on_pod_bound.append(self._on_pod_bound)
        cluster.on_pod_evicted.append(self._on_pod_evicted)

    # -- counts -------------------------------------------------------------------------------
    def active_slots(self) -> list[ReplicaSlot]:
        """Slots that count toward spec.replicas (not draining)."""
        return [s for s in self.slots.values() if s.state != DRAINING]

    def num_ready(self) -> int:
        return len(self.ready)

    def busy_gpu_s(self, now_s: float) -> float:
        live = sum(s.replica.busy_s(now_s) for s in self.slots.values() if s.replica is not None)
        return (self.retired_busy_gpu_s + live) * self.hw.tp

    # -- scaling ------------------------------------------------------------------------------
    def scale_to(self, desired: int, now_s: float) -> None:
        desired = max(0, int(desired))
        if desired != self.desired:
            self.scale_events += 1
            kind = "scale_up" if desired > self.desired else "scale_down"
            self.markers.append((now_s, kind, f"{self.desired}->{desired}"))
        self.desired = desired
        active = self.active_slots()
        for _ in range(desired - len(active)):
            self._create_pod(now_s)
        if len(active) > desired:
            self._remove(len(active) - desired, active, now_s)
        self.peak_replicas = max(self.peak_replicas, len(self.active_slots()))

    def _create_pod(self, now_s: float) -> Pod:
        self._pod_seq += 1
        # GPU pods tolerate the nvidia.com/gpu taint: the ExtendedResourceToleration admission
        # plugin adds this toleration to any pod requesting nvidia.com/gpu.
        pod = Pod(name=f"{self.name}-{self._pod_seq}", gpus=self.hw.tp, created_s=now_s,
                  priority=self.pod_priority, labels={"app": self.name, "role": self.role},
                  tolerations=(Toleration(key=GPU_RESOURCE, operator="Exists"),),
                  annotations=dict(self.pod_annotations), group_spec=self.pod_group,
                  queue=None if self.pod_group is None else self.pod_group.queue)
        self.slots[pod.name] = ReplicaSlot(pod=pod)
        self.cluster.add_pod(pod)
        return pod

    def _remove(self, count: int, active: list[ReplicaSlot], now_s: float) -> None:
        def rank(slot: ReplicaSlot) -> tuple:
            # ReplicaSet deletion order: unscheduled, then not ready, then newest ready.
            bound = slot.pod.node_name is not None
            return (bound, slot.state == READY, -(slot.ready_s or 0.0), -slot.pod.created_s)

        for slot in sorted(active, key=rank)[:count]:
            if slot.state == READY and slot.replica is not None:
                slot.state = DRAINING
                self._drop_ready(slot.replica)
                slot.replica.drain(self._on_drained)
            else:
                self._delete_slot(slot)

    def _on_drained(self, replica: Replica) -> None:
        slot = self.slots.get(replica.name)
        if slot is not None:
            self._delete_slot(slot)

    def _delete_slot(self, slot: ReplicaSlot) -> None:
        if slot.replica is not None:
            self.retired_busy_gpu_s += slot.replica.busy_s(self.sim.now_s)
            lost = slot.replica.evict()
            self._handle_lost(lost)
            slot.replica = None
        slot.start_version += 1  # cancels a cold start in progress
        del self.slots[slot.pod.name]
        self.cluster.delete_pod(slot.pod)

    # -- lifecycle ----------------------------------------------------------------------------
    def make_ready_now(self, pod: Pod, now_s: float) -> None:
        """A replica that is already warm at t=0 (initial replicas on the warm floor)."""
        slot = self.slots[pod.name]
        slot.start_version += 1
        self._become_ready(slot, slot.start_version)

    def _on_pod_bound(self, pod: Pod) -> None:
        slot = self.slots.get(pod.name)
        if slot is None:
            return
        slot.state = STARTING
        slot.start_version += 1
        delay = self.cold_start_s(pod)
        self.sim.schedule(self.sim.now_s + delay, Priority.LIFECYCLE, self._become_ready, slot,
                          slot.start_version)

    def _become_ready(self, slot: ReplicaSlot, version: int) -> None:
        if version != slot.start_version or slot.pod.name not in self.slots:
            return
        replica = Replica(slot.pod.name, self.hw, self.engine_cfg, self.sim, self.table,
                          cost=self.cost, role=self.role, on_prefilled=self.on_prefilled)
        if self.prefix_caching:  # a fresh engine starts with an empty cache
            replica.prefix_cache = PrefixCache(self.table, self.engine_cfg.block_size,
                                               self.engine_cfg.num_blocks, self.prefix_stats)
        if self.record_events:
            replica.events = ReplicaEvents()
        slot.replica = replica
        slot.state = READY
        slot.ready_s = self.sim.now_s
        self.ready.append(replica)
        self.router.add(replica)
        while self.gateway:
            rid, kv_ready = self.gateway.popleft()
            self.route(rid, self.sim.now_s, kv_ready)

    def _drop_ready(self, replica: Replica) -> None:
        self.ready.remove(replica)
        self.router.remove(replica)

    def _on_pod_evicted(self, pod: Pod, cause: str) -> None:
        slot = self.slots.get(pod.name)
        if slot is None:
            return
        self.markers.append((self.sim.now_s, "eviction", cause))
        slot.start_version += 1
        if slot.replica is not None:
            self.retired_busy_gpu_s += slot.replica.busy_s(self.sim.now_s)
            if slot.replica in self.ready:
                self._drop_ready(slot.replica)
            lost = slot.replica.evict()
            slot.replica = None
            self._handle_lost(lost)
        if slot.state == DRAINING:
            # It was going away anyway: do not let the ReplicaSet recreate it.
            del self.slots[pod.name]
            self.cluster.delete_pod(pod)
        else:
            slot.state = STARTING  # Pending again; the scheduler will place it

    def _handle_lost(self, lost: list[int]) -> None:
        now_s = self.sim.now_s
        for rid in lost:
            if self.evicted_requests == "retry":
                self.table.num_retries[rid] += 1
                self.retry(rid, now_s)
            else:
                self.table.drop(rid, now_s, "evicted")

    # -- traffic ------------------------------------------------------------------------------
    def route(self, rid: int, now_s: float, kv_ready: bool = False) -> None:
        if self.ready:
            pick = self.pick_for_request
            target = pick(self.ready, rid) if pick is not None else \
                self.router.choose(self.ready)
            target.enqueue(rid, now_s, kv_ready)
        else:
            self.gateway.append((rid, kv_ready))

    def arrive(self, rid: int) -> None:
        """The workload's arrival `rid` at `sim.now_s`, and the arrivals after it that come
        before any other event, routed in one go at their own instants
        (`Simulation.advance_to`); the next one after an event waits on the fleet's arrival
        timer (one pending firing, `on_timer`). Same order and state as one event per arrival
        (nothing else has the ARRIVAL priority, so a same-instant tie is decided by priority
        alone). Here, not in sim/run.py, so the loop over ~200,000 arrivals runs in the
        compiled hot path (setup.py)."""
        table = self.table
        sim = self.sim
        arrivals = table.arrival_s_view
        n = len(arrivals)
        while True:
            table.num_arrived = rid + 1
            self.route(rid, sim.now_s)
            rid += 1
            if rid >= n:
                return
            next_s = arrivals[rid]
            if not sim.advance_to(next_s):
                if self._arrival_timer < 0:
                    self._arrival_timer = sim.new_timer(self)
                sim.set_timer(self._arrival_timer, next_s, _ARRIVAL_PRIORITY, 0, rid)
                return

    def on_timer(self, kind: int, arg: object) -> None:
        """The arrival timer: the workload's next request (`arrive`)."""
        self.arrive(cast(int, arg))

    def expire_gateway(self, now_s: float, timeout_s: float) -> None:
        """Drop gateway-queued requests whose client has given up."""
        table = self.table
        while self.gateway:
            rid = self.gateway[0][0]
            # Only a request still waiting for its first token can time out.
            if table.first_token_s[rid] == table.first_token_s[rid] or \
                    now_s - table.arrival_s[rid] <= timeout_s:
                break
            self.gateway.popleft()
            table.drop(rid, now_s, "timeout")

    def engine_events(self) -> list[tuple[str, ReplicaEvents]]:
        """Each engine's ReplicaEvents (those that keep them), by pod name in slot order;
        the caller drains them."""
        out: list[tuple[str, ReplicaEvents]] = []
        for name, slot in self.slots.items():
            replica = slot.replica
            if replica is not None and replica.events is not None:
                out.append((name, replica.events))
        return out

    def replica_samples(self, now_s: float, window_s: float, prev_busy: dict[str, float],
                        fb_used_mib: float, ttfts: list[float]) -> PoolScrape:
        """Scrape every pod of the deployment (see metrics/store.py for the series): one
        `(name, bound, ready, values)` per pod in slot order, and what the scrape sums of them
        (metrics/store.py `PoolScrape`), worked out here rather than by reading each pod's
        dict back in the interpreted scrape. The ready replicas' TTFTs since the last scrape
        move to `ttfts`, in the order of `ready`."""
        pods: list[tuple[str, bool, bool, dict[str, float]]] = []
        kv: list[float] = []
        util: list[float] = []
        pending = starting = 0
        # Request counts: integers held in floats, so these sums are exact in any grouping.
        waiting = running = 0.0
        for slot in self.slots.values():
            values: dict[str, float] = {}
            pod = slot.pod
            replica = slot.replica
            bound = pod.node_name is not None
            if bound:
                if replica is None:  # loading: GPUs held, no step executed, no /metrics yet
                    starting += 1
                    prev_busy[pod.name] = 0.0
                    values[GPU_UTIL] = 0.0
                    values[FB_USED] = 0.0
                else:
                    busy = replica.busy_s(now_s)
                    # A replica that became ready within the window is judged on its part.
                    window = min(window_s, now_s - (slot.ready_s or 0.0))
                    util_pct = 100.0 * (busy - prev_busy.get(pod.name, 0.0)) / window \
                        if window > 0 else 0.0
                    prev_busy[pod.name] = busy
                    pod_util = min(100.0, max(0.0, util_pct))
                    pod_waiting = float(replica.num_waiting())
                    pod_running = float(replica.num_running)
                    pod_kv = replica.kv_usage_frac(now_s)
                    values[GPU_UTIL] = pod_util
                    values[FB_USED] = fb_used_mib
                    values[WAITING] = pod_waiting
                    values[RUNNING] = pod_running
                    values[KV_USAGE] = pod_kv
                    values[PREFILL_TOKENS_WAITING] = float(
                        replica.waiting_prompt_tokens + replica.prefill_tokens_left())
                    if replica.prefix_cache is not None:  # counters since the engine started
                        values[PREFIX_CACHE_QUERIES] = float(
                            replica.prefix_cache.stats.queries_tokens)
                        values[PREFIX_CACHE_HITS] = float(replica.prefix_cache.stats.hits_tokens)
                    waiting += pod_waiting
                    running += pod_running
                    kv.append(pod_kv)
                    util.append(pod_util)
            else:
                pending += 1
            pods.append((pod.name, bound, replica is not None and slot.state == READY, values))
        num_busy = 0  # ready replicas executing a step or a decode stretch (not idle)
        for serving in self.ready:
            if serving.ttft_observations:
                ttfts.extend(serving.ttft_observations)
                serving.ttft_observations = []
            if serving.is_busy():
                num_busy += 1
        return pods, pending, starting, waiting, running, kv, util, num_busy
