"""The `karpenter.k8s.aws/v1` EC2NodeClass the GPU NodePools launch with.

AMI by alias (the EKS-optimized AL2023 family; Karpenter picks the NVIDIA variant for GPU
instance types), subnets and security groups by the cluster's `karpenter.sh/discovery` tag, a
node role, a root volume large enough for multi-GB serving images and weights, and capacity
reservations when the input has any (layer1-node-provisioning.md 1.3: reserved is tried first).
"""

from __future__ import annotations

from typing import Any

ROOT_VOLUME = "500Gi"  # a 20-28 GB vLLM image plus 70-140 GB of weights cached on the node


def render_ec2nodeclass(
    name: str,
    cluster_name: str,
    role: str,
    reservation_ids: tuple[str, ...] = (),
    reserved: bool = False,
) -> dict[str, Any]:
    discovery = {"karpenter.sh/discovery": cluster_name}
    spec: dict[str, Any] = {
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "role": role,
        "subnetSelectorTerms": [{"tags": dict(discovery)}],
        "securityGroupSelectorTerms": [{"tags": dict(discovery)}],
        "blockDeviceMappings": [{"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {
            "volumeSize": ROOT_VOLUME, "volumeType": "gp3", "encrypted": True}}],
        "metadataOptions": {"httpTokens": "required", "httpPutResponseHopLimit": 1},
    }
    if reservation_ids:
        spec["capacityReservationSelectorTerms"] = [{"id": rid} for rid in reservation_ids]
    elif reserved:
        spec["capacityReservationSelectorTerms"] = [{"tags": dict(discovery)}]
    return {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
            "metadata": {"name": name}, "spec": spec}
