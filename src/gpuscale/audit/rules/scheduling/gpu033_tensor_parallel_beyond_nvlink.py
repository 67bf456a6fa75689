"""GPU033: tensor parallelism wider than one NVLink domain of the instances the pods can use."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.rules.scheduling.instances import candidate_instances
from gpuscale.audit.workloads import gpu_templates, parallel_size


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    templates = gpu_templates(obj)
    tp = parallel_size(obj, "tensor")
    if not templates or tp <= 1:
        return
    instances, source = candidate_instances(obj, ctx)
    widest = max(instances, key=lambda it: it.nvlink_domain_gpus, default=None)
    if widest is not None and tp > widest.nvlink_domain_gpus:
        yield Hit(
            templates[0].spec_at("containers"),
            {"tp": tp, "domain": widest.nvlink_domain_gpus, "name": widest.name, "source": source},
        )


RULE = Rule(
    id="GPU033", name="tensor-parallel-wider-than-nvlink-domain", severity=Severity.WARNING,
    kinds=("Deployment", "StatefulSet", "LeaderWorkerSet", "RayCluster", "LLMInferenceService"),
    family="scheduling",
    summary="Tensor parallelism spans more GPUs than one NVLink domain of the available instances.",
    message="tensor-parallel size {tp} exceeds the largest NVLink domain ({domain} GPUs on {name}, "
            "from {source}): all-reduces cross the network every layer",
    why="Tensor parallelism all-reduces activations twice per transformer layer. Inside an NVLink "
        "domain that costs microseconds; across nodes it runs over the network at a fraction of "
        "the bandwidth and dominates step time. Pipeline parallelism across nodes is the usual way "
        "to go beyond one domain.",
    fix="Keep tensor-parallel size within one NVLink domain (e.g. 8 on p5.48xlarge) and use "
        "pipeline parallelism or data parallelism across nodes.",
    references=("hardware-and-models.md (instance types, NVLink domain sizes)",),
    check=check,
)
