"""GPU050: an inference container without a readiness probe on the engine's health endpoint."""

from __future__ import annotations

from collections.abc import Iterator

from gpuscale.audit.context import AuditContext
from gpuscale.audit.loader import Manifest
from gpuscale.audit.model import Hit, Rule, Severity
from gpuscale.audit.workloads import (
    HEALTH_PATHS,
    LLM_INFERENCE_SERVICE,
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
    templates = gpu_templates(obj)
    for tmpl in templates:
        worker = len(templates) > 1 and _serves_no_traffic(tmpl)
        for i, container in enumerate(containers(tmpl.template)):
            if container_gpus(container) == 0 or _group_worker_without_server(obj, tmpl.path,
                                                                              container):
                continue
            if worker and not _runs_server(container):
                continue
            where = tmpl.spec_at("containers", i)
            field, probe = _gating_probe(container)
            if probe is None:
                if obj.kind == LLM_INFERENCE_SERVICE:
                    continue  # KServe's preset template supplies the engine's probes
                yield Hit(where, {"name": container.get("name", i), "what": "has no readinessProbe",
                                  "paths": " or ".join(paths)})
                continue
            http = probe.get("httpGet")
            what = "readiness" if field == "readinessProbe" else "startup (no readinessProbe)"
            if not isinstance(http, dict):
                kind = next((k for k in ("tcpSocket", "exec", "grpc") if k in probe), "non-HTTP")
                yield Hit(where + (field,), {"name": container.get("name", i),
                          "what": f"probes {what} with {kind}", "paths": " or ".join(paths)})
            elif str(http.get("path", "/")).split("?")[0] not in paths:
                yield Hit(where + (field, "httpGet", "path"), {
                    "name": container.get("name", i),
                    "what": f"probes {what} on {http.get('path', '/')}",
                    "paths": " or ".join(paths)})


def _runs_server(container: dict) -> bool:
    """A worker container that starts an API server itself (`vllm serve` or an entrypoint,
    not vLLM's `--headless` ranks): its readiness may gate traffic after all."""
    words = " ".join(str(w) for w in (container.get("command") or [])
                     + (container.get("args") or []))
    return "--headless" not in words and ("serve" in words or "entrypoints" in words)


def _serves_no_traffic(tmpl) -> bool:
    """A multi-node group's worker pods: only the leader serves requests (a LeaderWorkerSet's
    leader Service, KServe's head pod), so a worker's readiness gates no traffic."""
    where = tmpl.spec_path or tmpl.path
    return bool(where) and where[-1] in ("workerTemplate", "worker")


def _gating_probe(container: dict) -> tuple[str, dict | None]:
    """The probe that decides when the container first receives traffic: its readinessProbe;
    without one, its startupProbe (a container with no readinessProbe is Ready once started,
    and it is started only when the startupProbe succeeds: Kubernetes "Container probes")."""
    for field in ("readinessProbe", "startupProbe"):
        probe = container.get(field)
        if isinstance(probe, dict):
            return field, probe
    return "readinessProbe", None


RULE = Rule(
    id="GPU050",
    name="inference-without-engine-readiness-probe",
    severity=Severity.WARNING,
    kinds=("Deployment", "StatefulSet", "LeaderWorkerSet", "LLMInferenceService"),
    family="availability",
    summary="A GPU inference container has no readiness (or, without one, startup) probe on its "
    "engine's health endpoint.",
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
