"""audit on manifests as the projects ship them (tests/upstream/README.md): the kinds that carry
GPU autoscaling are read (AIBrix PodAutoscaler, KServe LLMInferenceService, LeaderWorkerSet),
every output names the kinds it did not read and the files it could not read, and the false
positives issue 30 found stay quiet (GPU051 on one replica, GPU050 with a startupProbe, GPU030
on a TP4 engine in a 1-GPU pod)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gpuscale.audit import audit_objects, load_inputs, parse_text
from gpuscale.audit.workloads import gpu_templates, parallel_size
from gpuscale.cli import cli

UPSTREAM = Path(__file__).resolve().parents[1] / "upstream"


def _findings(*paths: Path | str, text: str | None = None):
    objects = parse_text(text, "m.yaml") if text is not None else load_inputs(
        [str(p) for p in paths])
    return [(f.rule_id, f.object_ref, f.yaml_path) for f in audit_objects(objects)]


def test_an_aibrix_podautoscaler_on_a_renamed_vllm_metric_is_read():
    found = _findings(UPSTREAM / "aibrix" / "deploy.yaml", UPSTREAM / "aibrix" / "kpa.yaml")
    assert ("GPU004", "PodAutoscaler/default/deepseek-r1-distill-llama-8b-kpa",
            "spec.metricsSources[0].targetMetric") in found


def test_an_aibrix_podautoscaler_on_cpu_of_a_gpu_pod_is_read(tmp_path):
    apa = yaml.safe_load((UPSTREAM / "aibrix" / "apa-resource.yaml").read_text())
    apa["spec"]["scaleTargetRef"]["name"] = "deepseek-r1-distill-llama-8b"
    text = (UPSTREAM / "aibrix" / "deploy.yaml").read_text() + "\n---\n" + yaml.safe_dump(apa)
    assert ("GPU003", "PodAutoscaler/default/mock-llama2-7b-hpa1",
            "spec.metricsSources[0].targetMetric") in _findings(text=text)


def test_a_kserve_llminferenceservice_is_a_gpu_workload_with_its_prefill_pool():
    (obj,) = load_inputs([str(UPSTREAM / "kserve" / "llm-inference-service-pd-qwen2-7b-gpu.yaml")])
    paths = [t.spec_at("containers") for t in gpu_templates(obj)]
    assert paths == [("spec", "template", "containers"),
                     ("spec", "prefill", "template", "containers")]
    found = _findings(UPSTREAM / "kserve" / "llm-inference-service-qwen2-7b-gpu.yaml")
    # Three replicas and no PDB: flagged; no readinessProbe is not (KServe's preset adds it).
    assert ("GPU051", "LLMInferenceService/qwen2-7b-instruct-single", "spec") in found
    assert not [f for f in found if f[0] == "GPU050"]


LLMISVC_SCALED = """apiVersion: serving.kserve.io/v1alpha2
kind: LLMInferenceService
metadata: {name: chat, namespace: serve}
spec:
  model: {uri: "hf://Qwen/Qwen2.5-7B-Instruct"}
  parallelism: {tensor: 4}
  scaling:
    minReplicas: 1
    maxReplicas: 4
    keda:
      idleReplicaCount: 0
      triggers:
      - type: prometheus
        metadata:
          serverAddress: http://prometheus:9090
          query: sum(vllm:gpu_cache_usage_perc{model_name="chat"})
          threshold: "0.7"
  template:
    containers:
    - name: main
      resources:
        limits: {nvidia.com/gpu: "1"}
"""


def test_a_kserve_scaling_section_is_read_as_a_keda_scaler():
    found = _findings(text=LLMISVC_SCALED)
    ref = "LLMInferenceService/serve/chat"
    assert ("GPU004", ref, "spec.scaling.keda.triggers[0].metadata.query") in found
    assert ("GPU011", ref, "spec.scaling.keda.idleReplicaCount") in found
    # parallelism.tensor 4 on a 1-GPU template: the engine cannot start.
    assert ("GPU035", ref, "spec.template.containers") in found


def test_a_leaderworkerset_reads_underscored_flags_and_probes_only_its_leader():
    (obj,) = load_inputs([str(UPSTREAM / "lws" / "vllm-gpu-lws.yaml")])
    assert parallel_size(obj, "pipeline") == 2  # `--pipeline_parallel_size 2`
    found = _findings(UPSTREAM / "lws" / "vllm-gpu-lws.yaml")
    probes = [path for rule, _, path in found if rule == "GPU050"]
    assert probes == ["spec.leaderWorkerTemplate.leaderTemplate.spec.containers[0]"
                      ".readinessProbe"]  # tcpSocket on the leader; workers serve no traffic
    assert any(rule == "GPU030" for rule, _, _ in found)


def test_production_stacks_rendered_deployment_has_no_false_positive():
    # One replica (GPU051 has nothing to protect) and a startupProbe on /health without a
    # readinessProbe (the pod is Ready only once started): both were flagged before.
    assert _findings(UPSTREAM / "production-stack" / "vllm-deployment.yaml") == []


def _deployment(replicas: int, probes: str = "readinessProbe", tp: int = 1, gpus: int = 1,
                name: str = "m") -> str:
    return f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: serve}}
spec:
  replicas: {replicas}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        args: ["Qwen/Qwen3-32B", "--tensor-parallel-size", "{tp}"]
        resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}
        {probes}: {{httpGet: {{path: /health, port: 8000}}}}
"""


HPA = """---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: m, namespace: serve}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: m}
  minReplicas: 1
  maxReplicas: 4
  metrics:
  - type: Pods
    pods:
      metric: {name: vllm:num_requests_waiting}
      target: {type: AverageValue, averageValue: "5"}
"""


def test_gpu051_counts_the_replicas_an_autoscaler_can_add():
    assert not [f for f in _findings(text=_deployment(1)) if f[0] == "GPU051"]
    assert [f for f in _findings(text=_deployment(1) + HPA) if f[0] == "GPU051"]
    assert [f for f in _findings(text=_deployment(2)) if f[0] == "GPU051"]


def test_gpu050_takes_an_http_startup_probe_without_a_readiness_probe():
    assert not [f for f in _findings(text=_deployment(2, "startupProbe")) if f[0] == "GPU050"]
    tcp = _deployment(2, "startupProbe").replace("httpGet: {path: /health, port: 8000}",
                                                 "tcpSocket: {port: 8000}")
    (finding,) = [f for f in audit_objects(parse_text(tcp, "m.yaml")) if f.rule_id == "GPU050"]
    assert "startup (no readinessProbe) with tcpSocket" in finding.message


def test_tp4_in_a_one_gpu_pod_is_an_engine_that_cannot_start_not_a_gang():
    found = audit_objects(parse_text(_deployment(2, tp=4, gpus=1), "m.yaml"))
    ids = {f.rule_id for f in found}
    assert "GPU030" not in ids and "GPU035" in ids
    (gpu035,) = [f for f in found if f.rule_id == "GPU035"]
    assert "= 4 GPUs, but the pod requests 1 GPU:" in gpu035.message
    assert not [f for f in audit_objects(parse_text(_deployment(2, tp=4, gpus=4), "m.yaml"))
                if f.rule_id in ("GPU030", "GPU035")]


def _bundle_with_a_broken_file(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    shutil.copytree(UPSTREAM / "aibrix", folder)
    (folder / "zz-broken.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\nmetadata: {name: b}\n")
    return folder


@pytest.mark.parametrize("fmt", ["table", "json", "yaml", "sarif"])
def test_a_directory_with_one_unreadable_file_is_audited_and_the_file_named(tmp_path, fmt):
    folder = _bundle_with_a_broken_file(tmp_path)
    result = CliRunner().invoke(cli, ["audit", str(folder), "-o", fmt])
    assert result.exit_code == 2
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("gpuscale: error:")]
    assert len(errors) == 1 and "zz-broken.yaml" in errors[0] and "the rest was audited" \
        in errors[0]
    out = result.stdout
    assert "GPU004" in out and "zz-broken.yaml" in out and "duplicate key" in out
    assert "Service" in out  # the kind no rule reads, named in every format
    if fmt == "json":
        data = json.loads(out)
        assert data["not_read"] == {"Service": 1} and data["errors"][0]["source"].endswith(
            "zz-broken.yaml")
    if fmt == "sarif":
        invocation = json.loads(out)["runs"][0]["invocations"][0]
        assert invocation["executionSuccessful"] is False
        levels = [n["level"] for n in invocation["toolExecutionNotifications"]]
        assert levels == ["error", "note"]


def test_a_single_unreadable_file_is_still_one_line(tmp_path):
    folder = _bundle_with_a_broken_file(tmp_path)
    result = CliRunner().invoke(cli, ["audit", str(folder / "zz-broken.yaml")])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "duplicate key" in result.stderr


def test_kinds_no_rule_reads_are_named_in_a_clean_audit(tmp_path):
    result = CliRunner().invoke(cli, ["audit", str(UPSTREAM / "kserve"), "-o", "json"])
    data = json.loads(result.stdout)
    assert data["not_read"] == {} and data["objects"] == 2  # both LLMInferenceServices read
    svc = tmp_path / "svc.yaml"
    svc.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: s}\n")
    result = CliRunner().invoke(cli, ["audit", str(svc)])
    assert result.exit_code == 0
    assert "not audited (no rule reads these kinds): Service (1)" in result.stdout
