"""Karpenter (layer 1): NodePools, batching, NodeClaim lifecycle, consolidation, budgets.

Belongs here: Karpenter's own semantics (reference layer1-node-provisioning.md section 1).
Must not bind pods (layer 2 does) nor know about requests or replicas (the engine does).
"""

from gpuscale.provisioning.karpenter.nodepool import Budget, Disruption, NodePoolParams, Requirement
from gpuscale.provisioning.karpenter.params import CapacityOutage, KarpenterParams
from gpuscale.provisioning.karpenter.provider import KarpenterProvider


def build(params: KarpenterParams) -> KarpenterProvider:
    return KarpenterProvider(params)


__all__ = ["Budget", "CapacityOutage", "Disruption", "KarpenterParams", "KarpenterProvider",
           "NodePoolParams", "Requirement", "build"]
