"""The GPU-inference heuristic, pod counts, cold start and the cluster-object conversion."""

from __future__ import annotations

import sys

from click.testing import CliRunner

from gpuscale.audit import audit_objects, parse_text
from gpuscale.audit.cluster import manifests_from_items
from gpuscale.audit.workloads import (
    DEFAULT_COLD_START_S,
    cold_start_s,
    gpus_per_pod,
    is_gpu_inference,
    parallel_size,
    roles,
    total_pods,
)
from gpuscale.cli import cli


def deploy(image="vllm/vllm-openai:v0.11.0", gpus=1, labels="", annotations="", extra=""):
    return parse_text(f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
{annotations}spec:
  replicas: 3
  template:
    metadata:
      labels: {{app: d{labels}}}
    spec:
      containers:
      - name: c
        image: {image}
        args: ["--tensor-parallel-size=4", "-pp", "2"]
        resources:
          limits: {{nvidia.com/gpu: {gpus}}}
{extra}""", "d.yaml")[0]


def test_inference_heuristic():
    assert is_gpu_inference(deploy())
    assert is_gpu_inference(deploy(image="lmsysorg/sglang:latest"))
    assert not is_gpu_inference(deploy(image="busybox"))
    assert is_gpu_inference(deploy(image="busybox", labels=", role: decode"))
    assert not is_gpu_inference(deploy(gpus=0))
    assert not is_gpu_inference(
        deploy(annotations="  annotations: {gpuscale.io/workload: training}\n")
    )
    assert is_gpu_inference(
        deploy(image="busybox", annotations="  annotations: {gpuscale.io/workload: inference}\n")
    )
    assert roles(deploy(image="busybox", labels=", role: decode")) == {"decode"}


def test_counts_and_parallelism():
    obj = deploy()
    assert total_pods(obj) == 3
    assert gpus_per_pod(obj.data["spec"]["template"]) == 1
    assert parallel_size(obj, "tensor") == 4 and parallel_size(obj, "pipeline") == 2


def test_cold_start_sources():
    assert cold_start_s(deploy()) == (DEFAULT_COLD_START_S, "the default estimate for a 70B engine")
    probe = ("        startupProbe: {httpGet: {path: /health, port: 8000}, periodSeconds: 10, "
             "failureThreshold: 60}\n")
    assert cold_start_s(deploy(extra=probe))[0] == 600
    annotated = deploy(annotations="  annotations: {gpuscale.io/cold-start-seconds: \"900\"}\n")
    assert cold_start_s(annotated)[0] == 900


def test_cluster_items_convert_and_audit():
    items = [
        {
            "metadata": {"name": "gpu"},
            "spec": {
                "template": {
                    "spec": {
                        "requirements": [
                            {
                                "key": "node.kubernetes.io/instance-type",
                                "operator": "In",
                                "values": ["p5.48xlarge"],
                            }
                        ]
                    }
                }
            },
        }
    ]
    objs = manifests_from_items(items, "NodePool", "karpenter.sh/v1")
    assert objs[0].ref == "NodePool/gpu" and objs[0].source == "cluster://NodePool/gpu"
    ids = {f.rule_id for f in audit_objects(objs)}
    assert {"GPU020", "GPU021", "GPU022", "GPU023"} <= ids


def test_audit_cluster_without_client(monkeypatch):
    monkeypatch.setitem(sys.modules, "kubernetes", None)
    result = CliRunner().invoke(cli, ["audit", "--cluster"])
    assert result.exit_code == 2 and "gpuscale[cluster]" in result.output


_LWS_GROUP = """
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: wide-ep}
spec:
  leaderWorkerTemplate:
    size: 2
    leaderTemplate:
      spec:
        containers:
        - name: vllm
          image: vllm/vllm-openai:v0.11.0
          command: [sh, -c, "exec vllm serve --data-parallel-size 16 --enable-expert-parallel"]
          readinessProbe: {httpGet: {path: /health, port: 8000}}
          resources: {limits: {nvidia.com/gpu: 8}}
    workerTemplate:
      spec:
        containers:
        - name: vllm
          image: vllm/vllm-openai:v0.11.0
          command: [sh, -c, "exec vllm serve --data-parallel-size 16 WORKER_FLAGS"]
          resources: {limits: {nvidia.com/gpu: 8}}
"""


def test_a_headless_group_worker_needs_no_readiness_probe():
    """GPU050 flagged the headless DP-rank workers of a wide-EP group (they serve no HTTP, the
    Service reaches the leader); a worker that serves without a probe still fires."""
    def gpu050(worker_flags: str) -> list:
        objects = parse_text(_LWS_GROUP.replace("WORKER_FLAGS", worker_flags), "lws.yaml")
        return [f for f in audit_objects(objects) if f.rule_id == "GPU050"]

    assert gpu050("--headless --data-parallel-start-rank $((LWS_WORKER_INDEX * 8))") == []
    fired = gpu050("--port 8000")
    assert [f.yaml_path for f in fired] == ["spec.leaderWorkerTemplate.workerTemplate.spec."
                                            "containers[0]"]
