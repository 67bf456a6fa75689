"""How many pods and nodes a scenario may ask for, checked before anything is built.

A `fixed` autoscaler holding 1,000,000,000 replicas, a KEDA `max_replica_count` of 10^12, a
node group of 10^9 nodes or a schedule job of 10^6 pods is not a cluster: the run would create
that many objects and never finish (issue 30). The bounds are Kubernetes' own tested limits
for one cluster (kubernetes.io/docs/setup/best-practices/cluster-large/: no more than 5,000
nodes and 150,000 pods); anything larger cannot be the cluster being studied.
"""

from __future__ import annotations

from pydantic import BaseModel

MAX_PODS = 150_000
MAX_NODES = 5_000

# Fields (anywhere in a strategy's autoscaler or node provider, or the scenario's own) that
# count replicas (pods) or nodes.
POD_FIELDS = frozenset({"replicas", "initial_replicas", "max_replicas", "min_replicas",
                        "max_replica_count", "min_replica_count", "idle_replica_count",
                        "max_scale", "min_scale"})
NODE_FIELDS = frozenset({"count", "max_size", "min_size", "max_nodes", "ready_nodes"})


def over_limit(node: object, where: str = "") -> str | None:
    """The first field under `node` (a model, or a model dump) past its bound, said as
    `path: why`. A model is walked over the fields its input set (defaults are in bounds)."""
    stack: list[tuple[str, object]] = [(where, node)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, BaseModel):
            items = [(name, getattr(value, name)) for name in value.model_fields_set]
        elif isinstance(value, dict):
            items = list(value.items())
        elif isinstance(value, (list, tuple)):
            stack.extend((f"{path}[{i}]", child) for i, child in enumerate(value))
            continue
        else:
            continue
        for key, child in items:
            here = f"{path}.{key}" if path else str(key)
            bound = MAX_PODS if key in POD_FIELDS else MAX_NODES if key in NODE_FIELDS else None
            if bound is not None and isinstance(child, int) and child > bound:
                what = "pods" if bound == MAX_PODS else "nodes"
                return (f"{here}: {child:,} is more than the {bound:,} {what} of the largest "
                        "cluster Kubernetes supports (docs/input-limits.md)")
            stack.append((here, child))
    return None
