"""What a workload is: its pod templates, GPUs per pod, serving engine, role and cold start.

GPU inference heuristic (documented in docs/audit.md): a workload is *GPU inference* when one of
its pod templates requests `nvidia.com/gpu` and either a container's image, command or args
names a serving engine (vLLM, SGLang, TGI, TensorRT-LLM, Triton, Dynamo, llm-d), or the
workload or its pods carry a prefill/decode role label. The label or annotation
`gpuscale.io/workload: inference|training` overrides the guess either way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuscale.audit.loader import Manifest, PathKey
from gpuscale.audit.values import quantity

GPU_RESOURCE = "nvidia.com/gpu"
WORKLOAD_ANNOTATION = "gpuscale.io/workload"
SLO_ANNOTATION = "gpuscale.io/slo-critical"
COLD_START_ANNOTATION = "gpuscale.io/cold-start-seconds"

# Engine keyword -> engine. Order matters: the first match in an image/command wins.
ENGINE_PATTERNS = (
    ("sglang", "sglang"), ("vllm", "vllm"), ("text-generation-inference", "tgi"),
    ("text-generation-launcher", "tgi"), ("tgi", "tgi"), ("trtllm", "trtllm"),
    ("tensorrt-llm", "trtllm"), ("tensorrt_llm", "trtllm"), ("tritonserver", "triton"),
    ("triton", "triton"), ("dynamo", "dynamo"), ("llm-d", "vllm"),
)
# Health endpoints each engine serves (readiness should hit one of these, not just a port).
HEALTH_PATHS = {
    "vllm": ("/health", "/v1/models", "/ping"),
    "sglang": ("/health", "/health_generate", "/v1/models"),
    "tgi": ("/health", "/info"),
    "trtllm": ("/health", "/v1/models", "/v2/health/ready"),
    "triton": ("/v2/health/ready",),
    "dynamo": ("/health", "/live", "/v1/models"),
}
ROLE_LABEL_KEYS = ("role", "llm-d.ai/role", "app.kubernetes.io/component", "component",
                   "nvidia.com/dynamo-component-type", "leaderworkerset.sigs.k8s.io/role")

# hardware-and-models.md section 4 / calibration.md A15: a 70B vLLM engine takes about 3.5 min
# from container start to ready with a cold compile cache (P2P check 60 s, weights 10 s,
# Dynamo 15 s, torch.compile 70 s, CUDA graphs 60 s). Used when nothing better is known.
DEFAULT_COLD_START_S = 210.0


@dataclass(frozen=True)
class PodTemplate:
    path: PathKey  # inside the workload object, to the template (has `spec`)
    template: dict
    replicas: int  # how many pods of this template one instance of the workload runs
    # Where the pod's spec and metadata sit in the object when that is not `path` + "spec" /
    # "metadata" (a KServe LLMInferenceService holds a bare PodSpec under `template` and the
    # pod labels beside it).
    spec_path: PathKey | None = None
    metadata_path: PathKey | None = None

    def spec_at(self, *parts) -> PathKey:
        """The object path of `parts` inside the pod spec (for a finding's position)."""
        return (self.spec_path if self.spec_path is not None else self.path + ("spec",)) + parts

    def metadata_at(self, *parts) -> PathKey:
        base = self.metadata_path if self.metadata_path is not None else self.path + ("metadata",)
        return base + parts


def _int(value, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def pod_templates(obj: Manifest) -> list[PodTemplate]:
    """Pod templates of a workload, with the pod count each stands for."""
    spec = obj.get("spec") or {}
    kind = obj.kind
    out: list[PodTemplate] = []
    if kind in ("Deployment", "StatefulSet", "ReplicaSet"):
        out.append(PodTemplate(("spec", "template"), spec.get("template") or {},
                               _int(spec.get("replicas"), 1)))
    elif kind == "Job":
        out.append(PodTemplate(("spec", "template"), spec.get("template") or {},
                               _int(spec.get("parallelism"), 1)))
    elif kind == "CronJob":
        job = (spec.get("jobTemplate") or {}).get("spec") or {}
        out.append(PodTemplate(("spec", "jobTemplate", "spec", "template"),
                               job.get("template") or {}, _int(job.get("parallelism"), 1)))
    elif kind == "LeaderWorkerSet":
        lwt = spec.get("leaderWorkerTemplate") or {}
        size = _int(lwt.get("size"), 1)
        worker = lwt.get("workerTemplate") or {}
        leader = lwt.get("leaderTemplate")
        base = ("spec", "leaderWorkerTemplate")
        if leader:
            out.append(PodTemplate(base + ("leaderTemplate",), leader, 1))
            out.append(PodTemplate(base + ("workerTemplate",), worker, size - 1))
        else:
            out.append(PodTemplate(base + ("workerTemplate",), worker, size))
    elif kind == "RayCluster":
        head = spec.get("headGroupSpec") or {}
        out.append(
            PodTemplate(("spec", "headGroupSpec", "template"), head.get("template") or {}, 1)
        )
        for i, group in enumerate(spec.get("workerGroupSpecs") or []):
            count = _int(group.get("replicas", group.get("minReplicas")), 1) * _int(
                group.get("numOfHosts"), 1
            )
            out.append(PodTemplate(("spec", "workerGroupSpecs", i, "template"),
                                   group.get("template") or {}, count))
    elif kind == "Pod":
        out.append(PodTemplate((), obj.data, 1))
    elif kind == LLM_INFERENCE_SERVICE:
        out += _llmisvc_templates(spec, ("spec",))
        prefill = spec.get("prefill")
        if isinstance(prefill, dict):
            out += _llmisvc_templates(prefill, ("spec", "prefill"))
    return out


# KServe's LLM workload (serving.kserve.io LLMInferenceService; pkg/apis/serving/v1alpha1/
# llm_inference_service_types.go WorkloadSpec): `template` and `worker` are bare PodSpecs, the
# pod labels sit beside them. With `worker`, each replica is a LeaderWorkerSet group of
# `parallelism` GetSize() pods: data / dataLocal, else pipeline (llm_inference_service_types_
# func.go); KServe runs vLLM unless a `runtime` says otherwise (the default config template).
LLM_INFERENCE_SERVICE = "LLMInferenceService"


def _llmisvc_group_size(workload: dict) -> int:
    parallel = workload.get("parallelism") or {}
    data, local = _int(parallel.get("data"), 0), _int(parallel.get("dataLocal"), 0)
    if data > 0 or local > 0:
        return max(max(data, 1) // max(local, 1), 1)
    return max(_int(parallel.get("pipeline"), 1), 1)


def _llmisvc_templates(workload: dict, base: PathKey) -> list[PodTemplate]:
    meta = {key: workload.get(key) or {} for key in ("labels", "annotations")}
    out = []
    head = workload.get("template")
    worker = workload.get("worker")
    size = _llmisvc_group_size(workload) if isinstance(worker, dict) else 1
    if isinstance(head, dict):
        out.append(PodTemplate(base, {"metadata": meta, "spec": head}, 1,
                               spec_path=base + ("template",), metadata_path=base))
    if isinstance(worker, dict) and size > 1:
        out.append(PodTemplate(base, {"metadata": meta, "spec": worker}, size - 1,
                               spec_path=base + ("worker",), metadata_path=base))
    return out


def containers(template: dict) -> list[dict]:
    spec = template.get("spec") or {}
    return [c for c in (spec.get("containers") or []) if isinstance(c, dict)]


def container_gpus(container: dict) -> int:
    resources = container.get("resources") or {}
    counts = [quantity((resources.get(part) or {}).get(GPU_RESOURCE, 0) or 0,
                       f"resources.{part}.{GPU_RESOURCE}") for part in ("limits", "requests")]
    return int(max(counts))


def gpus_per_pod(template: dict) -> int:
    """GPUs one pod asks for (init containers run before, so they only count if larger)."""
    spec = template.get("spec") or {}
    main = sum(container_gpus(c) for c in containers(template))
    init = max((container_gpus(c) for c in spec.get("initContainers") or [] if isinstance(c, dict)),
               default=0)
    return max(main, init)


def gpu_templates(obj: Manifest) -> list[PodTemplate]:
    return [t for t in pod_templates(obj) if gpus_per_pod(t.template) > 0]


def total_pods(obj: Manifest) -> int:
    """Pods that must run together for one instance (an LWS group, a Job's parallel pods)."""
    return sum(t.replicas for t in pod_templates(obj))


def _words(container: dict) -> str:
    parts = [str(container.get("image", ""))]
    parts += [str(x) for x in (container.get("command") or []) + (container.get("args") or [])]
    return " ".join(parts).lower()


def engine_of(obj: Manifest) -> str | None:
    """The serving engine a GPU container runs, guessed from image, command and args (an
    LLMInferenceService's containers often name none: KServe's default template runs vLLM)."""
    for tmpl in gpu_templates(obj):
        for container in containers(tmpl.template):
            words = _words(container)
            for keyword, engine in ENGINE_PATTERNS:
                if keyword in words:
                    return engine
    if obj.kind == LLM_INFERENCE_SERVICE and gpu_templates(obj):
        return "vllm"
    return None


def all_labels(obj: Manifest) -> dict:
    labels = dict(obj.labels)
    for tmpl in pod_templates(obj):
        labels.update((tmpl.template.get("metadata") or {}).get("labels") or {})
    return labels


def roles(obj: Manifest) -> set[str]:
    """Disaggregated-serving roles (prefill, decode) named by the workload's labels or args."""
    found: set[str] = set()
    values = [str(v).lower() for k, v in all_labels(obj).items() if k in ROLE_LABEL_KEYS]
    for tmpl in pod_templates(obj):
        for container in containers(tmpl.template):
            values.extend(re.findall(r"(?:--role|kv_role)[ =\"':]+(\w+)", _words(container)))
    for value in values:
        for role in ("prefill", "decode"):
            if role in value:
                found.add(role)
    return found


def _override(obj: Manifest, key: str) -> str | None:
    value = obj.annotations.get(key, obj.labels.get(key))
    return str(value).lower() if value is not None else None


def is_gpu_inference(obj: Manifest) -> bool:
    override = _override(obj, WORKLOAD_ANNOTATION)
    if override is not None:
        return override == "inference" and bool(gpu_templates(obj))
    if not gpu_templates(obj) or obj.kind in ("Job", "CronJob"):
        return False
    return engine_of(obj) is not None or bool(roles(obj))


def is_slo_critical(obj: Manifest) -> bool:
    """Inference is latency-SLO critical unless marked `gpuscale.io/slo-critical: "false"`."""
    override = _override(obj, SLO_ANNOTATION)
    if override is not None:
        return override in ("true", "yes", "1")
    return is_gpu_inference(obj)


def cold_start_s(obj: Manifest) -> tuple[float, str]:
    """Seconds from pod start to serving, and where the number came from."""
    value = obj.annotations.get(COLD_START_ANNOTATION)
    if value is not None:
        try:
            return float(value), f"annotation {COLD_START_ANNOTATION}"
        except ValueError:
            pass
    for tmpl in gpu_templates(obj):
        for container in containers(tmpl.template):
            probe = container.get("startupProbe")
            if isinstance(probe, dict):
                # Kubernetes defaults: failureThreshold 3, periodSeconds 10.
                budget = _int(probe.get("initialDelaySeconds"), 0) + _int(
                    probe.get("failureThreshold"), 3
                ) * _int(probe.get("periodSeconds"), 10)
                return float(budget), "the startupProbe budget"
    return DEFAULT_COLD_START_S, "the default estimate for a 70B engine"


# Every engine's spellings, compared with underscores read as dashes: vLLM takes both
# (`--tensor_parallel_size`), trtllm-serve declares `--tp_size` / `--tensor_parallel_size`,
# SGLang `--tp-size` / `--tensor-parallel-size` (importer/vllm_args.py, sglang_args.py,
# trtllm_args.py).
_PARALLEL_FLAGS = {
    "tensor": ("--tensor-parallel-size", "-tp", "--tp-size", "--tp"),
    "pipeline": ("--pipeline-parallel-size", "-pp", "--pp-size", "--pp"),
}


def parallel_size(obj: Manifest, kind: str) -> int:
    """Largest tensor- or pipeline-parallel degree named in any container's args (1 if none)."""
    best = 1
    if obj.kind == LLM_INFERENCE_SERVICE:
        for workload in (obj.get("spec") or {}, obj.get("spec", "prefill") or {}):
            parallel = (workload.get("parallelism") or {}) if isinstance(workload, dict) else {}
            best = max(best, _int(parallel.get(kind), 1))
    flags = _PARALLEL_FLAGS[kind]
    for tmpl in pod_templates(obj):
        for container in containers(tmpl.template):
            tokens = " ".join(
                str(x) for x in (container.get("command") or []) + (container.get("args") or [])
            )
            for flag, value in re.findall(r"(--?[\w-]+)[ =]+(\d+)", tokens):
                if (flag.replace("_", "-") if flag.startswith("--") else flag) in flags:
                    best = max(best, int(value))
    return best
