"""CapacityBuffer (`autoscaling.x-k8s.io`): spare capacity held for virtual pods.

The SIG Autoscaling API that Cluster Autoscaler implements and Karpenter supports behind its
`CapacityBuffer` feature gate (alpha since v1.13; reference layer1-node-provisioning.md 1.9;
kubernetes/autoscaler `cluster-autoscaler/apis/capacitybuffer/.../types.go`; kubernetes-sigs/
karpenter `designs/capacity-buffer.md`). A buffer is N chunks of one pod shape; the autoscaler
packs N *virtual* pods, which never exist in the cluster, onto its nodes as if they were pending
pods of the lowest priority, and provisions nodes for the ones that do not fit. Real pods are
scheduled onto that spare room at once (the scheduler never sees the virtual pods), and the
displaced buffer is provisioned again. Nodes hosting buffer room are not empty to scale-down.

Chunks (types.go `CapacityBufferSpec`; Karpenter's `pkg/controllers/capacitybuffer`
`computeReplicas`): `replicas`; `percentage` of the scalable object's current replicas, rounded
up, at least 1 (none while it has no pods); both set -> the larger; `limits` caps the chunks by
their total requests, and alone gives as many chunks as fit. Only the `active-capacity`
provisioning strategy exists.

This module is the shared part: the params, the chunk count and the virtual pods. Each provider
decides when to pack them (Karpenter's provisioner and disruption, CA's scan).
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpuscale.cluster.objects import GPU_RESOURCE, Pod, Toleration
from gpuscale.cluster.state import ClusterState
from gpuscale.provisioning.fit import Bin, first_fit

ACTIVE_CAPACITY: Literal["buffer.x-k8s.io/active-capacity"] = "buffer.x-k8s.io/active-capacity"
# Below any real pod, as Karpenter's design gives buffer pods (designs/capacity-buffer.md).
BUFFER_PRIORITY = -1000
BUFFER_LABEL = "autoscaling.x-k8s.io/buffer"


class CapacityBufferParams(BaseModel):
    """One CapacityBuffer: the chunk's shape and how many chunks to keep room for."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="metadata.name; names the virtual pods.")
    gpus_per_pod: int = Field(ge=1, description="nvidia.com/gpu of one chunk (the referenced "
                              "workload's pod, or the PodTemplate's).")
    cpu_milli: int = Field(0, ge=0, description="CPU request of one chunk, millicores.")
    memory_mib: int = Field(0, ge=0, description="Memory request of one chunk, MiB.")
    node_selector: dict[str, str] = Field(default_factory=dict, description="The chunk pod's "
                                          "nodeSelector.")
    replicas: int | None = Field(None, ge=0, description="spec.replicas: chunks to keep room "
                                 "for.")
    percentage: int | None = Field(None, ge=0, description="spec.percentage: chunks as a "
                                   "percentage of the scalable object's current pods, rounded "
                                   "up to at least 1; needs `scalable_labels`.")
    limits_gpus: float | None = Field(None, ge=0, description="spec.limits nvidia.com/gpu: the "
                                      "chunks' GPUs never exceed this; alone, as many chunks "
                                      "as fit.")
    scalable_labels: dict[str, str] | None = Field(None, description="spec.scalableRef: the "
                                                   "pod labels of the referenced workload "
                                                   "(their count is the base of `percentage`; "
                                                   "{} = every GPU pod); None = podTemplateRef.")
    provisioning_strategy: Literal["buffer.x-k8s.io/active-capacity"] = Field(
        ACTIVE_CAPACITY, description="spec.provisioningStrategy; the API's only strategy.")

    @model_validator(mode="after")
    def _check(self) -> CapacityBufferParams:
        if self.replicas is None and self.percentage is None and self.limits_gpus is None:
            raise ValueError(f"capacity buffer {self.name}: set replicas, percentage or "
                             "limits_gpus")
        if self.percentage is not None and self.scalable_labels is None:
            raise ValueError(f"capacity buffer {self.name}: percentage needs scalable_labels "
                             "(a scalableRef)")
        return self


def _scalable_pods(buffer: CapacityBufferParams, cluster: ClusterState) -> int:
    wanted = buffer.scalable_labels or {}
    return sum(1 for p in cluster.pods.values() if p.gpus > 0 and p.priority > BUFFER_PRIORITY
               and all(p.labels.get(k) == v for k, v in wanted.items()))


def chunks(buffer: CapacityBufferParams, cluster: ClusterState) -> int:
    """How many chunks the buffer wants now (types.go: max of replicas and percentage, capped
    by limits; limits alone: as many as fit)."""
    wanted: int | None = None
    if buffer.replicas is not None:
        wanted = buffer.replicas
    if buffer.percentage is not None:
        base = _scalable_pods(buffer, cluster)
        # At least 1 when both are positive; nothing of a workload with no pods (Karpenter's
        # calculatePercentageReplicas, capacitybuffer/helpers.go).
        by_pct = max(1, math.ceil(base * buffer.percentage / 100)) if (
            buffer.percentage and base) else 0
        wanted = by_pct if wanted is None else max(wanted, by_pct)
    if buffer.limits_gpus is not None:
        cap = int(buffer.limits_gpus // buffer.gpus_per_pod)
        wanted = cap if wanted is None else min(wanted, cap)
    return wanted or 0


def virtual_pods(buffers: list[CapacityBufferParams], cluster: ClusterState) -> list[Pod]:
    """The buffers' virtual pods now, largest first; never added to the cluster."""
    out = []
    for buffer in buffers:
        for i in range(chunks(buffer, cluster)):
            out.append(Pod(name=f"buffer-{buffer.name}-{i}", gpus=buffer.gpus_per_pod,
                           cpu_milli=buffer.cpu_milli, memory_mib=buffer.memory_mib,
                           priority=BUFFER_PRIORITY, labels={BUFFER_LABEL: buffer.name},
                           node_selector=dict(buffer.node_selector),
                           tolerations=(Toleration(key=GPU_RESOURCE, operator="Exists"),)))
    return sorted(out, key=lambda p: (-p.gpus, p.name))


def unplaced(pods: list[Pod], bins: list[Bin]) -> list[Pod]:
    """The virtual pods that find no room on `bins` (which real pods already fill)."""
    return first_fit(pods, bins) if pods else []
