"""What the disruption methods share: the command they return, the method shape they follow,
and the typed view of the provider they act through.

Mirrors karpenter `pkg/controllers/disruption/types.go`: a `Method` says whether a node is a
candidate for it (`ShouldDisrupt`), what it would do with the candidates (`ComputeCommands`)
and under which budget reason (`Reason`). The controller tries the methods in a fixed order
(`NewMethods` in `pkg/controllers/disruption/controller.go`) and runs the first command found.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from gpuscale.cluster.objects import Node, Pod
from gpuscale.cluster.state import ClusterState
from gpuscale.core import Simulation
from gpuscale.provisioning.fit import Bin
from gpuscale.provisioning.karpenter.nodepool import NodePoolParams, Offering
from gpuscale.provisioning.karpenter.params import KarpenterParams
from gpuscale.provisioning.karpenter.scheduling import ClaimPlan


@dataclass
class Command:
    reason: str  # "Empty" or "Underutilized" (the budget reason)
    candidates: list[Node]
    replacement: ClaimPlan | None = None


class DisruptionHost(Protocol):
    """What the disruption controller and its methods may use of the Karpenter provider.

    Reads are of shared state (`cluster`, whose nominations and stamp Karpenter's state.Cluster
    also holds) and of configuration; actions are the provider's own (launch, drain, taint).
    """

    sim: Simulation
    cluster: ClusterState
    params: KarpenterParams
    pools: Mapping[str, NodePoolParams]
    pools_by_weight: Sequence[NodePoolParams]

    def owns(self, node: Node) -> bool:
        """The node was launched (or adopted) by one of this provider's NodePools."""
        ...

    def is_deleting(self, node_name: str) -> bool:
        """Chosen for disruption, interrupted or draining."""
        ...

    def live_bins(self, exclude: set[str] = ...) -> list[Bin]: ...

    def available_offerings(self, pool: NodePoolParams, now_s: float) -> list[Offering]: ...

    def launch_price_usd_per_hour(self, offerings: list[Offering], now_s: float) -> float:
        """Price of the offering a launch would try first; draws no random numbers."""
        ...

    def blocked_offerings(self, now_s: float) -> int:
        """How many offerings are blocked after an insufficient-capacity error."""
        ...

    def mark_for_deletion(self, nodes: list[Node]) -> None: ...

    def unmark_for_deletion(self, nodes: list[Node]) -> None: ...

    def start_drain(self, node: Node, cause: str) -> None: ...

    def launch_replacement(self, plan: ClaimPlan, replaced: list[Node],
                           now_s: float) -> Node | None:
        """Launch `plan`; the replaced nodes drain once it is ready. None if no offering
        could launch."""
        ...

    def buffer_pods(self) -> list[Pod]:
        """The CapacityBuffers' virtual pods now ([] without buffers)."""
        ...

    def unplaced_buffer(self, exclude: set[str] = ...) -> list[Pod]:
        """Virtual pods without room on the live nodes less `exclude`."""
        ...

    def count(self, event: str, n: int = 1) -> None:
        """Add to one of the provider's `events` counters."""
        ...


class Method(Protocol):
    """One disruption method (karpenter types.go `Method`)."""

    name: str  # how the decision log names it
    reason: str  # the budget reason its commands count against

    def should_disrupt(self, node: Node, now_s: float) -> bool:
        """Is this candidate one the method may act on?"""
        ...

    def compute_command(self, candidates: list[Node], now_s: float) -> Command | None:
        """The command to run now, from the candidates that passed `should_disrupt`."""
        ...
