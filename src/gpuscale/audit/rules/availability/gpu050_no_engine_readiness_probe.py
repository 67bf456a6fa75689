"""GPU050: an inference container without a readiness probe on the engine's health endpoint."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.workloads import (
    HEALTH_PATHS,
    container_gpus,
    containers,
    engine_of,
    gpu_templates,
    is_gpu_inference,
)


def _group_worker_without_server(obj: Manifest, path: tuple, container: dict) -> bool:
    """A LeaderWorkerSet worker beside a leader serves no HTTP when it runs vLLM's headless
    data-parallel ranks (`--headless`, vLLM docs/serving/data_parallel_deployment.md) or only
    joins the leader's Ray cluster (no `serve` / entrypoint): nothing routes to it, so it has
    nothing to probe."""
    if path[-1:] != ("workerTemplate",) or not obj.get("spec", "leaderWorkerTemplate",
                                                       "leaderTemplate"):
        return False
    words = " ".join(str(w) for w in (container.get("command") or [])
                     + (container.get("args") or []))
    return "--headless" in words or not ("serve" in words or "entrypoints" in words)


def check(obj: Manifest, ctx: AuditContext) -> Iterator[Hit]:
    if not is_gpu_inference(obj):
        return
    engine = engine_of(obj) or "vllm"
    paths = HEALTH_PATHS.get(engine, HEALTH_PATHS["vllm"])
    for tmpl in gpu_templates(obj):
        for i, container in enumerate(containers(tmpl.template)):
            if container_gpus(container) == 0 or _group_worker_without_server(obj, tmpl.path,
                                                                              container):
                continue
            where = tmpl.path + ("spec", "containers", i)
            probe = container.get("readinessProbe")
            if not isinstance(probe, dict):
                yield Hit(where, {"name": container.get("name", i), "what": "has no readinessProbe",
                                  "paths": " or ".join(paths)})
                continue
            http = probe.get("httpGet")
            if not isinstance(http, dict):
                kind = next((k for k in ("tcpSocket", "exec", "grpc") if k in probe), "non-HTTP")
                yield Hit(where + ("readinessProbe",), {"name": container.get("name", i),
                          "what": f"probes readiness with {kind}", "paths": " or ".join(paths)})
            elif str(http.get("path", "/")).split("?")[0] not in paths:
                yield Hit(where + ("readinessProbe", "httpGet", "path"), {
                    "name": container.get("name", i), "what": f"probes {http.get('path', '/')}",
                    "paths": " or ".join(paths)})


RULE = Rule(
    id="GPU050",
    name="inference-without-engine-readiness-probe",
    severity=Severity.WARNING,
    kinds=("Deployment", "StatefulSet", "LeaderWorkerSet"),
    family="availability",
    summary="A GPU inference container has no readiness probe on its engine's health endpoint.",
    message=(
        "container {name} {what}; it receives traffic before "
        "the model is loaded. Probe {paths}"
    ),
    why="An LLM server opens its port long before it can answer: loading weights, compiling and "
    "capturing CUDA graphs take minutes. Without an HTTP readiness probe on the engine's "
    "health endpoint the Service routes requests to a replica that fails or queues them, and "
    "autoscalers count it as capacity too early.",
    fix="Add `readinessProbe.httpGet` on `/health` (vLLM, SGLang, TGI) or `/v2/health/ready` "
    "(Triton), and a `startupProbe` long enough for the cold start.",
    references=(
        "serving-engine-metrics.md section 9 (reaction chain: model load -> readiness -> metrics)",
        "layer3-replica-autoscaling.md section 1.4 (not-ready pods in HPA math)",
    ),
    check=check,
)
