"""Cluster Autoscaler: node groups, a 10 s scan, simulated scale-up, timed scale-down.

Each scan (reference layer1-node-provisioning.md section 2):
1. Scale-up. Unschedulable pods (priority >= the expendable cutoff) are first fitted onto
   spare room of ready nodes and onto upcoming nodes (launching, and registered GPU nodes whose
   GPUs are not yet allocatable when the group carries the GPU label); for each remaining
   group a first-fit-decreasing estimate on template nodes gives an option; the expander
   chain picks one; that group grows. A node not ready within `max_node_provision_time_s` is
   removed and its group backs off (5 min doubling to 30 min).
2. Scale-down (skipped in a loop that scaled up). A ready node above its group's min size is
   unneeded while its utilization (GPU nodes: GPU requests / GPUs; others: max of CPU and
   memory) is under the threshold and its pods fit on other nodes. After
   `scale_down_unneeded_time_s` and outside the cool-downs (after add, delete, failure) empty
   nodes go (up to 10 at once) and non-empty ones are drained one at a time.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from gpuscale.catalog import get_instance_type
from gpuscale.cluster.objects import Node, NodeState, Pod, PodPhase
from gpuscale.cluster.state import ClusterState
from gpuscale.core import Priority, RandomStreams, Simulation
from gpuscale.provisioning import capacity_buffer
from gpuscale.provisioning.base import AdoptsNoNodes
from gpuscale.provisioning.cluster_autoscaler.expanders import Option, choose
from gpuscale.provisioning.cluster_autoscaler.params import ClusterAutoscalerParams, NodeGroupParams
from gpuscale.provisioning.disruption_budget import can_evict_all
from gpuscale.provisioning.fit import (
    Bin,
    capacity_of,
    first_fit,
    node_bin,
    node_utilization_frac,
    pod_priority_order,
)
from gpuscale.provisioning.lifecycle import NodeLauncher
from gpuscale.provisioning.metrics import NodeMetrics
from gpuscale.provisioning.nodes import make_node
from gpuscale.provisioning.spot import SpotInterrupter

GROUP_LABEL = "eks.amazonaws.com/nodegroup"
GPU_LABEL = "k8s.amazonaws.com/accelerator"  # AWS provider GPU label (reference 2.4)
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
CAUSE = "scale_down"


class ClusterAutoscalerProvider(AdoptsNoNodes):
    kind = "cluster_autoscaler"

    def __init__(self, params: ClusterAutoscalerParams) -> None:
        self.params = params
        self.groups = {g.name: g for g in params.node_groups}
        self.metrics = NodeMetrics(self.kind)
        self.unneeded_since_s: dict[str, float] = {}
        self.backoff_until_s: dict[str, float] = {}
        self.backoff_s: dict[str, float] = {}
        self.draining: set[str] = set()
        self.last_scale_up_s = -math.inf
        self.last_delete_s = -math.inf
        self.last_failure_s = -math.inf
        self._seq = 0

    def attach(self, sim: Simulation, cluster: ClusterState, streams: RandomStreams) -> None:
        self.sim, self.cluster = sim, cluster
        self.rng = streams.get("provisioning.cluster_autoscaler")
        self.metrics.attach(sim, cluster)
        self.launcher = NodeLauncher(
            sim, cluster, self.metrics, streams.get("provisioning.cluster_autoscaler.latency"),
            registration_timeout_s=self.params.max_node_provision_time_s,
            on_ready=self._node_ready, on_failed=self._node_failed)
        self.spot = SpotInterrupter(self.params.spot, sim, cluster, self.metrics, streams)
        for group in self.params.node_groups:
            for _ in range(group.min_size):
                node = self._new_node(group)
                self.launcher.add_ready(node)
                self.spot.node_launched(node)  # warm spot nodes are interrupted too
        sim.every(self.params.scan_interval_s, Priority.CONTROLLER, self.scan)
        if self.params.capacity_buffers:
            # After the engine's t=0 set-up (not in the warm floor that has the image), before
            # the first scheduling cycle: a cluster that has run with the buffer has its nodes.
            sim.schedule(0.0, Priority.LIFECYCLE, self._buffer_at_start)

    def notify_unschedulable(self, pods: list[Pod], now_s: float) -> None:
        self.metrics.pods_unschedulable(pods, now_s)

    def summary(self) -> dict[str, Any]:
        return self.metrics.summary()

    # -- nodes ---------------------------------------------------------------------------------
    def _new_node(self, group: NodeGroupParams) -> Node:
        itype = get_instance_type(group.instance_type)
        zones = group.zones or list(itype.zones)
        self._seq += 1
        labels = dict(group.labels)
        if group.gpu_label and itype.num_gpus:
            labels[GPU_LABEL] = itype.gpu.lower()
        node = make_node(f"{group.name}-{self._seq:05d}", itype, zones[self._seq % len(zones)],
                         group.capacity_type, group.name, labels,
                         tuple(t.to_taint() for t in group.taints), pool_label=GROUP_LABEL)
        return node

    def group_nodes(self, name: str) -> list[Node]:
        return [n for n in self.cluster.nodes.values()
                if n.pool == name and n.name in self.metrics.node_names
                and n.state is not NodeState.DRAINING]

    def _node_ready(self, node: Node) -> None:
        self.backoff_s.pop(node.pool, None)

    def _node_failed(self, node: Node, cause: str) -> None:
        backoff = self.backoff_s.get(node.pool, self.params.initial_backoff_s / 2) * 2
        backoff = min(max(backoff, self.params.initial_backoff_s), self.params.max_backoff_s)
        self.backoff_s[node.pool] = backoff
        self.backoff_until_s[node.pool] = self.sim.now_s + backoff
        self.last_failure_s = self.sim.now_s

    # -- the loop ------------------------------------------------------------------------------
    def scan(self, now_s: float) -> None:
        self.metrics.prune()
        scaled_up = self.scale_up(now_s)
        self.update_unneeded(now_s)
        if self.params.scale_down_enabled and not scaled_up:
            self.scale_down(now_s)

    def _upcoming(self, node: Node) -> bool:
        if node.state is NodeState.LAUNCHING:
            return True
        group = self.groups.get(node.pool)
        return node.state is NodeState.REGISTERED and group is not None and group.gpu_label

    def _pending(self, now_s: float) -> list[Pod]:
        out = []
        for name, since_s in self.metrics.unschedulable_since_s.items():
            pod = self.cluster.pods.get(name)
            if (pod is not None and pod.node_name is None and pod.phase is PodPhase.PENDING
                    and pod.priority >= self.params.expendable_pods_priority_cutoff
                    and now_s - since_s >= self.params.new_pod_scale_up_delay_s):
                out.append(pod)
        return out

    # -- capacity buffers (provisioning/capacity_buffer.py) -------------------------------------
    def buffer_pods(self) -> list[Pod]:
        if not self.params.capacity_buffers:
            return []
        return capacity_buffer.virtual_pods(list(self.params.capacity_buffers), self.cluster)

    def _buffer_at_start(self) -> None:
        """The buffer's nodes, ready at t=0, as the scale-up simulation would choose them."""
        now_s = self.sim.now_s
        bins = [node_bin(n, self.cluster) for n in self.cluster.nodes.values()
                if n.state is NodeState.READY]
        first_fit(pod_priority_order(self.cluster.pending_pods()), bins)
        leftover = capacity_buffer.unplaced(self.buffer_pods(), bins)
        option = self._option(leftover, now_s) if leftover else None
        for _ in range(option.node_count if option is not None else 0):
            assert option is not None
            node = self._new_node(option.group)
            self.launcher.add_ready(node)
            self.spot.node_launched(node)
            self.metrics.events["buffer_nodes_at_start"] += 1

    def _option(self, pods: list[Pod], now_s: float) -> Option | None:
        options = [o for g in self.params.node_groups
                   if (o := self.estimate(g, pods, now_s)) is not None]
        return choose(options, self.params.expanders, self.params.priorities, self.rng)

    def scale_up(self, now_s: float) -> bool:
        pods = pod_priority_order(self._pending(now_s))
        virtual = self.buffer_pods()
        if not pods and not virtual:
            return False
        bins = [node_bin(n, self.cluster) for n in self.cluster.nodes.values()
                if n.state is NodeState.READY and n.name not in self.draining]
        bins += [Bin(n.name, n.labels, n.taints, capacity_of(n.instance_type))
                 for n in self.cluster.nodes.values() if self._upcoming(n)]
        leftover = first_fit(pods, bins)
        # Buffer pods are injected as pending pods after the real ones (CA's buffer pod list
        # processor), so a scale-up also restores room real pods took.
        leftover += capacity_buffer.unplaced(virtual, bins)
        if not leftover:
            return False
        option = self._option(leftover, now_s)
        if option is None:
            return False
        for _ in range(option.node_count):
            node = self._new_node(option.group)
            self.launcher.launch(node, self.params.node_latencies)
            self.spot.node_launched(node)
        self.metrics.events["scale_ups"] += 1
        self.metrics.events["nodes_added"] += option.node_count
        self.last_scale_up_s = now_s
        return True

    def estimate(self, group: NodeGroupParams, pods: list[Pod], now_s: float) -> Option | None:
        """First-fit-decreasing bin packing on template nodes
        (estimator/binpacking_estimator.go)."""
        if self.backoff_until_s.get(group.name, -math.inf) > now_s:
            return None
        room = min(group.max_size - len(self.group_nodes(group.name)),
                   self.params.max_nodes_per_scaleup)
        template = self._new_node(group)
        self._seq -= 1  # the template is not a real node
        bins: list[Bin] = []
        helped = []
        for pod in pods:
            if any(b.try_add(pod) for b in bins):
                helped.append(pod)
                continue
            if len(bins) >= room:
                continue
            fresh = Bin(f"template-{len(bins)}", template.labels, template.taints,
                        capacity_of(template.instance_type))
            if fresh.try_add(pod):
                bins.append(fresh)
                helped.append(pod)
        return Option(group, len(bins), helped) if bins else None

    # -- scale-down ----------------------------------------------------------------------------
    def _threshold(self, node: Node) -> float:
        if node.num_gpus:
            return self.params.scale_down_gpu_utilization_threshold
        return self.params.scale_down_utilization_threshold

    def _blocked(self, node: Node) -> bool:
        if node.annotations.get(SCALE_DOWN_DISABLED) == "true":
            return True
        return any(self.cluster.pods[p].annotations.get(SAFE_TO_EVICT) == "false"
                   for p in node.pod_names if p in self.cluster.pods)

    def update_unneeded(self, now_s: float) -> None:
        """Mark nodes unneeded, simulating their pods onto the nodes that stay."""
        removing: set[str] = set(self.draining)
        planned: Counter = Counter()  # PDB name -> evictions this pass already counts
        virtual = self.buffer_pods()
        before = len(capacity_buffer.unplaced(virtual, self._stay_bins(removing, None))) \
            if virtual else 0
        spare_by_group = {g: len(self.group_nodes(g)) - self.groups[g].min_size
                          for g in self.groups}
        still: dict[str, float] = {}
        nodes = sorted((n for n in self.cluster.nodes.values()
                        if n.name in self.metrics.node_names and n.state is NodeState.READY
                        and n.name not in self.draining),
                       key=lambda n: (node_utilization_frac(n, self.cluster), n.name))
        for node in nodes:
            if (spare_by_group.get(node.pool, 0) <= 0 or self._blocked(node)
                    or node_utilization_frac(node, self.cluster) >= self._threshold(node)):
                continue
            pods = [self.cluster.pods[p] for p in node.pod_names if p in self.cluster.pods]
            others = self._stay_bins(removing, node.name)
            if first_fit(pod_priority_order(pods), others):
                continue
            if virtual and len(capacity_buffer.unplaced(virtual, others)) > before:
                continue  # the node holds buffer room that fits nowhere else
            pdbs = self.params.pod_disruption_budgets
            if pdbs and not can_evict_all(pdbs, pods, self.cluster, planned):
                continue  # a PDB would refuse an eviction (drain simulation, pkg/FAQ.md)
            removing.add(node.name)
            spare_by_group[node.pool] -= 1
            still[node.name] = self.unneeded_since_s.get(node.name, now_s)
        self.unneeded_since_s = still

    def _stay_bins(self, removing: set[str], also: str | None) -> list[Bin]:
        return [node_bin(n, self.cluster) for n in self.cluster.nodes.values()
                if n.state is NodeState.READY and n.name not in removing and n.name != also]

    def _in_cooldown(self, now_s: float) -> bool:
        p = self.params
        return (now_s < self.last_scale_up_s + p.scale_down_delay_after_add_s
                or now_s < self.last_delete_s + p.scale_down_delay_after_delete_s
                or now_s < self.last_failure_s + p.scale_down_delay_after_failure_s)

    def scale_down(self, now_s: float) -> None:
        if self._in_cooldown(now_s):
            return
        ripe = [self.cluster.nodes[n] for n, since_s in sorted(self.unneeded_since_s.items())
                if now_s - since_s >= self.params.scale_down_unneeded_time_s
                and n in self.cluster.nodes]
        empty = [n for n in ripe if not n.pod_names][: self.params.max_scale_down_parallelism]
        busy = [n for n in ripe if n.pod_names]
        for node in empty:
            self._remove(node, now_s)
        slots = self.params.max_drain_parallelism - len(self.draining)
        pdbs = self.params.pod_disruption_budgets
        planned: Counter = Counter()
        for node in busy[: max(0, slots)]:
            pods = [self.cluster.pods[p] for p in node.pod_names if p in self.cluster.pods]
            if pdbs and not can_evict_all(pdbs, pods, self.cluster, planned):
                continue  # budgets changed since the node became unneeded; retried next scan
            self._drain(node, now_s)

    def _remove(self, node: Node, now_s: float) -> None:
        self.unneeded_since_s.pop(node.name, None)
        self.cluster.remove_node(node, now_s, CAUSE)
        self.metrics.events["nodes_removed"] += 1
        self.last_delete_s = now_s

    def _drain(self, node: Node, now_s: float) -> None:
        self.cluster.mark_for_deletion(node)
        self.draining.add(node.name)
        self.unneeded_since_s.pop(node.name, None)
        pods = [self.cluster.pods[p] for p in list(node.pod_names) if p in self.cluster.pods]
        for pod in pods:
            self.cluster.evict(pod, CAUSE)
        self.metrics.evicted(CAUSE, len(pods))
        self.metrics.sample()
        self.sim.schedule(now_s + self.params.drain_duration_s, Priority.LIFECYCLE,
                          self._drained, node)

    def _drained(self, node: Node) -> None:
        self.draining.discard(node.name)
        if self.cluster.nodes.get(node.name) is node:
            self._remove(node, self.sim.now_s)
