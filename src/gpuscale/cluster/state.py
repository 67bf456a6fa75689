"""The shared cluster state the three layers act on, with a small event bus.

Layers never call each other directly: layer 3 asks for replicas (pods), layer 2 binds pending
pods to nodes, layer 1 adds and removes nodes; each change is announced to listeners, so the
serving engine learns that its pod was bound (start the cold start) or evicted (fail or retry
its in-flight requests) without knowing which layer did it.

Every mutator also advances `stamp`, a monotonic "something changed" counter, as Karpenter's
`state.Cluster` calls `MarkUnconsolidated()` from each of its mutators (pod bound or deleted,
node added, initialized or marked for deletion; karpenter `pkg/controllers/state/cluster.go`,
`MarkUnconsolidated` / `ConsolidationState`). A consumer that skips work while nothing changed
keeps the stamp it last acted on and compares; nobody bumps a version by hand or polls the pod
sets. Deletions are announced like every other change (`on_pod_deleted`), so "a pod was deleted"
reaches the layers one way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from gpuscale.cluster.objects import NVLINK_CLIQUE_LABEL, Node, NodeState, Pod, PodPhase

NodeListener = Callable[[Node], None]
PodListener = Callable[[Pod], None]
EvictionListener = Callable[[Pod, str], None]
ChangeListener = Callable[[], None]


@dataclass
class ClusterState:
    """Nodes and pods by name, plus listeners for the changes other parts react to."""

    nodes: dict[str, Node] = field(default_factory=dict)
    pods: dict[str, Pod] = field(default_factory=dict)
    gone_nodes: list[Node] = field(default_factory=list)  # kept for billing after deletion
    evictions_by_cause: Counter = field(default_factory=Counter)
    on_node_ready: list[NodeListener] = field(default_factory=list)
    on_node_gone: list[NodeListener] = field(default_factory=list)
    on_pod_pending: list[PodListener] = field(default_factory=list)
    on_pod_bound: list[PodListener] = field(default_factory=list)
    on_pod_evicted: list[EvictionListener] = field(default_factory=list)
    on_pod_deleted: list[PodListener] = field(default_factory=list)
    on_changed: list[ChangeListener] = field(default_factory=list)  # after every stamp advance
    stamp: int = 0  # advanced by every mutator; compare, never set
    # Karpenter's nominations (pod -> node it expects the pod on, and since when): kept here,
    # as Karpenter's state.Cluster keeps them (NominateNodeForPod), so changing them advances
    # the stamp like any other change the disruption controller must see.
    nominated: dict[str, set[str]] = field(default_factory=dict)  # node -> pods
    nomination_of: dict[str, str] = field(default_factory=dict)  # pod -> node
    nominated_at_s: dict[str, float] = field(default_factory=dict)  # pod -> when
    # Nodes seen per (instance type, zone, pool) whose NVLink domain spans nodes: the next
    # node's domain index (see `_label_nvlink_domain`).
    domain_fill: Counter = field(default_factory=Counter)

    def mark_changed(self) -> None:
        """Advance the stamp (Karpenter's MarkUnconsolidated); every mutator below calls it."""
        self.stamp += 1
        for listener in self.on_changed:
            listener()

    # -- nodes -------------------------------------------------------------------------------
    def add_node(self, node: Node) -> None:
        if node.name in self.nodes:
            raise ValueError(f"node {node.name} already exists")
        self._label_nvlink_domain(node)
        self.nodes[node.name] = node
        self.mark_changed()

    def _label_nvlink_domain(self, node: Node) -> None:
        """A node of a rack-scale NVLink domain (GB200 NVL72: 18 nodes of 4 GPUs) gets the
        clique label GPU feature discovery sets on real nodes, unless it has one. Assumed:
        a provider fills one domain (rack) before opening the next, nodes of one type, zone
        and pool in launch order; a node's removal frees no place in its domain."""
        it = node.instance_type
        if it.nvlink_domain_gpus <= it.num_gpus or NVLINK_CLIQUE_LABEL in node.labels:
            return
        key = (it.name, node.zone, node.pool)
        index = self.domain_fill[key] // (it.nvlink_domain_gpus // it.num_gpus)
        self.domain_fill[key] += 1
        node.labels[NVLINK_CLIQUE_LABEL] = f"{it.name}-{node.zone}-{node.pool or 'nodes'}-{index}"

    def mark_node_ready(self, node: Node, now_s: float) -> None:
        """GPUs are allocatable from now on (device plugin has advertised them)."""
        node.state = NodeState.READY
        node.ready_s = now_s
        self.mark_changed()
        for listener in self.on_node_ready:
            listener(node)

    def remove_node(self, node: Node, now_s: float, cause: str) -> list[Pod]:
        """Delete a node; its pods are evicted with `cause` and become Pending again.

        Returns the evicted pods (listeners have already been told).
        """
        evicted = [self.pods[name] for name in list(node.pod_names) if name in self.pods]
        for pod in evicted:
            self.evict(pod, cause)
        node.state = NodeState.GONE
        node.deleted_s = now_s
        del self.nodes[node.name]
        self.gone_nodes.append(node)
        for pod_name in self.nominated.pop(node.name, set()):
            self.nomination_of.pop(pod_name, None)
            self.nominated_at_s.pop(pod_name, None)
        self.mark_changed()
        for listener in self.on_node_gone:
            listener(node)
        return evicted

    def mark_for_deletion(self, node: Node) -> None:
        """Taint a node that is about to go (karpenter.sh/disrupted:NoSchedule): no new pods."""
        node.state = NodeState.DRAINING
        self.mark_changed()

    def unmark_for_deletion(self, node: Node) -> None:
        """Take the taint off again (a replacement failed to launch)."""
        node.state = NodeState.READY
        self.mark_changed()

    # -- nominations (Karpenter) ---------------------------------------------------------------
    def nominate(self, node_name: str, pod_name: str, now_s: float) -> None:
        self.nominated.setdefault(node_name, set()).add(pod_name)
        self.nomination_of[pod_name] = node_name
        self.nominated_at_s[pod_name] = now_s
        self.mark_changed()

    def clear_nomination(self, pod_name: str) -> None:
        node_name = self.nomination_of.pop(pod_name, None)
        self.nominated_at_s.pop(pod_name, None)
        if node_name is not None:
            self.nominated.get(node_name, set()).discard(pod_name)
            self.mark_changed()

    # -- pods --------------------------------------------------------------------------------
    def add_pod(self, pod: Pod) -> None:
        if pod.name in self.pods:
            raise ValueError(f"pod {pod.name} already exists")
        self.pods[pod.name] = pod
        self.mark_changed()
        for listener in self.on_pod_pending:
            listener(pod)

    def bind(self, pod: Pod, node: Node, now_s: float) -> None:
        if pod.node_name is not None:
            raise ValueError(f"pod {pod.name} is already bound to {pod.node_name}")
        if node.state is not NodeState.READY or pod.gpus > node.gpus_free:
            raise ValueError(f"pod {pod.name} ({pod.gpus} GPUs) does not fit on {node.name}")
        node.gpus_allocated += pod.gpus
        node.pod_names.append(pod.name)
        pod.node_name = node.name
        pod.phase = PodPhase.RUNNING
        pod.bound_s = now_s
        self.mark_changed()
        for listener in self.on_pod_bound:
            listener(pod)

    def _release(self, pod: Pod) -> None:
        if pod.node_name is None:
            return
        node = self.nodes.get(pod.node_name)
        if node is not None:
            node.gpus_allocated -= pod.gpus
            node.pod_names.remove(pod.name)
        pod.node_name = None

    def evict(self, pod: Pod, cause: str) -> None:
        """Take a pod off its node; it stays in the cluster as Pending (its controller's
        ReplicaSet would recreate it) and listeners decide what happens to its work."""
        self._release(pod)
        pod.phase = PodPhase.PENDING
        pod.bound_s = None
        self.evictions_by_cause[cause] += 1
        self.mark_changed()
        for listener in self.on_pod_evicted:
            listener(pod, cause)

    def delete_pod(self, pod: Pod) -> None:
        """Remove a pod for good (scale-down); frees its GPUs."""
        self.delete_pods([pod])

    def delete_pods(self, pods: list[Pod]) -> None:
        """Remove pods that go together (a job's pods at its end): all are freed before any
        listener hears of one, so listeners see the state after the whole deletion."""
        for pod in pods:
            self._release(pod)
            pod.phase = PodPhase.SUCCEEDED
            self.pods.pop(pod.name, None)
        self.mark_changed()
        for pod in pods:
            for listener in self.on_pod_deleted:
                listener(pod)

    def pending_pods(self) -> list[Pod]:
        return [
            p for p in self.pods.values() if p.node_name is None and p.phase is PodPhase.PENDING
        ]

    def ready_nodes(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.state is NodeState.READY]

    def gpus_allocated(self) -> int:
        return sum(n.gpus_allocated for n in self.nodes.values())
