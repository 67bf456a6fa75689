"""What every scheduler shares: event wiring, one cycle per instant, retries, metrics.

Cycles run at `Priority.CONTROLLER`, after every lifecycle change of the same instant, so
pods created together are scheduled together (KAI's snapshot per cycle; kube-scheduler's
queue sees the whole batch). A cycle returns when it wants to run again (backoff or period).
"""

from __future__ import annotations

import math
from collections import Counter

from gpuscale.cluster.objects import Node, Pod
from gpuscale.cluster.state import ClusterState
from gpuscale.core import Priority, RandomStreams, Simulation
from gpuscale.scheduling.base import UnschedulableCallback
from gpuscale.scheduling.gangs import queue_of
from gpuscale.scheduling.metrics import SchedulingMetrics


class CycleScheduler:
    """Base for the schedulers; subclasses implement `cycle(now_s) -> next retry time`."""

    kind = ""

    def __init__(self, topology_levels: tuple[str, ...] = ()) -> None:
        self.topology_levels = tuple(topology_levels)
        self.metrics = SchedulingMetrics(self.topology_levels)
        self._next_cycle_s = math.inf
        self._complete: set[str] = set()
        self._last_stamp: int | None = None  # ClusterState.stamp when the last cycle ended
        self._sim: Simulation | None = None
        self._cluster: ClusterState | None = None

    # -- wiring ------------------------------------------------------------------------------
    # `sim` and `cluster` exist from attach() on; typed accessors instead of `| None` and a
    # check at every use (everything but summary() runs only after attach()).
    @property
    def sim(self) -> Simulation:
        if self._sim is None:
            raise RuntimeError(f"{type(self).__name__} used before attach()")
        return self._sim

    @property
    def cluster(self) -> ClusterState:
        if self._cluster is None:
            raise RuntimeError(f"{type(self).__name__} used before attach()")
        return self._cluster

    def attach(self, sim: Simulation, cluster: ClusterState, streams: RandomStreams,
               on_unschedulable: UnschedulableCallback) -> None:
        self._sim, self._cluster = sim, cluster
        self.rng = streams.get(f"scheduling.{self.kind}")
        self.on_unschedulable = on_unschedulable
        cluster.on_pod_pending.append(self._pod_pending)
        cluster.on_node_ready.append(self._node_ready)
        cluster.on_pod_evicted.append(self._pod_evicted)
        cluster.on_pod_deleted.append(self._pod_deleted)
        for pod in cluster.pending_pods():
            self.metrics.pod_pending(pod, pod.created_s)
        self.metrics.observe(sim.now_s, cluster)
        if cluster.pending_pods():
            self.request_cycle(sim.now_s)

    def _pod_pending(self, pod: Pod) -> None:
        self.metrics.pod_pending(pod, self.sim.now_s)
        # no observe here: the cycle this requests runs at this same instant and observes first
        self.request_cycle(self.sim.now_s)

    def _pod_evicted(self, pod: Pod, cause: str) -> None:
        self._pod_pending(pod)

    def _node_ready(self, node: Node) -> None:
        self.node_added(node)
        self.request_cycle(self.sim.now_s)

    def node_added(self, node: Node) -> None:
        """Hook: kube-scheduler moves unschedulable pods back to the active queue."""

    def _pod_deleted(self, pod: Pod) -> None:
        """Capacity was freed (scale-down, job end): kube-scheduler requeues unschedulable
        pods on such events, so pending pods get a cycle at this instant."""
        now_s = self.sim.now_s
        self.metrics.observe(now_s, self.cluster)
        if self.cluster.pending_pods():
            self.request_cycle(now_s)

    def request_cycle(self, at_s: float) -> None:
        if at_s >= self._next_cycle_s:
            return  # one is already due at or before then
        self._next_cycle_s = at_s
        self.sim.schedule(at_s, Priority.CONTROLLER, self._run_cycle, at_s)

    def _run_cycle(self, at_s: float) -> None:
        if at_s != self._next_cycle_s:
            return  # superseded by an earlier request
        self._next_cycle_s = math.inf
        now_s = self.sim.now_s
        before = self.cluster.stamp
        quiet = before == self._last_stamp  # nothing changed since the last cycle ended
        if not quiet:
            self.metrics.observe(now_s, self.cluster)
        retry_s = self.cycle(now_s, quiet)
        self._last_stamp = self.cluster.stamp
        if not quiet or self._last_stamp != before:
            self._record_completed_gangs()
            self.metrics.observe(now_s, self.cluster)
        if retry_s is not None and math.isfinite(retry_s):
            self.request_cycle(max(retry_s, now_s))

    def cycle(self, now_s: float, quiet: bool) -> float | None:
        """One cycle; `quiet` = the cluster is unchanged since the previous cycle ended, so a
        scheduler whose decisions depend only on that state may reuse them."""
        raise NotImplementedError

    # -- actions shared by subclasses --------------------------------------------------------
    def bind(self, pod: Pod, node: Node, now_s: float) -> None:
        self.cluster.bind(pod, node, now_s)
        self.metrics.pod_bound(pod, now_s)

    def evict(self, pods: list[Pod], cause: str, counter: str) -> None:
        for pod in pods:
            self.cluster.evict(pod, cause)
        self.metrics.counters[counter] += len(pods)

    def report_unschedulable(self, pods: list[Pod], now_s: float) -> None:
        if pods:
            self.metrics.counters["unschedulable_reports"] += len(pods)
            self.on_unschedulable(pods, now_s)

    def _record_completed_gangs(self) -> None:
        for name, gang in self.metrics.gangs(self.cluster).items():
            if not gang.is_complete:
                self._complete.discard(name)
            elif name not in self._complete:
                self._complete.add(name)
                if len(gang.pods) > 1:
                    nodes = [self.cluster.nodes[n] for p in gang.bound
                             if (n := p.node_name) is not None]
                    self.metrics.gang_placed([n.labels for n in nodes])

    def summary(self) -> dict:
        if self._sim is None:
            return self.metrics.summary(self.kind)
        self.metrics.observe(self.sim.now_s, self.cluster)
        pending = Counter(queue_of(p) for p in self.cluster.pending_pods())
        return self.metrics.summary(self.kind, dict(pending))
