"""GPU026: an EC2NodeClass used by a GPU NodePool gives nodes too little disk for LLM images."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.nodepools import is_gpu_nodepool
from gpuscale.audit.values import quantity
from gpuscale.units import GIB

# hardware-and-models.md section 4: vLLM images are 12-28.6 GB uncompressed and filled 50 GB
# node disks; pulling needs the compressed layers and the extracted copy at once, plus any
# weights cached on the node. 100 GiB leaves room for one image and its extraction.
MIN_ROOT_VOLUME_GIB = 100.0


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    users = [p.name for p in ctx.of_kind("NodePool") if is_gpu_nodepool(p)
             and (p.get("spec", "template", "spec", "nodeClassRef") or {}).get("name") == obj.name]
    if not users:
        return
    for i, mapping in enumerate(obj.get("spec", "blockDeviceMappings") or []):
        if not isinstance(mapping, dict):
            continue
        size = (mapping.get("ebs") or {}).get("volumeSize")
        if size is None or not (
            mapping.get("rootVolume") or len(obj.get("spec", "blockDeviceMappings")) == 1
        ):
            continue
        gib = quantity(size, f"spec.blockDeviceMappings[{i}].ebs.volumeSize") / GIB
        if gib < MIN_ROOT_VOLUME_GIB:
            yield Hit(
                ("spec", "blockDeviceMappings", i, "ebs", "volumeSize"),
                {
                    "size": size,
                    "gib": f"{gib:g}",
                    "min": f"{MIN_ROOT_VOLUME_GIB:g}",
                    "pools": ", ".join(users),
                },
            )


RULE = Rule(
    id="GPU026",
    name="gpu-node-disk-too-small-for-llm-images",
    severity=Severity.WARNING,
    kinds=("EC2NodeClass",),
    family="nodes",
    summary=(
        "A GPU NodePool's EC2NodeClass gives nodes a root volume "
        "too small for LLM serving images."
    ),
    message="root volume {size} ({gib} GiB) for GPU NodePool(s) {pools} is under {min} GiB; "
    "a vLLM image alone is 12-29 GB uncompressed",
    why="LLM serving images are tens of GB and the kubelet needs the compressed layers and the "
    "extracted copy at the same time. A small root disk fails the pull with disk pressure, or "
    "evicts other images so every new pod re-pulls, adding minutes to each cold start.",
    fix="Give GPU node classes a root volume of at least 100Gi (more if weights are cached on the "
    "node), or pre-bake images into the AMI or a snapshot.",
    references=(
        "hardware-and-models.md section 4 (image sizes; 50 GB disks filling)",
        "calibration.md A17 (image pull and extract time)",
    ),
    check=check,
)
