"""A role's serving workload: a Deployment (one pod per replica) or a LeaderWorkerSet (a
replica spanning pods, gang-scheduled by KAI), its Service and its PodDisruptionBudget.

Pods run vLLM's OpenAI server, go through KAI (`schedulerName: kai-scheduler`, queue label,
priority class `inference`: non-preemptible, layer2 2.3), tolerate the GPU taint and pin to
their NodePool. The readiness probe hits `/health`; the startup probe's budget covers the
cold start, which is also written as `gpuscale.io/cold-start-seconds` for `gpuscale audit`.
"""

from __future__ import annotations

import math
from typing import Any

from gpuscale.catalog import get_instance_type
from gpuscale.plan.model import Role

PORT = 8000
QUEUE_LABEL = "kai.scheduler/queue"  # layer2-scheduling.md 2.1
NODEPOOL_LABEL = "karpenter.sh/nodepool"


def _labels(role: Role) -> dict[str, str]:
    return {"app.kubernetes.io/name": role.name, "app.kubernetes.io/part-of": role.workload,
            "app.kubernetes.io/component": role.role}


def _args(role: Role) -> list[str]:
    # The Run:ai Model Streamer is the weight load the plan simulated (the scenario's default,
    # serving/engine_defaults.py; 3.3x vLLM's safetensors loader on gp3, calibration row A16);
    # it needs the image's `vllm[runai]` extra (docs.vllm.ai, models/extensions/
    # runai_model_streamer).
    args = ["--model", role.model, "--served-model-name", role.workload, "--port", str(PORT),
            "--tensor-parallel-size", str(role.tp), "--gpu-memory-utilization", "0.9",
            "--load-format", "runai_streamer"]
    if role.pp > 1:
        args += ["--pipeline-parallel-size", str(role.pp)]
    if role.precision == "fp8":
        args += ["--quantization", "fp8"]
    if role.role in ("prefill", "decode"):
        args += ["--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_both"}']
    return args


def _resources(role: Role) -> dict[str, Any]:
    it = get_instance_type(role.instance_type)
    share = role.gpus_per_pod / it.num_gpus
    # 80 % of the node's CPU and memory per GPU share: room for daemonsets and the kubelet.
    cpu = max(1, math.floor(it.vcpus * share * 0.8))
    mem = max(1, math.floor(it.memory_gib * share * 0.8))
    return {
        "requests": {"cpu": str(cpu), "memory": f"{mem}Gi", "nvidia.com/gpu": role.gpus_per_pod},
        "limits": {"memory": f"{mem}Gi", "nvidia.com/gpu": role.gpus_per_pod},
    }


def _probe(path: str, period_s: int, failures: int) -> dict[str, Any]:
    return {"httpGet": {"path": path, "port": PORT}, "periodSeconds": period_s,
            "failureThreshold": failures}


def pod_template(role: Role, pool: str, topology: str | None) -> dict[str, Any]:
    annotations: dict[str, str] = {}
    if topology and role.topology_required:
        annotations["kai.scheduler/topology"] = topology
        annotations["kai.scheduler/topology-required-placement"] = role.topology_required
    if topology and role.topology_preferred:
        annotations["kai.scheduler/topology"] = topology
        annotations["kai.scheduler/topology-preferred-placement"] = role.topology_preferred
    startup_failures = math.ceil(1.5 * role.cold_start_s / 10)
    container = {
        "name": "vllm", "image": role.image, "args": _args(role),
        "ports": [{"name": "http", "containerPort": PORT}],
        "resources": _resources(role),
        "startupProbe": _probe("/health", 10, startup_failures),
        "readinessProbe": _probe("/health", 10, 3),
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    metadata: dict[str, Any] = {"labels": {**_labels(role), QUEUE_LABEL: role.tenant}}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "metadata": metadata,
        "spec": {
            "schedulerName": "kai-scheduler",
            "priorityClassName": "inference",
            "nodeSelector": {NODEPOOL_LABEL: pool},
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
            ],
            "terminationGracePeriodSeconds": 120,
            "containers": [container],
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "32Gi"}}],
        },
    }


def _metadata(role: Role) -> dict[str, Any]:
    return {"name": role.name, "namespace": role.namespace,
            "labels": {**_labels(role), QUEUE_LABEL: role.tenant},
            "annotations": {"gpuscale.io/cold-start-seconds": f"{role.cold_start_s:g}"}}


def render_workload(role: Role, pool: str, topology: str | None) -> dict[str, Any]:
    template = pod_template(role, pool, topology)
    if not role.gang:
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _metadata(role),
                "spec": {"replicas": role.min_replicas,
                         "selector": {"matchLabels": {"app.kubernetes.io/name": role.name}},
                         "template": template}}
    meta = _metadata(role)
    meta["annotations"].update(template["metadata"].get("annotations", {}))
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": meta,
        "spec": {
            "replicas": role.min_replicas,
            "startupPolicy": "LeaderCreated",
            "leaderWorkerTemplate": {
                "size": role.pods_per_replica,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "workerTemplate": template,
            },
        },
    }


def render_service(role: Role) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service",
            # The scaler queries select on this label (manifests/prometheus.py), not a namespace.
            "metadata": {"name": role.name, "namespace": role.namespace,
                         "labels": dict(_labels(role), **{"gpuscale.io/scaler-target": role.name})},
            "spec": {"selector": {"app.kubernetes.io/name": role.name},
                     "ports": [{"name": "http", "port": PORT, "targetPort": "http"}]}}


def render_pdb(role: Role) -> dict[str, Any]:
    """maxUnavailable 1: drains proceed one replica at a time, never all at once."""
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": role.name, "namespace": role.namespace},
            "spec": {"maxUnavailable": 1,
                     "selector": {"matchLabels": {"app.kubernetes.io/name": role.name}}}}
