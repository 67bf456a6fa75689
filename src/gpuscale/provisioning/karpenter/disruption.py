"""Karpenter's disruption controller: emptiness, then multi-node, then single-node consolidation.

Every 10 s at most one method runs, in Karpenter's order (reference
layer1-node-provisioning.md 1.8, disruption/controller.go); drift is not modelled (a simulated
NodePool never changes). A command is re-validated `command_validation_delay_s` (15 s) later and
then executed; while one waits, the controller does nothing else, as Karpenter blocks in its
validation. Deleting a node evicts its pods (cause `consolidation`, or `emptiness` for empty
nodes); replacing waits for the one cheaper replacement to initialize first.

A node is a candidate when it is initialized, not being deleted, has no nominated pending pods,
is not annotated do-not-disrupt, hosts no pod with active do-not-disrupt, and its pool's
`consolidateAfter` has elapsed since the last pod bound to or left it (or since it became
ready). Budgets are per pool and reason (budgets.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuscale.cluster.objects import Node, NodeState
from gpuscale.core import Priority
from gpuscale.provisioning.fit import first_fit, pod_priority_order
from gpuscale.provisioning.karpenter.budgets import allowed_disruptions
from gpuscale.provisioning.karpenter.nodepool import NodePoolParams
from gpuscale.provisioning.karpenter.scheduling import ClaimPlan
from gpuscale.provisioning.pods import do_not_disrupt_active, eviction_cost, node_do_not_disrupt

MAX_MULTI_NODE_CANDIDATES = 100  # multinodeconsolidation.go
BALANCED_MIN_SCORE = 0.5  # 1/k with k = 2 (designs/balanced-consolidation.md)


@dataclass
class Command:
    reason: str  # "Empty" or "Underutilized" (the budget reason)
    candidates: list[Node]
    replacement: ClaimPlan | None = None


class DisruptionController:
    def __init__(self, provider) -> None:
        self.p = provider
        self.last_pod_event_s: dict[str, float] = {}
        self.pod_node: dict[str, str] = {}
        self.pending: Command | None = None
        self._fruitless: tuple | None = None  # state in which consolidation last found nothing

    # -- pod events (consolidateAfter restarts on each) ----------------------------------------
    def node_event(self, node_name: str | None, now_s: float) -> None:
        node = self.p.cluster.nodes.get(node_name or "")
        if node is None:
            return
        self.last_pod_event_s[node.name] = now_s
        for pod_name in node.pod_names:
            self.pod_node[pod_name] = node.name

    def pod_left(self, pod_name: str, now_s: float) -> None:
        self.node_event(self.pod_node.pop(pod_name, None), now_s)

    # -- the loop ------------------------------------------------------------------------------
    def tick(self, now_s: float) -> None:
        self.p.metrics.prune()
        self.p.expire_nominations(now_s)
        for name in list(self.p.draining):
            node = self.p.cluster.nodes.get(name)
            if node is not None:
                self.p.drain_step(node)
        if self.pending is not None:
            return
        candidates = self.candidates(now_s)
        command = self._emptiness(candidates, now_s)
        if command is None:
            command = self._consolidation(candidates, now_s)
        if command is not None:
            self.pending = command
            self.p.sim.schedule(now_s + self.p.params.command_validation_delay_s,
                                Priority.CONTROLLER, self._validate_and_execute)

    def _consolidation(self, candidates: list[Node], now_s: float) -> Command | None:
        """Multi-node, then single-node. Skipped while nothing changed since they last found
        nothing, as Karpenter skips an unchanged cluster state: same pods and nodes, same
        candidates within budget, same blocked offerings."""
        nodes = self._within_budget(self._underutilized(candidates, now_s), "Underutilized",
                                    now_s)
        blocked = sum(1 for until_s in self.p.blocked_until_s.values() if until_s > now_s)
        state = (self.p.cluster.stamp, tuple(n.name for n in nodes), blocked)
        if state == self._fruitless:
            return None
        command = self._multi_node(nodes, now_s) or self._single_node(nodes, now_s)
        self._fruitless = state if command is None else None
        return command

    # -- candidates and budgets ----------------------------------------------------------------
    def _consolidatable(self, node: Node, pool: NodePoolParams, now_s: float) -> bool:
        after_s = pool.disruption.consolidate_after_s
        since_s = self.last_pod_event_s.get(node.name, node.ready_s)
        return since_s is not None and now_s - since_s >= after_s

    def candidates(self, now_s: float) -> list[Node]:
        out = []
        for node in self.p.cluster.nodes.values():
            pool = self.p.pools.get(node.pool)
            if (pool is None or node.name not in self.p.metrics.node_names
                    or node.state is not NodeState.READY or node.name in self.p.deleting
                    or self.p.nominated.get(node.name) or node_do_not_disrupt(node)
                    or not self._consolidatable(node, pool, now_s)):
                continue
            pods = [self.p.cluster.pods[n] for n in node.pod_names if n in self.p.cluster.pods]
            if any(do_not_disrupt_active(pod, now_s) for pod in pods):
                continue
            out.append(node)
        return out

    def _pool_nodes(self, pool_name: str) -> list[Node]:
        return [n for n in self.p.cluster.nodes.values()
                if n.pool == pool_name and n.name in self.p.metrics.node_names]

    def allowance(self, pool: NodePoolParams, reason: str, now_s: float) -> int:
        nodes = self._pool_nodes(pool.name)
        deleting = sum(1 for n in nodes if n.name in self.p.deleting)
        not_ready = sum(1 for n in nodes if n.state is not NodeState.READY
                        and n.name not in self.p.deleting)
        return allowed_disruptions(pool.disruption.budgets, reason, total=len(nodes),
                                   deleting=deleting, not_ready=not_ready, now_s=now_s,
                                   start_utc=self.p.params.start_utc)

    def _within_budget(self, nodes: list[Node], reason: str, now_s: float) -> list[Node]:
        left: dict[str, int] = {}
        out = []
        for node in nodes:
            pool = self.p.pools[node.pool]
            if pool.name not in left:
                left[pool.name] = self.allowance(pool, reason, now_s)
            if left[pool.name] > 0:
                left[pool.name] -= 1
                out.append(node)
        return out

    def disruption_cost(self, node: Node, now_s: float) -> float:
        pods = [self.p.cluster.pods[n] for n in node.pod_names if n in self.p.cluster.pods]
        cost = 1.0 + sum(max(0.0, eviction_cost(p)) for p in pods)
        lifetime_s = self.p.pools[node.pool].expire_after_s
        if lifetime_s != float("inf") and lifetime_s > 0:
            cost *= max(0.0, (node.created_s + lifetime_s - now_s) / lifetime_s)
        return cost

    def _by_value(self, nodes: list[Node], now_s: float) -> list[Node]:
        """Highest price per unit of disruption cost first (multinodeconsolidation.go)."""
        return sorted(nodes, key=lambda n: (-n.price_usd_per_hour /
                                            max(self.disruption_cost(n, now_s), 1e-9), n.name))

    # -- methods -------------------------------------------------------------------------------
    def _emptiness(self, candidates: list[Node], now_s: float) -> Command | None:
        empty = [n for n in candidates if not n.pod_names]
        chosen = self._within_budget(self._by_value(empty, now_s), "Empty", now_s)
        return Command("Empty", chosen) if chosen else None

    def _underutilized(self, candidates: list[Node], now_s: float) -> list[Node]:
        nodes = [n for n in candidates if n.pod_names
                 and self.p.pools[n.pool].disruption.consolidation_policy != "WhenEmpty"]
        return self._by_value(nodes, now_s)

    def _multi_node(self, nodes: list[Node], now_s: float) -> Command | None:
        nodes = nodes[:MAX_MULTI_NODE_CANDIDATES]
        best, lo, hi = None, 2, len(nodes)
        while lo <= hi:  # largest prefix that consolidates (binary search, as Karpenter)
            mid = (lo + hi) // 2
            command = self.compute(nodes[:mid], now_s)
            if command is not None:
                best, lo = command, mid + 1
            else:
                hi = mid - 1
        return best

    def _single_node(self, nodes: list[Node], now_s: float) -> Command | None:
        for node in nodes:
            command = self.compute([node], now_s)
            if command is not None:
                return command
        return None

    def compute(self, nodes: list[Node], now_s: float) -> Command | None:
        """Delete `nodes` if their pods fit elsewhere, or replace them with exactly one
        strictly cheaper node (never 1 -> many); None if neither (consolidation.go)."""
        names = {n.name for n in nodes}
        pods = [self.p.cluster.pods[name] for n in nodes for name in n.pod_names
                if name in self.p.cluster.pods]
        leftover = first_fit(pod_priority_order(pods), self.p.live_bins(exclude=names))
        if not leftover:
            return Command("Underutilized", nodes) if self._balanced_ok(nodes, 0.0, now_s) else None
        plan = self._replacement(nodes, leftover, now_s)
        if plan is None:
            return None
        price = self.p._pick(plan.offerings, now_s)[0].price_usd_per_hour
        if not self._balanced_ok(nodes, price, now_s):
            return None
        return Command("Underutilized", nodes, plan)

    def _replacement(self, nodes: list[Node], pods, now_s: float) -> ClaimPlan | None:
        total_usd = sum(n.price_usd_per_hour for n in nodes)
        all_spot = all(n.capacity_type == "spot" for n in nodes)
        for pool in self.p.pools_by_weight:
            offerings = [
                o for o in self.p.available_offerings(pool, now_s)
                if o.price_usd_per_hour < total_usd
                and not (all_spot and o.capacity_type == "spot"
                         and not self.p.params.spot_to_spot_consolidation)
                and not any(o.instance_type.name == n.instance_type.name
                            and o.price_usd_per_hour >= n.price_usd_per_hour for n in nodes)]
            plan = ClaimPlan(pool, offerings)
            if offerings and all(plan.try_add(p) for p in pod_priority_order(pods)):
                return plan
        return None

    def _balanced_ok(self, nodes: list[Node], replacement_usd: float, now_s: float) -> bool:
        pool = self.p.pools[nodes[0].pool]
        if pool.disruption.consolidation_policy != "Balanced":
            return True
        pool_nodes = self._pool_nodes(pool.name)
        pool_usd = sum(n.price_usd_per_hour for n in pool_nodes)
        pool_cost = sum(self.disruption_cost(n, now_s) for n in pool_nodes)
        savings = sum(n.price_usd_per_hour for n in nodes) - replacement_usd
        cost = sum(self.disruption_cost(n, now_s) for n in nodes)
        if pool_usd <= 0 or pool_cost <= 0 or cost <= 0:
            return True
        return (savings / pool_usd) / (cost / pool_cost) >= BALANCED_MIN_SCORE

    # -- execution -----------------------------------------------------------------------------
    def _validate_and_execute(self) -> None:
        command, self.pending = self.pending, None
        now_s = self.p.sim.now_s
        alive = {n.name for n in self.candidates(now_s)}
        if any(n.name not in alive for n in command.candidates):
            self.p.metrics.events["disruption_commands_invalidated"] += 1
            return
        if command.reason == "Empty":
            if any(n.pod_names for n in command.candidates):
                self.p.metrics.events["disruption_commands_invalidated"] += 1
                return
        else:
            fresh = self.compute(command.candidates, now_s)
            if fresh is None or (fresh.replacement is None) != (command.replacement is None):
                self.p.metrics.events["disruption_commands_invalidated"] += 1
                return
            command = fresh
        self.execute(command, now_s)

    def execute(self, command: Command, now_s: float) -> None:
        cause = "emptiness" if command.reason == "Empty" else "consolidation"
        self.p.metrics.events[f"disrupted_{cause}"] += len(command.candidates)
        if command.replacement is None:
            for node in command.candidates:
                self.p.start_drain(node, cause)
            return
        for node in command.candidates:  # taint karpenter.sh/disrupted:NoSchedule
            self.p.deleting.add(node.name)
            self.p.cluster.mark_for_deletion(node)
        self.p.metrics.sample()
        replacement = self.p.launch_claim(command.replacement, now_s)
        if replacement is None:
            self.replacement_failed(command.candidates)
        else:
            self.p.replacing[replacement.name] = command.candidates

    def replacement_ready(self, nodes: list[Node]) -> None:
        for node in nodes:
            if self.p.cluster.nodes.get(node.name) is node:
                self.p.start_drain(node, "consolidation")

    def replacement_failed(self, nodes: list[Node]) -> None:
        """Un-taint the candidates; consolidation will try again later."""
        self.p.metrics.events["replacements_failed"] += 1
        for node in nodes:
            if self.p.cluster.nodes.get(node.name) is node:
                self.p.deleting.discard(node.name)
                self.p.cluster.unmark_for_deletion(node)
        self.p.metrics.sample()
