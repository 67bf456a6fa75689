"""The `karpenter.k8s.aws/v1` EC2NodeClass the GPU NodePools launch with.

AMI by alias (the EKS-optimized AL2023 family; Karpenter picks the NVIDIA variant for GPU
instance types), subnets and security groups by the cluster's `karpenter.sh/discovery` tag, a
node role, a root volume large enough for multi-GB serving images and weights, and capacity
reservations when the input has any (layer1-node-provisioning.md 1.3: reserved is tried first).
"""

from __future__ import annotations

from typing import Any

ROOT_VOLUME = "500Gi"  # a 20-28 GB vLLM image plus 70-140 GB of weights cached on the node
# A pre-pulled image (plan/trace_configs.py): Bottlerocket keeps containerd's images on its data
# volume (/dev/xvdb; the OS volume /dev/xvda is 4 GiB by default, Karpenter's Bottlerocket
# defaults), restored here from a snapshot that holds the serving image, filled from S3 at the
# provisioned initialization rate (100-300 MiB/s, the CRD's volumeInitializationRate).
PREPULLED_SNAPSHOT = "snap-REPLACE-with-the-prepulled-image-snapshot"
OS_VOLUME = "4Gi"


def render_ec2nodeclass(
    name: str,
    cluster_name: str,
    role: str,
    reservation_ids: tuple[str, ...] = (),
    reserved: bool = False,
    prepulled_init_mibps: int | None = None,
) -> dict[str, Any]:
    discovery = {"karpenter.sh/discovery": cluster_name}
    data = {"volumeSize": ROOT_VOLUME, "volumeType": "gp3", "encrypted": True}
    if prepulled_init_mibps is None:
        ami, devices = "al2023@latest", [{"deviceName": "/dev/xvda", "rootVolume": True,
                                          "ebs": data}]
    else:
        ami, devices = "bottlerocket@latest", [
            {"deviceName": "/dev/xvda", "ebs": {"volumeSize": OS_VOLUME, "volumeType": "gp3",
                                                "encrypted": True}},
            {"deviceName": "/dev/xvdb", "rootVolume": True, "ebs": dict(
                data, snapshotID=PREPULLED_SNAPSHOT,
                volumeInitializationRate=prepulled_init_mibps)}]
    spec: dict[str, Any] = {
        "amiSelectorTerms": [{"alias": ami}],
        "role": role,
        "subnetSelectorTerms": [{"tags": dict(discovery)}],
        "securityGroupSelectorTerms": [{"tags": dict(discovery)}],
        "blockDeviceMappings": devices,
        "metadataOptions": {"httpTokens": "required", "httpPutResponseHopLimit": 1},
    }
    if reservation_ids:
        spec["capacityReservationSelectorTerms"] = [{"id": rid} for rid in reservation_ids]
    elif reserved:
        spec["capacityReservationSelectorTerms"] = [{"tags": dict(discovery)}]
    return {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
            "metadata": {"name": name}, "spec": spec}
