"""Cluster Autoscaler (layer 1): node groups, expanders, scale-up simulation, scale-down.

Belongs here: CA's own semantics (reference layer1-node-provisioning.md section 2). Must not
bind pods nor know about requests or replicas.
"""

from gpuscale.provisioning.cluster_autoscaler.params import ClusterAutoscalerParams, NodeGroupParams
from gpuscale.provisioning.cluster_autoscaler.provider import ClusterAutoscalerProvider


def build(params: ClusterAutoscalerParams) -> ClusterAutoscalerProvider:
    return ClusterAutoscalerProvider(params)


__all__ = ["ClusterAutoscalerParams", "ClusterAutoscalerProvider", "NodeGroupParams", "build"]
