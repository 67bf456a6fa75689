"""Karpenter's disruption methods, one small object each, in the order the controller tries
them (karpenter `pkg/controllers/disruption/controller.go` `NewMethods`: Emptiness,
StaticDrift, Drift, MultiNodeConsolidation, SingleNodeConsolidation).

Drift (and static drift) are not modelled: a simulated NodePool never changes after launch, so
no node can drift. A new method is a new class here and an entry in `default_methods`.
"""

from __future__ import annotations

from gpuscale.cluster.objects import Node
from gpuscale.provisioning.karpenter.consolidation import Consolidation
from gpuscale.provisioning.karpenter.disruption_types import Command, Method

MAX_MULTI_NODE_CANDIDATES = 100  # multinodeconsolidation.go


class Emptiness:
    """Delete empty nodes, under every consolidation policy (emptiness.go)."""

    name = "emptiness"  # as the decision log names it
    reason = "Empty"

    def __init__(self, consolidation: Consolidation) -> None:
        self.c = consolidation

    def should_disrupt(self, node: Node, now_s: float) -> bool:
        return not node.pod_names

    def compute_command(self, candidates: list[Node], now_s: float) -> Command | None:
        chosen = self.c.within_budget(self.c.by_value(candidates, now_s), self.reason, now_s)
        if chosen and not self.c.keeps_buffer(chosen):
            # Empty nodes holding buffer room stay: keep the ones that can go together.
            kept: list[Node] = []
            for node in chosen:
                if self.c.keeps_buffer(kept + [node]):
                    kept.append(node)
            chosen = kept
        return Command(self.reason, chosen) if chosen else None


class _Underutilized:
    """Nodes with pods in pools that consolidate more than empty nodes."""

    reason = "Underutilized"

    def __init__(self, consolidation: Consolidation) -> None:
        self.c = consolidation

    def should_disrupt(self, node: Node, now_s: float) -> bool:
        policy = self.c.host.pools[node.pool].disruption.consolidation_policy
        return bool(node.pod_names) and policy != "WhenEmpty"

    def _nodes(self, candidates: list[Node], now_s: float) -> tuple[list[Node], tuple]:
        nodes = self.c.within_budget(self.c.by_value(candidates, now_s), self.reason, now_s)
        return nodes, self.c.state(nodes, now_s)


class MultiNodeConsolidation(_Underutilized):
    """The largest prefix of candidates (by value) that can go together, found by binary
    search as Karpenter does (multinodeconsolidation.go); at least two nodes."""

    name = "multi-node consolidation"

    def compute_command(self, candidates: list[Node], now_s: float) -> Command | None:
        nodes, state = self._nodes(candidates, now_s)
        if self.c.is_consolidated(state):
            return None  # nothing changed since consolidation last found nothing
        nodes = nodes[:MAX_MULTI_NODE_CANDIDATES]
        best, lo, hi = None, 2, len(nodes)
        while lo <= hi:
            mid = (lo + hi) // 2
            command = self.c.compute(nodes[:mid], now_s)
            if command is not None:
                best, lo = command, mid + 1
            else:
                hi = mid - 1
        if best is not None:
            self.c.mark_consolidated(None)
        return best


class SingleNodeConsolidation(_Underutilized):
    """The first candidate (by value) that can go alone (singlenodeconsolidation.go); when
    none can, the cluster counts as consolidated until something changes."""

    name = "single-node consolidation"

    def compute_command(self, candidates: list[Node], now_s: float) -> Command | None:
        nodes, state = self._nodes(candidates, now_s)
        if self.c.is_consolidated(state):
            return None
        for node in nodes:
            command = self.c.compute([node], now_s)
            if command is not None:
                self.c.mark_consolidated(None)
                return command
        self.c.mark_consolidated(state)
        return None


def default_methods(consolidation: Consolidation) -> list[Method]:
    """Karpenter's order (controller.go NewMethods), less the drift methods."""
    return [Emptiness(consolidation), MultiNodeConsolidation(consolidation),
            SingleNodeConsolidation(consolidation)]
