"""What a strategy's run holds at t=0: its ready replicas and ready nodes.

By default the strategy's own numbers (`initial_replicas`, `ready_nodes`; issue 27), else the
scenario's (`initial_replicas`, `cluster.ready_nodes`). With
`initial_replicas_at_floor`, a run starts at least at its autoscaler's floor (minReplicas,
minReplicaCount, a fixed count), with the nodes those replicas need ready (up to
`cluster.max_nodes`): the steady state of a Deployment that has run under that autoscaler,
which is what `simulate --manifests` imports. `--emit-scenario` sets it, so a sweep that raises
`min_replica_count` starts each run at its new floor instead of scaling up from the emitted
`initial_replicas` at t=0 (issue 30).
"""

from __future__ import annotations

import math

from gpuscale.catalog import get_instance_type

# The floor field of each autoscaler kind that has one, by name (HPA and WVA `min_replicas`,
# KEDA `min_replica_count`, KPA `min_scale`, fixed `replicas`); planners have none.
_FLOOR_FIELDS = ("min_replicas", "min_replica_count", "min_scale")


def autoscaler_floor(spec) -> int:
    """The fewest replicas the autoscaler keeps (0 when it has no floor)."""
    if spec is None:
        return 0
    for name in _FLOOR_FIELDS:
        value = getattr(spec, name, None)
        if isinstance(value, int):
            return value
    if getattr(spec, "kind", None) == "fixed":
        return int(spec.replicas)
    return 0


def initial_state(scenario, strategy) -> tuple[int, int]:
    """(ready replicas, ready nodes) at t=0 of `strategy`'s run of aggregated serving."""
    replicas = (scenario.initial_replicas if strategy.initial_replicas is None
                else strategy.initial_replicas)
    nodes = (scenario.cluster.ready_nodes if strategy.ready_nodes is None
             else strategy.ready_nodes)
    if not scenario.initial_replicas_at_floor or scenario.disaggregation is not None:
        return replicas, nodes
    replicas = max(replicas, autoscaler_floor(strategy.autoscaler))
    gpus = scenario.model.tp * scenario.model.pp
    per_node = max(1, get_instance_type(scenario.cluster.instance_type).num_gpus // gpus)
    needed = math.ceil(replicas / per_node)
    return replicas, min(max(nodes, needed), max(nodes, scenario.cluster.max_nodes))
