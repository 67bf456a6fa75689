"""Layer 1, nodes: how many GPU nodes exist, of which type, and when they go away.

Belongs here: node providers (`static`, `karpenter`, `cluster_autoscaler`), their params
models, node lifecycle, disruption and spot. Must not bind pods (layer 2) nor decide replica
counts (layer 3); it reacts to pods layer 2 reports as unschedulable.

Registry: `NODE_PROVIDERS` (a `gpuscale.registry.Registry`) maps the YAML `kind:` to a
`ProviderSpec`; `NodeProviderSpec`, the pydantic union discriminated on `kind`, is derived from
it; `build_node_provider(spec)` returns a `NodeProvider`.
"""

from __future__ import annotations

from gpuscale.provisioning import cluster_autoscaler, karpenter, static
from gpuscale.provisioning.base import NodeProvider, ProviderSpec
from gpuscale.provisioning.cluster_autoscaler import ClusterAutoscalerParams
from gpuscale.provisioning.karpenter import KarpenterParams
from gpuscale.provisioning.static import StaticParams
from gpuscale.registry import Registry, params_union

NODE_PROVIDERS: Registry[ProviderSpec] = Registry("node provider kind")
for _spec in (
    ProviderSpec("static", StaticParams, static.build,
                 "Fixed nodes, optionally ready after a delay; never scales."),
    ProviderSpec("karpenter", KarpenterParams, karpenter.build,
                 "Karpenter NodePools: batching, NodeClaims, consolidation, budgets, spot."),
    ProviderSpec("cluster_autoscaler", ClusterAutoscalerParams, cluster_autoscaler.build,
                 "Cluster Autoscaler node groups: expanders, scale-down timers."),
):
    NODE_PROVIDERS.register(_spec.name, _spec)

NodeProviderSpec = params_union(NODE_PROVIDERS)


def build_node_provider(spec) -> NodeProvider:
    """Params model (any member of `NodeProviderSpec`) -> a ready-to-attach provider."""
    entry = NODE_PROVIDERS.require(getattr(spec, "kind", None), field="nodes.kind")
    return entry.build(spec)


__all__ = ["NODE_PROVIDERS", "NodeProvider", "NodeProviderSpec", "ProviderSpec",
           "build_node_provider"]
