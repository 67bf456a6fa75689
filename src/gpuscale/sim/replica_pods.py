"""The pods of one replica: one pod on one node, or a LeaderWorkerSet group spanning nodes.

A replica whose GPUs exceed a node runs as a LeaderWorkerSet group (kubernetes-sigs/lws,
`leaderWorkerTemplate.size` = nodes): a leader pod `<name>` and workers `<name>-1` ...
`<name>-<size-1>`, each holding one node's GPUs. The group is one gang (all or nothing: an
engine cannot start on part of its GPUs), as LWS's gang-scheduling integration writes one
PodGroup per group with minMember = size. Its pods must share a topology domain: one NVLink
domain where the instance's domain spans nodes (GB200 NVL72: `nvidia.com/gpu.clique`, the
label GPU feature discovery sets), else one zone (EFA / InfiniBand within an availability
zone). Any pod of a running group lost means the group restarts (LWS's default
`RestartPolicy: RecreateGroupOnPodRestart`): the fleet evicts the others.
"""

from __future__ import annotations

from dataclasses import replace

from gpuscale.cluster.groups import (
    DEFAULT_QUEUE,
    LWS_SIZE_ANNOTATION,
    PodGroupSpec,
    TopologyConstraint,
)
from gpuscale.cluster.objects import GPU_RESOURCE, NVLINK_CLIQUE_LABEL, Pod, Toleration
from gpuscale.provisioning.fit import ZONE_LABEL
from gpuscale.serving.performance import ReplicaHardware

GROUP_RESTART = "lws-group-restart"


def group_topology(hw: ReplicaHardware) -> TopologyConstraint:
    """One NVLink domain when the instance's domain spans nodes and holds the replica, else
    one zone."""
    layout = hw.layout
    node_gpus = hw.tp // layout.nodes
    if layout.nvlink_domain_gpus > node_gpus and hw.tp <= layout.nvlink_domain_gpus:
        return TopologyConstraint(required_level=NVLINK_CLIQUE_LABEL)
    return TopologyConstraint(required_level=ZONE_LABEL)


def replica_pods(name: str, hw: ReplicaHardware, *, now_s: float, priority: int,
                 labels: dict[str, str], annotations: dict[str, str],
                 pod_group: PodGroupSpec | None) -> list[Pod]:
    """The leader (first) and the workers of one replica; one pod when it fits a node."""
    nodes = hw.layout.nodes
    group = pod_group
    notes = dict(annotations)
    if nodes > 1:
        base = pod_group or PodGroupSpec(name=name, queue=DEFAULT_QUEUE, priority=priority)
        group = replace(base, name=name, min_member=nodes, topology=group_topology(hw))
        notes[LWS_SIZE_ANNOTATION] = str(nodes)
    names = [name] + [f"{name}-{index}" for index in range(1, nodes)]
    # GPU pods tolerate the nvidia.com/gpu taint: the ExtendedResourceToleration admission
    # plugin adds this toleration to any pod requesting nvidia.com/gpu.
    return [Pod(name=pod_name, gpus=hw.tp // nodes, created_s=now_s, priority=priority,
                labels=dict(labels), tolerations=(Toleration(key=GPU_RESOURCE, operator="Exists"),),
                annotations=dict(notes), group_spec=group,
                queue=None if group is None else group.queue)
            for pod_name in names]
