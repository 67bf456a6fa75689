"""The `karpenter.k8s.aws/v1` EC2NodeClass the GPU NodePools launch with.

AMI by alias (the EKS-optimized AL2023 family; Karpenter picks the NVIDIA variant for GPU
instance types), subnets and security groups by the cluster's `karpenter.sh/discovery` tag, a
node role, a root volume large enough for the serving image and the largest served model's
weights (`root_volume_gib`), and capacity
reservations when the input has any (layer1-node-provisioning.md 1.3: reserved is tried first).
"""

from __future__ import annotations

import math
from typing import Any

from gpuscale.catalog import get_model
from gpuscale.catalog.specs import Precision
from gpuscale.units import GIB

MIN_ROOT_VOLUME_GIB = 500  # a 20-28 GB vLLM image plus 70-140 GB of weights cached on the node
# hardware-and-models.md section 4: vLLM images are up to 28.6 GB uncompressed, and a pull
# holds the compressed layers and the extracted copy at once.
IMAGE_PULL_GIB = 2 * 28.6e9 / GIB


def root_volume_gib(models: tuple[str, ...] = ()) -> int:
    """Room for the image and the largest served model's weights as downloaded (BF16: an
    upper bound, `--quantization fp8` quantizes BF16 weights on load), in whole 100 GiB, at
    least MIN_ROOT_VOLUME_GIB: DeepSeek-V3 (~1,250 GiB in BF16) needs 1,400 GiB."""
    weights_gib = max((get_model(m).weight_bytes(Precision.BF16) / GIB for m in models),
                      default=0.0)
    return max(MIN_ROOT_VOLUME_GIB, 100 * math.ceil((weights_gib + IMAGE_PULL_GIB) / 100))


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
    models: tuple[str, ...] = (),
    prepulled_init_mibps: int | None = None,
) -> dict[str, Any]:
    discovery = {"karpenter.sh/discovery": cluster_name}
    data = {"volumeSize": f"{root_volume_gib(models)}Gi", "volumeType": "gp3", "encrypted": True}
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
