"""A role's serving workload: a Deployment (one pod per replica) or a LeaderWorkerSet (a
replica spanning pods, gang-scheduled by KAI), its Service and its PodDisruptionBudget.

Pods run vLLM's OpenAI server, go through KAI (`schedulerName: kai-scheduler`, queue label,
priority class `inference`: non-preemptible, layer2 2.3), tolerate the GPU taint and pin to
their NodePool. The readiness probe hits `/health`; the startup probe's budget covers the
cold start, which is also written as `gpuscale.io/cold-start-seconds` for `gpuscale audit`.

A replica spanning nodes is one LeaderWorkerSet group of whole-node pods. Only the leader
(worker index 0) serves HTTP, so only it has probes and only it is behind the Service. With DP
attention each pod runs its node's data-parallel ranks and the workers are headless
(vLLM docs/serving/data_parallel_deployment.md, multi-node: `--data-parallel-size-local`,
`--data-parallel-start-rank`, `--data-parallel-address`, `--headless`); otherwise the group is
one Ray cluster that the leader's engine spans with TP x PP (kubernetes-sigs/lws
docs/examples/vllm/GPU/lws.yaml). LWS gives every container LWS_LEADER_ADDRESS,
LWS_GROUP_SIZE and LWS_WORKER_INDEX (api/leaderworkerset/v1/leaderworkerset_types.go).
"""

from __future__ import annotations

import math
import shlex
from typing import Any

from gpuscale.catalog import get_instance_type
from gpuscale.plan.model import Role

PORT = 8000
QUEUE_LABEL = "kai.scheduler/queue"  # layer2-scheduling.md 2.1
NODEPOOL_LABEL = "karpenter.sh/nodepool"


def _labels(role: Role) -> dict[str, str]:
    return {"app.kubernetes.io/name": role.name, "app.kubernetes.io/part-of": role.workload,
            "app.kubernetes.io/component": role.role}


DP_RPC_PORT = 13345  # vLLM's data-parallel RPC port in its multi-node examples
WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"  # LWS sets it on every pod
# the Ray bootstrap script the vLLM image ships (kubernetes-sigs/lws docs/examples/vllm)
RAY_BOOTSTRAP = "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh"


def _parallel_args(role: Role) -> list[str]:
    """vLLM's parallelism flags. DP attention: TP inside a rank, one engine per rank
    (`--data-parallel-size`), experts over all GPUs (`--enable-expert-parallel`)."""
    if role.dp_attention:
        args = ["--tensor-parallel-size", "1", "--data-parallel-size", str(role.tp)]
    else:
        args = ["--tensor-parallel-size", str(role.tp)]
        if role.pp > 1:
            args += ["--pipeline-parallel-size", str(role.pp)]
    if role.ep > 1:
        args += ["--enable-expert-parallel"]
    return args


def _args(role: Role) -> list[str]:
    # The Run:ai Model Streamer is the weight load the plan simulated (the scenario's default,
    # serving/engine_defaults.py; 3.3x vLLM's safetensors loader on gp3, calibration row A16);
    # it needs the image's `vllm[runai]` extra (docs.vllm.ai, models/extensions/
    # runai_model_streamer).
    args = ["--model", role.model, "--served-model-name", role.workload, "--port", str(PORT),
            *_parallel_args(role), "--gpu-memory-utilization", "0.9",
            "--load-format", "runai_streamer"]
    if role.precision == "fp8":
        # The plan sized and simulated an FP8 KV cache beside FP8 weights (the scenario's
        # default, serving/precision_support.default_kv_precision); vLLM's --kv-cache-dtype
        # auto would keep the cache in bf16 (the activations' dtype), half the tokens, and the
        # replay imported from these manifests would be another, slower deployment.
        args += ["--quantization", "fp8", "--kv-cache-dtype", "fp8"]
    if role.role in ("prefill", "decode"):
        args += ["--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_both"}']
    return args


def _group_commands(role: Role) -> tuple[list[str], list[str]]:
    """The leader's and the workers' `sh -c` command lines of a group spanning nodes."""
    serve = "vllm serve " + " ".join(shlex.quote(a) for a in _args(role))
    if role.dp_attention:
        dp = (f" --data-parallel-size-local {role.gpus_per_pod} --data-parallel-address "
              f"$(LWS_LEADER_ADDRESS) --data-parallel-rpc-port {DP_RPC_PORT}")
        worker = (f"exec {serve}{dp} --headless --data-parallel-start-rank "
                  f"$((LWS_WORKER_INDEX * {role.gpus_per_pod}))")
        return ["sh", "-c", f"exec {serve}{dp}"], ["sh", "-c", worker]
    leader = (f"{RAY_BOOTSTRAP} leader --ray_cluster_size=$(LWS_GROUP_SIZE); exec {serve} "
              "--distributed-executor-backend ray")
    return (["sh", "-c", leader],
            ["sh", "-c", f"{RAY_BOOTSTRAP} worker --ray_address=$(LWS_LEADER_ADDRESS)"])


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


def pod_template(role: Role, pool: str, topology: str | None,
                 command: list[str] | None = None, serves_http: bool = True) -> dict[str, Any]:
    """A pod of the role: vLLM with its args (or a group member's `command`); probes and the
    port only where the pod serves HTTP."""
    annotations: dict[str, str] = {}
    if topology and role.topology_required:
        annotations["kai.scheduler/topology"] = topology
        annotations["kai.scheduler/topology-required-placement"] = role.topology_required
    if topology and role.topology_preferred:
        annotations["kai.scheduler/topology"] = topology
        annotations["kai.scheduler/topology-preferred-placement"] = role.topology_preferred
    startup_failures = math.ceil(1.5 * role.cold_start_s / 10)
    container: dict[str, Any] = {"name": "vllm", "image": role.image}
    container.update({"command": command} if command else {"args": _args(role)})
    container["resources"] = _resources(role)
    if serves_http:
        container.update({"ports": [{"name": "http", "containerPort": PORT}],
                          "startupProbe": _probe("/health", 10, startup_failures),
                          "readinessProbe": _probe("/health", 10, 3)})
    container["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
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
    if not role.gang:
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _metadata(role),
                "spec": {"replicas": role.min_replicas,
                         "selector": {"matchLabels": {"app.kubernetes.io/name": role.name}},
                         "template": pod_template(role, pool, topology)}}
    leader_command, worker_command = _group_commands(role)
    leader = pod_template(role, pool, topology, leader_command)
    meta = _metadata(role)
    meta["annotations"].update(leader["metadata"].get("annotations", {}))
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
                "leaderTemplate": leader,
                "workerTemplate": pod_template(role, pool, topology, worker_command,
                                               serves_http=False),
            },
        },
    }


def render_service(role: Role) -> dict[str, Any]:
    # a group's workers serve no HTTP: the Service (and the scrape) reaches its leader only
    selector = {"app.kubernetes.io/name": role.name,
                **({WORKER_INDEX_LABEL: "0"} if role.gang else {})}
    return {"apiVersion": "v1", "kind": "Service",
            # The scaler queries select on this label (manifests/prometheus.py), not a namespace.
            "metadata": {"name": role.name, "namespace": role.namespace,
                         "labels": dict(_labels(role), **{"gpuscale.io/scaler-target": role.name})},
            "spec": {"selector": selector,
                     "ports": [{"name": "http", "port": PORT, "targetPort": "http"}]}}


def render_pdb(role: Role) -> dict[str, Any]:
    """maxUnavailable 1: drains proceed one replica at a time, never all at once."""
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": role.name, "namespace": role.namespace},
            "spec": {"maxUnavailable": 1,
                     "selector": {"matchLabels": {"app.kubernetes.io/name": role.name}}}}
