"""Karpenter: batching of unschedulable pods, NodeClaim launch, nominations, drains.

Reacts only to pods layer 2 marked unschedulable (reference layer1-node-provisioning.md 1.1).
A batch window opens on the first newly unschedulable pod and closes after `batch_idle_s`
without a new one or `batch_max_s` after it opened (1 s / 10 s, reference 1.2). Each planned
NodeClaim launches one node; the offering is the first capacity type in the order reserved,
spot, on-demand with an available offering, then the cheapest (reference 1.3). An
insufficient-capacity error blocks that (type, zone, capacity type) for 3 min and the next
offering is tried, as one EC2 CreateFleet call falls through its overrides.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from gpuscale.cluster.objects import Node, NodeState, Pod, PodPhase
from gpuscale.cluster.state import ClusterState
from gpuscale.core import Priority, RandomStreams, Simulation
from gpuscale.provisioning import capacity_buffer
from gpuscale.provisioning.disruption_budget import may_evict
from gpuscale.provisioning.fit import (
    IN_FLIGHT,
    Bin,
    Resources,
    first_fit,
    node_bin,
    pod_priority_order,
    sum_requests,
)
from gpuscale.provisioning.karpenter.nodepool import (
    NodePoolParams,
    Offering,
    order_by_weight,
    pool_offerings,
    pool_taints,
)
from gpuscale.provisioning.karpenter.params import KarpenterParams
from gpuscale.provisioning.karpenter.scheduling import ClaimPlan, PoolCapacity, schedule_pods
from gpuscale.provisioning.lifecycle import NodeLauncher
from gpuscale.provisioning.metrics import NodeMetrics
from gpuscale.provisioning.nodes import CAPACITY_TYPE_RANK, make_node
from gpuscale.provisioning.pods import do_not_disrupt_active
from gpuscale.provisioning.spot import SpotInterrupter
from gpuscale.units import parse_duration_s


class KarpenterProvider:
    kind = "karpenter"

    def __init__(self, params: KarpenterParams) -> None:
        self.params = params
        # Read-only views, as DisruptionHost declares them.
        self.pools: Mapping[str, NodePoolParams] = {p.name: p for p in params.node_pools}
        self.pools_by_weight: Sequence[NodePoolParams] = order_by_weight(list(params.node_pools))
        self._offerings = {p.name: pool_offerings(p) for p in params.node_pools}
        self.metrics = NodeMetrics(self.kind)
        self.blocked_until_s: dict[tuple[str, str, str], float] = {}  # offering key -> time
        self.deleting: set[str] = set()  # nodes chosen for disruption
        self.draining: dict[str, tuple[str, float]] = {}  # node -> (cause, force deadline)
        self.replacing: dict[str, list[Node]] = {}  # replacement node -> nodes it replaces
        self._window: tuple[float, float] | None = None  # (opened_s, last_arrival_s)
        self._outage_launches: Counter = Counter()  # outage index -> launches inside it
        self._seq = 0

    # Nominations live in ClusterState (as in Karpenter's state.Cluster), so that changing
    # them advances its stamp; these read them.
    @property
    def nominated(self) -> dict[str, set[str]]:
        """node -> pods Karpenter expects to land there."""
        return self.cluster.nominated

    @property
    def nomination_of(self) -> dict[str, str]:
        """pod -> the node it is nominated to."""
        return self.cluster.nomination_of

    @property
    def nominated_at_s(self) -> dict[str, float]:
        """pod -> when it was nominated."""
        return self.cluster.nominated_at_s

    # -- wiring --------------------------------------------------------------------------------
    def attach(self, sim: Simulation, cluster: ClusterState, streams: RandomStreams) -> None:
        from gpuscale.provisioning.karpenter.disruption import DisruptionController

        self.sim, self.cluster = sim, cluster
        self.rng = streams.get("provisioning.karpenter")
        self.metrics.attach(sim, cluster)
        self.launcher = NodeLauncher(
            sim, cluster, self.metrics, streams.get("provisioning.karpenter.latency"),
            launch_timeout_s=self.params.launch_timeout_s,
            registration_timeout_s=self.params.registration_timeout_s,
            on_ready=self._node_ready, on_failed=self._node_failed)
        self.spot = SpotInterrupter(self.params.spot, sim, cluster, self.metrics, streams,
                                    on_interrupted=lambda node: self.deleting.add(node.name))
        self.disruption = DisruptionController(self)
        cluster.on_pod_bound.append(self._pod_bound)
        cluster.on_pod_evicted.append(self._pod_evicted)
        cluster.on_pod_deleted.append(self._pod_deleted)
        cluster.on_node_gone.append(self._node_gone)
        sim.every(self.params.disruption_period_s, Priority.CONTROLLER, self._disruption_tick)
        if self.params.capacity_buffers:
            # After the engine's t=0 set-up (so not part of the warm floor that has the image)
            # and before the first scheduling cycle.
            sim.schedule(0.0, Priority.LIFECYCLE, self._buffer_at_start)

    def _disruption_tick(self, now_s: float) -> None:
        """The provider's own upkeep, then one pass of the disruption methods."""
        self.metrics.prune()
        self.expire_nominations(now_s)
        for name in list(self.draining):
            node = self.cluster.nodes.get(name)
            if node is not None:
                self.drain_step(node)
        if self.params.capacity_buffers:
            self.provision_buffer(now_s)
        self.disruption.tick(now_s)

    def adopt_ready_nodes(self, count: int, instance_type, capacity_type: str = "on-demand",
                          pool_name: str | None = None, group_nodes: int = 1) -> list[Node]:
        """Nodes that already run at t=0 (a cluster at its warm floor), owned by a NodePool
        (the heaviest by default), so disruption treats them like the nodes it launched.
        They take the zones the pool may launch the type in (its requirements; else the
        type's) in turn, a replica's `group_nodes` together: the gang of a replica spanning
        nodes needs one zone (sim/replica_pods.py), and the nodes launched for it would share
        one; spread node by node, a warm floor of two 2-node replicas left the second
        unplaceable and the NodePool's GPU limit already reached."""
        pool = self.pools[pool_name] if pool_name else self.pools_by_weight[0]
        zones = tuple(dict.fromkeys(
            o.zone for o in self._offerings[pool.name]
            if o.instance_type.name == instance_type.name and o.capacity_type == capacity_type
        )) or instance_type.zones
        nodes = []
        first, group = self._seq, max(1, group_nodes)
        for i in range(count):
            self._seq += 1
            zone = zones[(first + i // group) % len(zones)]
            node = make_node(f"{pool.name}-warm-{self._seq}", instance_type, zone, capacity_type,
                             pool.name, pool.labels, pool_taints(pool))
            self.launcher.add_ready(node)
            # A warm spot node is as exposed as a launched one: the time to interruption is
            # memoryless, so drawing it from t=0 is exact for a node of unknown age.
            self.spot.node_launched(node)
            nodes.append(node)
        return nodes

    def notify_unschedulable(self, pods: list[Pod], now_s: float) -> None:
        if self.metrics.pods_unschedulable(pods, now_s):
            self._trigger(now_s)

    def summary(self) -> dict[str, Any]:
        return self.metrics.summary()

    # -- batching ------------------------------------------------------------------------------
    def _trigger(self, now_s: float) -> None:
        if self._window is None:
            self._window = (now_s, now_s)
            self.sim.schedule(now_s + self.params.batch_idle_s, Priority.CONTROLLER,
                              self._check_window)
        else:
            self._window = (self._window[0], now_s)

    def _check_window(self) -> None:
        assert self._window is not None  # scheduled only by _trigger, which opens the window
        opened_s, last_s = self._window
        now_s = self.sim.now_s
        close_s = min(last_s + self.params.batch_idle_s, opened_s + self.params.batch_max_s)
        if now_s + 1e-9 < close_s:
            self.sim.schedule(close_s, Priority.CONTROLLER, self._check_window)
            return
        self._window = None
        self.metrics.events["batches"] += 1
        self.provision(now_s)

    # -- provisioning --------------------------------------------------------------------------
    def _waiting_pods(self) -> list[Pod]:
        out = []
        for name in self.metrics.unschedulable_since_s:
            pod = self.cluster.pods.get(name)
            if (pod is not None and pod.node_name is None and pod.phase is PodPhase.PENDING
                    and name not in self.nomination_of):
                out.append(pod)
        return out

    def live_bins(self, exclude: AbstractSet[str] = frozenset()) -> list[Bin]:
        """Spare capacity of every ready or in-flight node not being disrupted."""
        bins = []
        for node in self.cluster.nodes.values():
            if node.name in exclude or node.name in self.deleting:
                continue
            if node.state is NodeState.READY or node.state in IN_FLIGHT:
                reserved = sum_requests(self.cluster.pods[p] for p in self.nominated.get(
                    node.name, ()) if p in self.cluster.pods)
                bins.append(node_bin(node, self.cluster, reserved))
        return bins

    def available_offerings(self, pool: NodePoolParams, now_s: float) -> list[Offering]:
        return [o for o in self._offerings[pool.name]
                if self.blocked_until_s.get(o.key, -math.inf) <= now_s]

    def pool_capacity(self, pool: NodePoolParams, now_s: float) -> PoolCapacity:
        caps, max_nodes = pool.limit_resources()
        nodes = [n for n in self.cluster.nodes.values() if n.pool == pool.name
                 and n.name in self.metrics.node_names]
        room = None
        if caps is not None:
            used = Resources()
            for node in nodes:
                used = used + Resources(node.num_gpus, node.instance_type.vcpus * 1000,
                                        int(node.instance_type.memory_gib * 1024))
            room = caps - used
        room_nodes = None if max_nodes is None else max_nodes - len(nodes)
        return PoolCapacity(pool, self.available_offerings(pool, now_s), room, room_nodes)

    def provision(self, now_s: float) -> None:
        pods = self._waiting_pods()
        if not pods:
            return
        pools = [self.pool_capacity(p, now_s) for p in self.pools_by_weight]
        result = schedule_pods(pods, self.live_bins(), pools)
        for node_name, node_pods in result.existing.items():
            self._nominate(node_name, node_pods)
        for plan in result.new_claims:
            self.launch_claim(plan, now_s)
        self.metrics.events["pods_unplaceable"] += len(result.unplaceable)

    # -- capacity buffers (provisioning/capacity_buffer.py) -------------------------------------
    def buffer_pods(self) -> list[Pod]:
        if not self.params.capacity_buffers:
            return []
        return capacity_buffer.virtual_pods(list(self.params.capacity_buffers), self.cluster)

    def unplaced_buffer(self, exclude: AbstractSet[str] = frozenset()) -> list[Pod]:
        """Virtual pods with no room on the live nodes (less `exclude`) once the pending real
        pods that no node is nominated for took theirs: real pods always come first."""
        pods = self.buffer_pods()
        if not pods:
            return []
        bins = self.live_bins(exclude)
        waiting = [p for p in self.cluster.pending_pods() if p.name not in self.nomination_of]
        first_fit(pod_priority_order(waiting), bins)
        return capacity_buffer.unplaced(pods, bins)

    def _buffer_plans(self, now_s: float) -> list[ClaimPlan]:
        leftover = self.unplaced_buffer()
        if not leftover:
            return []
        pools = [self.pool_capacity(p, now_s) for p in self.pools_by_weight]
        result = schedule_pods(leftover, [], pools)
        if result.unplaceable:
            self.metrics.events["buffer_unplaceable_checks"] += 1
        # Virtual pods are never nominated: the claim's empty room is what holds them.
        return [ClaimPlan(plan.pool, plan.offerings) for plan in result.new_claims]

    def _buffer_at_start(self) -> None:
        """The buffer's nodes as a cluster that has run with it has them: ready at t=0."""
        now_s = self.sim.now_s
        for plan in self._buffer_plans(now_s):
            picked = self._pick(plan.offerings, now_s)
            if not picked:
                continue
            offering = picked[0]
            self._seq += 1
            node = make_node(f"{plan.pool.name}-buffer-{self._seq:05d}", offering.instance_type,
                             offering.zone, offering.capacity_type, plan.pool.name,
                             plan.pool.node_labels(), pool_taints(plan.pool))
            self.launcher.add_ready(node)
            self.spot.node_launched(node)
            if math.isfinite(plan.pool.expire_after_s):
                self.sim.schedule(now_s + plan.pool.expire_after_s, Priority.CONTROLLER,
                                  self._expire, node)
            self.metrics.events["buffer_nodes_at_start"] += 1

    def provision_buffer(self, now_s: float) -> None:
        """Launch claims for the virtual pods that lost their room (real pods took it)."""
        for plan in self._buffer_plans(now_s):
            if self.launch_claim(plan, now_s) is not None:
                self.metrics.events["buffer_nodeclaims_launched"] += 1

    # -- what the disruption controller uses (DisruptionHost) --------------------------------
    def owns(self, node: Node) -> bool:
        return node.name in self.metrics.node_names

    def is_deleting(self, node_name: str) -> bool:
        return node_name in self.deleting

    def blocked_offerings(self, now_s: float) -> int:
        return sum(1 for until_s in self.blocked_until_s.values() if until_s > now_s)

    def launch_price_usd_per_hour(self, offerings: list[Offering], now_s: float) -> float:
        """The price `launch_claim` would try first: the best capacity type, then the lowest
        price. Ties at that price are broken at random only when launching; they all have
        this price, so the check needs no draw and leaves the launch stream alone."""
        usable = [o for o in offerings if self.blocked_until_s.get(o.key, -math.inf) <= now_s]
        best = min(usable, key=lambda o: (CAPACITY_TYPE_RANK[o.capacity_type],
                                          o.price_usd_per_hour))
        return best.price_usd_per_hour

    def mark_for_deletion(self, nodes: list[Node]) -> None:
        for node in nodes:
            self.deleting.add(node.name)
            self.cluster.mark_for_deletion(node)
        self.metrics.sample()

    def unmark_for_deletion(self, nodes: list[Node]) -> None:
        for node in nodes:
            self.deleting.discard(node.name)
            self.cluster.unmark_for_deletion(node)
        self.metrics.sample()

    def launch_replacement(self, plan: ClaimPlan, replaced: list[Node],
                           now_s: float) -> Node | None:
        node = self.launch_claim(plan, now_s)
        if node is not None:
            self.replacing[node.name] = replaced
        return node

    def count(self, event: str, n: int = 1) -> None:
        self.metrics.events[event] += n

    def _pick(self, offerings: list[Offering], now_s: float) -> list[Offering]:
        """Offerings in launch order: capacity-type rank, then price, ties at random."""
        usable = [o for o in offerings if self.blocked_until_s.get(o.key, -math.inf) <= now_s]
        jitter = self.rng.random(len(usable))
        order = sorted(range(len(usable)), key=lambda i: (
            CAPACITY_TYPE_RANK[usable[i].capacity_type], usable[i].price_usd_per_hour, jitter[i]))
        return [usable[i] for i in order]

    def _outages(self, offering: Offering, now_s: float) -> list[int]:
        """Indices of the capacity outages active now for this offering."""
        it, zone, ct = offering.key
        return [i for i, outage in enumerate(self.params.capacity_outages)
                if outage.instance_type in (it, "*") and outage.zone in (zone, None)
                and outage.capacity_type in (ct, None) and outage.start_s <= now_s < outage.end_s]

    def _insufficient(self, offering: Offering, now_s: float) -> bool:
        for i in self._outages(offering, now_s):
            if self._outage_launches[i] >= self.params.capacity_outages[i].nodes_available:
                return True
        p = self.params.insufficient_capacity_probability_frac
        return p > 0 and self.rng.random() < p

    def launch_claim(self, plan: ClaimPlan, now_s: float) -> Node | None:
        """Create one NodeClaim: pick an offering, launch its node, nominate the plan's pods."""
        for offering in self._pick(plan.offerings, now_s):
            if self._insufficient(offering, now_s):
                self.blocked_until_s[offering.key] = now_s + self.params.unavailable_offering_ttl_s
                self.metrics.failures["insufficient_capacity"] += 1
                continue
            for i in self._outages(offering, now_s):
                self._outage_launches[i] += 1  # one fewer instance left in that outage
            self._seq += 1
            node = make_node(f"{plan.pool.name}-{self._seq:05d}", offering.instance_type,
                             offering.zone, offering.capacity_type, plan.pool.name,
                             plan.pool.node_labels(), pool_taints(plan.pool))
            self.launcher.launch(node, plan.pool.node_latencies or self.params.node_latencies)
            self._nominate(node.name, plan.pods)
            self.spot.node_launched(node)
            expire_s = plan.pool.expire_after_s
            if math.isfinite(expire_s):
                self.sim.schedule(now_s + expire_s, Priority.CONTROLLER, self._expire, node)
            self.metrics.events["nodeclaims_launched"] += 1
            return node
        # Every offering is blocked: retry when the first block lapses.
        retry_s = min((self.blocked_until_s[o.key] for o in plan.offerings), default=now_s + 10)
        self.sim.schedule(max(retry_s, now_s), Priority.CONTROLLER, self._retry)
        return None

    def _retry(self) -> None:
        if self._waiting_pods():
            self._trigger(self.sim.now_s)

    def _nominate(self, node_name: str, pods: list[Pod]) -> None:
        for pod in pods:
            self.cluster.nominate(node_name, pod.name, self.sim.now_s)

    def expire_nominations(self, now_s: float) -> None:
        """Drop nominations that no longer hold: the pod is gone or bound, or the node has
        been ready for `2 x batch_max_s` without the scheduler binding the pod there (as
        Karpenter's nomination window lapses); pods set free are planned again."""
        window_s = 2 * self.params.batch_max_s
        freed = False
        for pod_name, node_name in list(self.nomination_of.items()):
            pod = self.cluster.pods.get(pod_name)
            node = self.cluster.nodes.get(node_name)
            if pod is None or pod.node_name is not None:
                self.cluster.clear_nomination(pod_name)
            elif node is not None and node.ready_s is not None and now_s >= window_s + max(
                    node.ready_s, self.nominated_at_s.get(pod_name, now_s)):
                self.cluster.clear_nomination(pod_name)
                freed = True
        if freed and self._waiting_pods():
            self._trigger(now_s)

    # -- lifecycle callbacks ----------------------------------------------------------------
    def _node_ready(self, node: Node) -> None:
        self.disruption.node_event(node.name, self.sim.now_s)
        replaced = self.replacing.pop(node.name, None)
        if replaced:
            self.disruption.replacement_ready(replaced)

    def _node_failed(self, node: Node, cause: str) -> None:
        replaced = self.replacing.pop(node.name, None)
        if replaced:
            self.disruption.replacement_failed(replaced)

    def _node_gone(self, node: Node) -> None:
        # ClusterState.remove_node has dropped the nominations to this node
        self.deleting.discard(node.name)
        self.draining.pop(node.name, None)
        if node.name in self.metrics.node_names and self._waiting_pods():
            self._trigger(self.sim.now_s)

    def _pod_bound(self, pod: Pod) -> None:
        self.cluster.clear_nomination(pod.name)
        self.disruption.node_event(pod.node_name, self.sim.now_s)

    def _pod_evicted(self, pod: Pod, cause: str) -> None:
        self.cluster.clear_nomination(pod.name)
        self.disruption.pod_left(pod.name, self.sim.now_s)

    def _pod_deleted(self, pod: Pod) -> None:
        self.cluster.clear_nomination(pod.name)
        self.disruption.pod_left(pod.name, self.sim.now_s)

    # -- deletion ------------------------------------------------------------------------------
    def _expire(self, node: Node) -> None:
        """expireAfter is forceful: no budget, no replacement first (reference 1.8)."""
        if self.cluster.nodes.get(node.name) is node and node.name not in self.draining:
            self.metrics.events["expirations"] += 1
            self.start_drain(node, "expiration")

    def start_drain(self, node: Node, cause: str) -> None:
        """Cordon and evict; pods with active do-not-disrupt stay until the protection
        lapses or the pool's terminationGracePeriod runs out (reference 1.8)."""
        pool = self.pools.get(node.pool)
        grace = pool.termination_grace_period if pool is not None else None
        deadline_s = self.sim.now_s + parse_duration_s(grace) if grace else math.inf
        self.deleting.add(node.name)
        self.cluster.mark_for_deletion(node)
        self.draining[node.name] = (cause, deadline_s)
        self.metrics.sample()
        self.drain_step(node)

    def drain_step(self, node: Node) -> None:
        cause, deadline_s = self.draining[node.name]
        now_s = self.sim.now_s
        pdbs = self.params.pod_disruption_budgets
        for name in list(node.pod_names):
            pod = self.cluster.pods.get(name)
            if pod is None:
                continue
            if now_s < deadline_s and (do_not_disrupt_active(pod, now_s) or (
                    pdbs and not may_evict(pdbs, pod, self.cluster))):
                continue  # the Eviction API refuses (429); retried at the next tick
            self.cluster.evict(pod, cause)
            self.metrics.evicted(cause)
        if not node.pod_names:
            self.cluster.remove_node(node, now_s, cause)
