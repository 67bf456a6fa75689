"""Layer 1, nodes: how many GPU nodes exist, of which type, and when they go away.

Belongs here: node providers (`static`, `karpenter`, `cluster_autoscaler`), their params
models, node lifecycle, disruption and spot. Must not bind pods (layer 2) nor decide replica
counts (layer 3); it reacts to pods layer 2 reports as unschedulable.

Registry: `NODE_PROVIDERS` maps the YAML `kind:` to a `ProviderSpec`; `NodeProviderSpec` is the
pydantic union discriminated on `kind`; `build_node_provider(spec)` returns a `NodeProvider`.
"""

from __future__ import annotations

import difflib
from typing import Annotated, Union

from pydantic import Field

from gpuscale.errors import UserInputError
from gpuscale.provisioning import cluster_autoscaler, karpenter, static
from gpuscale.provisioning.base import NodeProvider, ProviderSpec
from gpuscale.provisioning.cluster_autoscaler import ClusterAutoscalerParams
from gpuscale.provisioning.karpenter import KarpenterParams
from gpuscale.provisioning.static import StaticParams

_SPECS = [
    ProviderSpec("static", StaticParams, static.build,
                 "Fixed nodes, optionally ready after a delay; never scales."),
    ProviderSpec("karpenter", KarpenterParams, karpenter.build,
                 "Karpenter NodePools: batching, NodeClaims, consolidation, budgets, spot."),
    ProviderSpec("cluster_autoscaler", ClusterAutoscalerParams, cluster_autoscaler.build,
                 "Cluster Autoscaler node groups: expanders, scale-down timers."),
]


def _registry(specs: list[ProviderSpec]) -> dict[str, ProviderSpec]:
    out: dict[str, ProviderSpec] = {}
    for spec in specs:
        if spec.name in out:
            raise ValueError(f"duplicate node provider kind {spec.name!r}")
        out[spec.name] = spec
    return out


NODE_PROVIDERS = _registry(_SPECS)

NodeProviderSpec = Annotated[Union[StaticParams, KarpenterParams, ClusterAutoscalerParams],
                             Field(discriminator="kind")]


def build_node_provider(spec) -> NodeProvider:
    """Params model (any member of `NodeProviderSpec`) -> a ready-to-attach provider."""
    kind = getattr(spec, "kind", None)
    entry = NODE_PROVIDERS.get(kind)
    if entry is None:
        close = difflib.get_close_matches(str(kind), list(NODE_PROVIDERS), n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise UserInputError(f"unknown node provider kind {kind!r}{hint} "
                             f"(known: {', '.join(NODE_PROVIDERS)})", field="nodes.kind")
    return entry.build(spec)


__all__ = ["NODE_PROVIDERS", "NodeProvider", "NodeProviderSpec", "ProviderSpec",
           "build_node_provider"]
