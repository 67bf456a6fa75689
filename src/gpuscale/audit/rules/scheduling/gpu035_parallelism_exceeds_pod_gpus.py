"""GPU035: a single-pod engine is told to use more GPUs than its pod has."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.rules.scheduling.gangs import engine_spans_pods
from gpuscale.audit.workloads import gpu_templates, gpus_per_pod, parallel_size
from gpuscale.units import gpus_text


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    if obj.kind in ("LeaderWorkerSet", "RayCluster") or engine_spans_pods(obj):
        return  # a multi-node engine spreads its ranks over a group of pods (GPU030, GPU031)
    tp, pp = parallel_size(obj, "tensor"), parallel_size(obj, "pipeline")
    for tmpl in gpu_templates(obj):
        have = gpus_per_pod(tmpl.template)
        if tp * pp > have:
            yield Hit(tmpl.spec_at("containers"), {
                "tp": tp, "pp": pp, "need": tp * pp,
                "have": gpus_text(have)})
            return


RULE = Rule(
    id="GPU035",
    name="engine-parallelism-exceeds-pod-gpus",
    severity=Severity.ERROR,
    kinds=("Deployment", "StatefulSet", "LLMInferenceService"),
    family="scheduling",
    summary="An engine's tensor x pipeline parallel size is larger than the GPUs of its pod.",
    message="tensor parallel {tp} x pipeline parallel {pp} = {need} GPUs, but the pod requests "
    "{have}: the engine cannot start (one engine per pod, no multi-node launcher)",
    why="A serving engine places every rank of its tensor- and pipeline-parallel groups on "
    "GPUs it can see; in a Deployment or StatefulSet each pod is its own engine and sees only "
    "the GPUs its container requested. vLLM checks the world size against the visible GPUs at "
    "start and exits (\"World size (4) is larger than the number of available GPUs (1) in "
    "this node\", ParallelConfig in vllm/config/parallel.py), so every replica crash-loops "
    "while holding the GPUs it did get. Spanning pods needs a multi-node launcher (a "
    "LeaderWorkerSet or RayCluster with Ray, or `--nnodes`), which then needs gang "
    "scheduling (GPU030).",
    fix="Request tensor x pipeline GPUs per pod (`nvidia.com/gpu: 4` for TP 4), or lower the "
    "parallel sizes to the pod's GPUs; to span nodes, run the engine as a LeaderWorkerSet "
    "group with Ray or `--nnodes`.",
    references=(
        "hardware-and-models.md (GPUs per instance, tensor parallelism within a node)",
        "layer2-scheduling.md section 1.4 (multi-pod jobs and gangs)",
    ),
    check=check,
)
