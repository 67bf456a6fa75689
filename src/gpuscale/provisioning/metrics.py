"""What layer 1 reports: provisioning wait, node counts over time, evictions, GPU-hours, cost.

Definitions (the `nodes` key of a run summary):
- provisioning wait: for each pod that layer 2 marked unschedulable and that later bound,
  max(0, ready time of the node it bound to - first time it was marked unschedulable). A pod
  that bound to a node that was already ready (capacity freed elsewhere) waited 0 for nodes.
- nodes by state: counts of launching / registered / ready / draining nodes after each change,
  consecutive duplicates dropped and thinned to at most `MAX_SAMPLES` points.
- GPU-hours and cost: per capacity type, over every node this provider created, billed from
  creation (the launch request) to deletion, as clouds bill a booting VM.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import numpy as np

from gpuscale.cluster.objects import Node, NodeState, Pod
from gpuscale.cluster.state import ClusterState
from gpuscale.core import Simulation
from gpuscale.metrics.store import percentile_linear
from gpuscale.units import SECONDS_PER_HOUR

MAX_SAMPLES = 1000
_STATES = (NodeState.LAUNCHING, NodeState.REGISTERED, NodeState.READY, NodeState.DRAINING)


class NodeMetrics:
    """Collects layer-1 figures for the nodes one provider owns."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.sim: Simulation | None = None
        self.cluster: ClusterState | None = None
        self.nodes: list[Node] = []
        self.node_names: set[str] = set()
        self.unschedulable_since_s: dict[str, float] = {}
        self.waits_s: list[float] = []
        self.evictions: Counter = Counter()
        self.failures: Counter = Counter()  # NodeClaims / nodes that never became ready, by cause
        self.events: Counter = Counter()  # scale-ups, consolidations, ... by name
        self.samples: list[tuple[float, int, int, int, int]] = []

    def attach(self, sim: Simulation, cluster: ClusterState) -> None:
        self.sim, self.cluster = sim, cluster
        cluster.on_pod_bound.append(self._pod_bound)
        cluster.on_node_ready.append(lambda node: self.sample())
        cluster.on_node_gone.append(lambda node: self.sample())

    def node_created(self, node: Node) -> None:
        self.nodes.append(node)
        self.node_names.add(node.name)
        self.sample()

    def pods_unschedulable(self, pods: list[Pod], now_s: float) -> list[Pod]:
        """Record first-unschedulable times; returns the pods not seen before."""
        new = [p for p in pods if p.name not in self.unschedulable_since_s]
        for pod in new:
            self.unschedulable_since_s[pod.name] = now_s
        return new

    def prune(self) -> None:
        """Forget unschedulable pods that were deleted while pending (a scale-down)."""
        pods = self.cluster.pods if self.cluster is not None else {}
        for name in [n for n in self.unschedulable_since_s if n not in pods]:
            del self.unschedulable_since_s[name]

    def evicted(self, cause: str, count: int = 1) -> None:
        self.evictions[cause] += count

    def _pod_bound(self, pod: Pod) -> None:
        since = self.unschedulable_since_s.pop(pod.name, None)
        if since is None or self.cluster is None:
            return
        node = self.cluster.nodes.get(pod.node_name or "")
        ready_s = node.ready_s if node is not None and node.ready_s is not None else since
        self.waits_s.append(max(0.0, ready_s - since))

    def sample(self) -> None:
        if self.sim is None:
            return
        counts = Counter(n.state for n in self.nodes)
        launching, registered, ready, draining = (counts[s] for s in _STATES)
        row = (self.sim.now_s, launching, registered, ready, draining)
        if self.samples and self.samples[-1][1:] == row[1:]:
            return
        if self.samples and self.samples[-1][0] == row[0]:
            self.samples[-1] = row  # several changes in one instant: keep the settled counts
        else:
            self.samples.append(row)

    def summary(self, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        now_s = self.sim.now_s if self.sim is not None else 0.0
        gpu_hours: dict[str, float] = defaultdict(float)
        cost: dict[str, float] = defaultdict(float)
        for node in self.nodes:
            hours = node.billed_s(now_s) / SECONDS_PER_HOUR
            gpu_hours[node.capacity_type] += hours * node.num_gpus
            cost[node.capacity_type] += hours * node.price_usd_per_hour
        samples = self.samples
        if len(samples) > MAX_SAMPLES:
            idx = np.linspace(0, len(samples) - 1, MAX_SAMPLES).round().astype(int)
            samples = [samples[i] for i in idx]
        waits = np.asarray(self.waits_s, dtype=float)
        out: dict[str, Any] = {
            "provider": self.kind,
            "provisioning_wait_s": {
                "count": int(waits.size),
                # percentile_linear: np.percentile's float without its numpy.ma import
                "p50": percentile_linear(self.waits_s, 50) if waits.size else None,
                "p99": percentile_linear(self.waits_s, 99) if waits.size else None,
                "max": float(waits.max()) if waits.size else None,
            },
            "nodes_by_state": {
                "t_s": [round(s[0], 3) for s in samples],
                **{state.value: [s[i + 1] for s in samples] for i, state in enumerate(_STATES)},
            },
            "nodes_created": len(self.nodes),
            "evictions_by_cause": dict(sorted(self.evictions.items())),
            "failures_by_cause": dict(sorted(self.failures.items())),
            "events": dict(sorted(self.events.items())),
            "gpu_hours_by_capacity_type": {k: round(v, 6) for k, v in sorted(gpu_hours.items())},
            "cost_usd_by_capacity_type": {k: round(v, 6) for k, v in sorted(cost.items())},
            "cost_usd_total": round(sum(cost.values()), 6),
        }
        if extra:
            out.update(extra)
        return out
