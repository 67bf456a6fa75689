"""What the consolidation methods share: budgets, disruption cost, and the check whether a set
of nodes can go (karpenter `pkg/controllers/disruption/consolidation.go`).

`compute` deletes the nodes if their pods fit elsewhere, or replaces them with exactly one
strictly cheaper node (never 1 -> many). The replacement's price is the price of the offering a
launch would try first; it draws no random numbers, so how often consolidation is evaluated
cannot shift later launch choices.
"""

from __future__ import annotations

from gpuscale.cluster.objects import Node, NodeState, Pod
from gpuscale.provisioning.fit import first_fit, pod_priority_order
from gpuscale.provisioning.karpenter.budgets import allowed_disruptions
from gpuscale.provisioning.karpenter.disruption_types import Command, DisruptionHost
from gpuscale.provisioning.karpenter.nodepool import NodePoolParams
from gpuscale.provisioning.karpenter.scheduling import ClaimPlan
from gpuscale.provisioning.pods import eviction_cost

BALANCED_MIN_SCORE = 0.5  # 1/k with k = 2 (designs/balanced-consolidation.md)


class Consolidation:
    """Shared by the multi- and single-node methods, as Karpenter's `consolidation` struct is:
    it also remembers the state in which consolidation last found nothing."""

    def __init__(self, host: DisruptionHost) -> None:
        self.host = host
        self._consolidated: tuple | None = None  # state in which consolidation found nothing

    # -- skipping an unchanged cluster (IsConsolidated / markConsolidated) ----------------------
    def state(self, nodes: list[Node], now_s: float) -> tuple:
        """Same pods and nodes (ClusterState's stamp), same candidates within budget, same
        blocked offerings."""
        return (self.host.cluster.stamp, tuple(n.name for n in nodes),
                self.host.blocked_offerings(now_s))

    def is_consolidated(self, state: tuple) -> bool:
        return state == self._consolidated

    def mark_consolidated(self, state: tuple | None) -> None:
        self._consolidated = state

    # -- budgets and ordering --------------------------------------------------------------------
    def pool_nodes(self, pool_name: str) -> list[Node]:
        return [n for n in self.host.cluster.nodes.values()
                if n.pool == pool_name and self.host.owns(n)]

    def allowance(self, pool: NodePoolParams, reason: str, now_s: float) -> int:
        nodes = self.pool_nodes(pool.name)
        deleting = sum(1 for n in nodes if self.host.is_deleting(n.name))
        not_ready = sum(1 for n in nodes if n.state is not NodeState.READY
                        and not self.host.is_deleting(n.name))
        return allowed_disruptions(pool.disruption.budgets, reason, total=len(nodes),
                                   deleting=deleting, not_ready=not_ready, now_s=now_s,
                                   start_utc=self.host.params.start_utc)

    def within_budget(self, nodes: list[Node], reason: str, now_s: float) -> list[Node]:
        left: dict[str, int] = {}
        out = []
        for node in nodes:
            pool = self.host.pools[node.pool]
            if pool.name not in left:
                left[pool.name] = self.allowance(pool, reason, now_s)
            if left[pool.name] > 0:
                left[pool.name] -= 1
                out.append(node)
        return out

    def disruption_cost(self, node: Node, now_s: float) -> float:
        cost = 1.0 + sum(max(0.0, eviction_cost(p)) for p in self._pods(node))
        lifetime_s = self.host.pools[node.pool].expire_after_s
        if lifetime_s != float("inf") and lifetime_s > 0:
            cost *= max(0.0, (node.created_s + lifetime_s - now_s) / lifetime_s)
        return cost

    def by_value(self, nodes: list[Node], now_s: float) -> list[Node]:
        """Highest price per unit of disruption cost first (multinodeconsolidation.go)."""
        return sorted(nodes, key=lambda n: (-n.price_usd_per_hour /
                                            max(self.disruption_cost(n, now_s), 1e-9), n.name))

    # -- capacity buffers ----------------------------------------------------------------------
    def keeps_buffer(self, nodes: list[Node]) -> bool:
        """Removing `nodes` leaves no more buffer pods without room than there are now: a node
        holding buffer room is not empty (emptiness.go; designs/capacity-buffer.md)."""
        if not self.host.params.capacity_buffers:
            return True
        before = len(self.host.unplaced_buffer())
        return len(self.host.unplaced_buffer({n.name for n in nodes})) <= before

    def _displaced_buffer(self, names: set[str], bins) -> list[Pod]:
        """The buffer pods that removing `names` would leave without room on `bins` (already
        holding the candidates' real pods), beyond those without room now."""
        pods = self.host.buffer_pods()
        if not pods:
            return []
        before = len(self.host.unplaced_buffer())
        leftover = first_fit(pods, bins)
        return leftover[: max(0, len(leftover) - before)]

    # -- can these nodes go? ---------------------------------------------------------------------
    def compute(self, nodes: list[Node], now_s: float) -> Command | None:
        """Delete `nodes` if their pods fit elsewhere, or replace them with exactly one
        strictly cheaper node; None if neither (consolidation.go computeConsolidation). Buffer
        pods are simulated with the real ones, after them: the buffer's room must survive."""
        names = {n.name for n in nodes}
        pods = [p for n in nodes for p in self._pods(n)]
        bins = self.host.live_bins(exclude=names)
        leftover = first_fit(pod_priority_order(pods), bins)
        leftover += self._displaced_buffer(names, bins)
        if not leftover:
            return Command("Underutilized", nodes) if self._balanced_ok(nodes, 0.0, now_s) else None
        plan = self._replacement(nodes, leftover, now_s)
        if plan is None:
            return None
        price = self.host.launch_price_usd_per_hour(plan.offerings, now_s)
        if not self._balanced_ok(nodes, price, now_s):
            return None
        return Command("Underutilized", nodes, plan)

    def _pods(self, node: Node) -> list[Pod]:
        pods = self.host.cluster.pods
        return [pods[name] for name in node.pod_names if name in pods]

    def _replacement(self, nodes: list[Node], pods: list[Pod], now_s: float) -> ClaimPlan | None:
        total_usd = sum(n.price_usd_per_hour for n in nodes)
        all_spot = all(n.capacity_type == "spot" for n in nodes)
        for pool in self.host.pools_by_weight:
            offerings = [
                o for o in self.host.available_offerings(pool, now_s)
                if o.price_usd_per_hour < total_usd
                and not (all_spot and o.capacity_type == "spot"
                         and not self.host.params.spot_to_spot_consolidation)
                and not any(o.instance_type.name == n.instance_type.name
                            and o.price_usd_per_hour >= n.price_usd_per_hour for n in nodes)]
            plan = ClaimPlan(pool, offerings)
            if offerings and all(plan.try_add(p) for p in pod_priority_order(pods)):
                return plan
        return None

    def _balanced_ok(self, nodes: list[Node], replacement_usd: float, now_s: float) -> bool:
        pool = self.host.pools[nodes[0].pool]
        if pool.disruption.consolidation_policy != "Balanced":
            return True
        pool_nodes = self.pool_nodes(pool.name)
        pool_usd = sum(n.price_usd_per_hour for n in pool_nodes)
        pool_cost = sum(self.disruption_cost(n, now_s) for n in pool_nodes)
        savings = sum(n.price_usd_per_hour for n in nodes) - replacement_usd
        cost = sum(self.disruption_cost(n, now_s) for n in nodes)
        if pool_usd <= 0 or pool_cost <= 0 or cost <= 0:
            return True
        return (savings / pool_usd) / (cost / pool_cost) >= BALANCED_MIN_SCORE
