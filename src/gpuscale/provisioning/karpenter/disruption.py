"""Karpenter's disruption controller: the methods of `methods.py`, tried in Karpenter's order.

Every 10 s at most one method runs: the first, in the order Emptiness, MultiNode, SingleNode
(reference layer1-node-provisioning.md 1.8; karpenter `pkg/controllers/disruption/
controller.go` `NewMethods`), whose command is not empty; drift is not modelled (a simulated
NodePool never changes). A command is re-validated `command_validation_delay_s` (15 s) later and
then executed; while one waits, the controller does nothing else, as Karpenter blocks in its
validation. Deleting a node evicts its pods (cause `consolidation`, or `emptiness` for empty
nodes); replacing waits for the one cheaper replacement to initialize first.

A node is a candidate when it is initialized, not being deleted, has no nominated pending pods,
is not annotated do-not-disrupt, hosts no pod with active do-not-disrupt, and its pool's
`consolidateAfter` has elapsed since the last pod bound to or left it (or since it became
ready), and no pod on it is covered by a PodDisruptionBudget that allows no disruption now.
Budgets are per pool and reason (budgets.py). The controller reaches the provider only
through `DisruptionHost` (disruption_types.py).
"""

from __future__ import annotations

from gpuscale.cluster.objects import Node, NodeState
from gpuscale.core import Priority
from gpuscale.provisioning.disruption_budget import blocking
from gpuscale.provisioning.karpenter.consolidation import Consolidation
from gpuscale.provisioning.karpenter.disruption_types import Command, DisruptionHost, Method
from gpuscale.provisioning.karpenter.methods import default_methods
from gpuscale.provisioning.karpenter.nodepool import NodePoolParams
from gpuscale.provisioning.pods import do_not_disrupt_active, node_do_not_disrupt

__all__ = ["Command", "DisruptionController"]


class DisruptionController:
    def __init__(self, host: DisruptionHost) -> None:
        self.host = host
        self.consolidation = Consolidation(host)
        self.methods: list[Method] = default_methods(self.consolidation)
        self.last_pod_event_s: dict[str, float] = {}
        self.pod_node: dict[str, str] = {}
        self.pending: Command | None = None

    # -- pod events (consolidateAfter restarts on each) ----------------------------------------
    def node_event(self, node_name: str | None, now_s: float) -> None:
        node = self.host.cluster.nodes.get(node_name or "")
        if node is None:
            return
        self.last_pod_event_s[node.name] = now_s
        for pod_name in node.pod_names:
            self.pod_node[pod_name] = node.name

    def pod_left(self, pod_name: str, now_s: float) -> None:
        self.node_event(self.pod_node.pop(pod_name, None), now_s)

    # -- the loop ------------------------------------------------------------------------------
    def tick(self, now_s: float) -> None:
        if self.pending is not None:
            return
        candidates = self.candidates(now_s)
        for method in self.methods:
            command = method.compute_command(
                [n for n in candidates if method.should_disrupt(n, now_s)], now_s)
            if command is not None:
                self.pending = command
                if self.host.sim.decisions is not None:
                    self._log(method, command, len(candidates), now_s)
                self.host.sim.schedule(now_s + self.host.params.command_validation_delay_s,
                                       Priority.CONTROLLER, self._validate_and_execute)
                return

    def _log(self, method: Method, command: Command, num_candidates: int,
             now_s: float) -> None:
        """The decision log's entry: which method found the command (tried in Karpenter's
        order, see methods.py) and what it would do; it executes after the validation delay
        if still valid."""
        decisions = self.host.sim.decisions
        assert decisions is not None
        name = method.name
        replacement = command.replacement
        decisions.record(
            now_s, "nodes", "karpenter.disruption",
            f"{'replace' if replacement is not None else 'delete'} "
            f"{', '.join(n.name for n in command.candidates)}",
            f"{name} ({command.reason})", method=name, budget_reason=command.reason,
            candidates_considered=num_candidates,
            nodes=[n.name for n in command.candidates],
            replacement=None if replacement is None else replacement.pool.name,
            validation_delay_s=self.host.params.command_validation_delay_s)

    # -- candidates ----------------------------------------------------------------------------
    def _consolidatable(self, node: Node, pool: NodePoolParams, now_s: float) -> bool:
        after_s = pool.disruption.consolidate_after_s
        since_s = self.last_pod_event_s.get(node.name, node.ready_s)
        return since_s is not None and now_s - since_s >= after_s

    def candidates(self, now_s: float) -> list[Node]:
        host, cluster = self.host, self.host.cluster
        out = []
        for node in cluster.nodes.values():
            pool = host.pools.get(node.pool)
            # consolidateAfter first: it is what rules out most nodes at most ticks (a pod
            # event within the last 10 min), and every test here is a plain read, so the
            # order changes no answer.
            if (pool is None or not self._consolidatable(node, pool, now_s)
                    or not host.owns(node)
                    or node.state is not NodeState.READY or host.is_deleting(node.name)
                    or cluster.nominated.get(node.name) or node_do_not_disrupt(node)):
                continue
            pods = [cluster.pods[n] for n in node.pod_names if n in cluster.pods]
            if any(do_not_disrupt_active(pod, now_s) for pod in pods):
                continue
            pdbs = host.params.pod_disruption_budgets
            if pdbs and blocking(pdbs, pods, cluster) is not None:
                continue  # a PDB allows no eviction now (statenode.go, pdb.Limits)
            out.append(node)
        return out

    # -- execution -----------------------------------------------------------------------------
    def _validate_and_execute(self) -> None:
        command, self.pending = self.pending, None
        if command is None:
            return
        now_s = self.host.sim.now_s
        alive = {n.name for n in self.candidates(now_s)}
        if any(n.name not in alive for n in command.candidates):
            self.host.count("disruption_commands_invalidated")
            return
        if command.reason == "Empty":
            if any(n.pod_names for n in command.candidates) or not self.consolidation.keeps_buffer(
                    command.candidates):
                self.host.count("disruption_commands_invalidated")
                return
        else:
            fresh = self.consolidation.compute(command.candidates, now_s)
            if fresh is None or (fresh.replacement is None) != (command.replacement is None):
                self.host.count("disruption_commands_invalidated")
                return
            command = fresh
        self.execute(command, now_s)

    def execute(self, command: Command, now_s: float) -> None:
        cause = "emptiness" if command.reason == "Empty" else "consolidation"
        self.host.count(f"disrupted_{cause}", len(command.candidates))
        if command.replacement is None:
            for node in command.candidates:
                self.host.start_drain(node, cause)
            return
        self.host.mark_for_deletion(command.candidates)  # karpenter.sh/disrupted:NoSchedule
        if self.host.launch_replacement(command.replacement, command.candidates, now_s) is None:
            self.replacement_failed(command.candidates)

    def replacement_ready(self, nodes: list[Node]) -> None:
        for node in nodes:
            if self.host.cluster.nodes.get(node.name) is node:
                self.host.start_drain(node, "consolidation")

    def replacement_failed(self, nodes: list[Node]) -> None:
        """Un-taint the candidates; consolidation will try again later."""
        self.host.count("replacements_failed")
        self.host.unmark_for_deletion(
            [n for n in nodes if self.host.cluster.nodes.get(n.name) is n]
        )
