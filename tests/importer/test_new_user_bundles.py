"""Bundles written the way users have them (Helm output with `# Source:` headers, `kind: List`
from kubectl, Kustomize directories, `sh -c` one-liners, env-expanded args, models and
instance types from a user catalog), run through the CLI as a new user would: each simulates
with the `resolved` values its manifests say, or is refused in one line (exit 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gpuscale.cli import cli

BUNDLES = Path(__file__).resolve().parent / "bundles"
CATALOG = BUNDLES / "catalog.yaml"


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    """Five minutes at ~1.5 requests/s, a fixed pattern (no randomness needed)."""
    rows = ["arrival_s,prompt_tokens,output_tokens"]
    rows += [f"{i * 0.7:.3f},{200 + (i * 37) % 1200},{30 + (i * 13) % 250}" for i in range(420)]
    path = tmp_path_factory.mktemp("trace") / "trace.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def run(manifests: str, trace: Path, *extra: str, stdin: str | None = None):
    return CliRunner().invoke(cli, ["simulate", "--manifests", manifests, "--trace", str(trace),
                                    "--catalog", str(CATALOG), "--format", "json", *extra],
                              input=stdin)


# bundle -> (model, tp, precision, kv precision, autoscaler kind, min, max, instance type,
# nodes kind, consolidation policy), each read off the bundle's manifests.
EXPECTED = {
    # production-stack Helm output: the router Deployment (its label selector names the
    # release "vllm") is not a second serving workload.
    "b01_prodstack_helm": ("Mistral-7B-Instruct-v0.3", 1, "bf16", "bf16", "keda", 1, 3,
                           "g5.12xlarge", "pool", None),
    "b02_kserve_style": ("Qwen2.5-32B", 2, "bf16", "bf16", "hpa", 2, 6, "g6e.12xlarge",
                         "karpenter", "WhenEmptyOrUnderutilized"),
    "b03_karpenter_gpu_name": ("Llama-3.1-70B", 4, "bf16", "fp8", "keda", 1, 4, "p5.48xlarge",
                               "karpenter", "WhenEmpty"),
    # `vllm serve --dtype auto --port 8080 MODEL`: the model after flags.
    "b04_list_kind": ("Mistral-7B-Instruct-v0.3", 1, "bf16", "bf16", "hpa", 1, 8,
                      "a3-highgpu-8g", "pool", None),
    # sh -c with ${MODEL_NAME} and $TP_SIZE from the container's env.
    "b05_shell_env": ("Qwen2.5-32B", 4, "bf16", "bf16", "fixed", 1, 1, "g6e.12xlarge", "pool",
                      None),
    # Mixtral-8x7B-Instruct-v0.1 (a revision suffix); --quantization fp8 keeps a bf16 cache.
    "b06_mixtral_hpa": ("Mixtral-8x7B", 2, "fp8", "bf16", "hpa", 1, 4,
                        "Standard_ND96isr_H100_v5", "pool", None),
    "b07_deepseek_statefulset": ("DeepSeek-V2-Lite", 1, "bf16", "bf16", "fixed", 1, 1,
                                 "p5.48xlarge", "pool", None),
    "b08_gemma_a3": ("gemma-2-27b", 2, "bf16", "bf16", "fixed", 1, 1, "a3-highgpu-8g", "pool",
                     None),
    "b09_azure_nd": ("Hermes-3-Llama-3.1-8B", 1, "bf16", "bf16", "keda", 0, 5,
                     "Standard_ND96isr_H100_v5", "cluster_autoscaler", None),
    # A NodePool filtering on instance-gpu-memory (Gt) keeps its instance type.
    "b10_lws_qwen_moe": ("Qwen1.5-MoE-A2.7B", 2, "bf16", "bf16", "fixed", 2, 2, "g5.12xlarge",
                         "karpenter", "WhenEmptyOrUnderutilized"),
    "b11_kustomize": ("Llama-3.1-8B", 1, "bf16", "bf16", "keda", 1, 10, "g6e.2xlarge", "pool",
                      None),
    # `kubectl get -o json` List; a log sidecar first whose args name a vllm.conf.
    "b13_json_list_sidecar": ("Llama-3.1-8B", 1, "bf16", "bf16", "keda", 1, 10, "g6e.2xlarge",
                              "pool", None),
    "b12_llama_ft": ("Hermes-3-Llama-3.1-8B", 1, "bf16", "bf16", "fixed", 3, 3, "g5.12xlarge",
                     "pool", None),
}


@pytest.mark.parametrize("bundle", sorted(EXPECTED))
def test_bundle_simulates_with_what_its_manifests_say(bundle, trace):
    result = run(str(BUNDLES / bundle), trace)
    assert result.exit_code == 0, result.output
    resolved = json.loads(result.output)["runs"][0]["resolved"]
    model, tp, precision, kv, kind, low, high, itype, nodes, policy = EXPECTED[bundle]
    assert resolved["model"] == {"name": model, "tp": tp, "precision": precision,
                                 "kv_precision": kv}
    assert resolved["autoscaler"] == {"kind": kind, "min_replicas": low, "max_replicas": high}
    assert resolved["gpu"]["instance_type"] == itype
    assert (resolved["nodes"]["kind"], resolved["nodes"]["consolidation_policy"]) == (
        nodes, policy)


def test_user_gpu_without_calibration_points_is_flagged(trace):
    result = run(str(BUNDLES / "b12_llama_ft"), trace)
    gpu = json.loads(result.output)["runs"][0]["resolved"]["gpu"]
    assert gpu["name"] == "A10G" and gpu["calibrated"] is False
    table = run(str(BUNDLES / "b12_llama_ft"), trace, "--format", "table")
    assert "A10G, NO calibration points" in table.output


def test_keda_string_thresholds_and_flags_are_read_as_numbers(trace, tmp_path):
    out = tmp_path / "scenario.yaml"
    result = run("-", trace, "--emit-scenario", str(out),
                 stdin=(BUNDLES / "b03_karpenter_gpu_name" / "all.yaml").read_text())
    assert result.exit_code == 0, result.output
    (trigger,) = yaml.safe_load(out.read_text())["strategies"][0]["autoscaler"]["triggers"]
    assert trigger["threshold"] == 8.5 and trigger["activation_threshold"] == 2.0
    assert trigger["ignore_null_values"] is False and trigger["metric_type"] == "AverageValue"
    # The query as written in the ScaledObject, evaluated as PromQL over the simulated series.
    assert trigger["query"].splitlines()[-1].startswith("sum(vllm:num_requests_waiting{")


def _edited(tmp_path: Path, bundle: str, old: str, new: str) -> str:
    target = tmp_path / bundle
    shutil.copytree(BUNDLES / bundle, target)
    for path in target.rglob("*.yaml"):
        text = path.read_text()
        if old in text:
            path.write_text(text.replace(old, new))
            return str(target)
    raise AssertionError(f"{old!r} not in {bundle}")


@pytest.mark.parametrize(("bundle", "old", "new", "expected"), [
    # KEDA on a series no simulated exporter writes (a typo of the vLLM gauge).
    ("b01_prodstack_helm", "query: sum(vllm:num_requests_waiting)",
     "query: sum(vllm:num_request_waiting)", "spec.triggers[0].metadata.query"),
    ("b03_karpenter_gpu_name", 'threshold: "8.5"', 'threshold: "eight"',
     "spec.triggers[0].metadata.threshold"),
    ("b02_kserve_style", "nvidia.com/gpu: 2\n", 'nvidia.com/gpu: "1.5"\n', "containers"),
    ("b02_kserve_style", "nvidia.com/gpu: 2\n", "nvidia.com/gpu: 1\n", "needs 2"),
    # A shell variable the env does not set is named, not read as a model id.
    ("b05_shell_env", "- {name: MODEL_NAME, value: Qwen/Qwen2.5-32B-Instruct}",
     "- {name: HF_HOME, value: /data}", "MODEL_NAME"),
    # Kubernetes `$(VAR)` whose value comes from a Secret/ConfigMap the bundle does not hold.
    ("b08_gemma_a3", "- {name: MODEL_ID, value: google/gemma-2-27b-it}",
     "- {name: MODEL_ID, valueFrom: {configMapKeyRef: {name: m, key: id}}}", "MODEL_ID"),
    ("b10_lws_qwen_moe", 'values: ["16000"]', 'values: ["24000"]', "allow no instance type"),
    # vLLM data parallelism inside the pod: two engines, not one replica of tp GPUs.
    ("b12_llama_ft", '"--max-model-len", "8192"', '"--max-model-len", "8192", "-dp", "2"',
     "--data-parallel-size 2"),
    ("b03_karpenter_gpu_name", 'requests: {nvidia.com/gpu: "4"}', 'requests: {nvidia.com/gpu: 2}',
     "differ from limits"),
    ("b12_llama_ft", 'limits: {nvidia.com/gpu: "1"}', 'limits: {nvidia.com/mig-3g.40gb: 1}',
     "nvidia.com/mig-3g.40gb: MIG slices"),
    ("b12_llama_ft", '"--max-model-len", "8192"', '"--max-model-len", "8.5k"',
     "expects an integer (or 32k, 1M)"),
    # `--enable-chunked-prefill=false` would start vLLM with it on, were it accepted.
    ("b01_prodstack_helm", '"--enable-chunked-prefill"', '"--enable-chunked-prefill=false"',
     "--enable-chunked-prefill takes no value; write --enable-chunked-prefill or "
     "--no-enable-chunked-prefill"),
    # Named in the manifest, not in the scenario the importer builds from it.
    ("b11_kustomize", "metricType: Value", "metricType: value",
     "scaledobject.yaml: spec.triggers[0].metricType"),
    # Checks of the generated scenario name the manifest the value came from.
    ("b07_deepseek_statefulset", '"--block-size", "64"',
     '"--block-size", "64", "--gpu-memory-utilization", "1.5"',
     "sts.yaml: Input should be less than or equal to 1, got 1.5 (read from "
     "StatefulSet/dsv2-lite; scenario field engine.gpu_memory_utilization)"),
    ("b05_shell_env", 'value: "4"', 'value: "3"', "deploy.yaml: tp=3 does not divide"),
    ("b04_list_kind", "    - type: Pods", "    - type: Resource\n      resource: {name: cpu, "
     "target: {type: Utilization, averageUtilization: 70}}\n    - type: Pods",
     "kubectl-get.yaml: spec.metrics[0]"),
])
def test_refused_in_one_line(bundle, old, new, expected, trace, tmp_path):
    result = run(_edited(tmp_path, bundle, old, new), trace)
    assert result.exit_code == 2, result.output
    message = result.output.strip()
    assert "\n" not in message and "Traceback" not in message
    assert message.startswith("gpuscale: error:") and expected in message


def test_variants_users_write_are_read(trace, tmp_path):
    # vLLM's human-readable lengths (k = 1000); flags not simulated are listed.
    bundle = _edited(tmp_path, "b12_llama_ft", '"--max-model-len", "8192"',
                     '"--max-model-len", "8k", "--enforce-eager", "--swap-space", "4"')
    out = tmp_path / "s.yaml"
    result = run(bundle, trace, "--emit-scenario", str(out))
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(out.read_text())["engine"]["max_model_len"] == 8000
    notes = json.loads(result.output)["runs"][0]["imported"]["notes"]
    assert any("--enforce-eager" in n and "--swap-space" in n for n in notes)


def test_amd_gpus_and_requests_only_are_read(trace, tmp_path):
    bundle = _edited(tmp_path, "b12_llama_ft", 'limits: {nvidia.com/gpu: "1"}',
                     'requests: {amd.com/gpu: "1"}')
    result = run(bundle, trace)
    assert result.exit_code == 0, result.output
    notes = json.loads(result.output)["runs"][0]["imported"]["notes"]
    assert any("amd.com/gpu only in resources.requests" in n for n in notes)


def test_max_model_len_beyond_the_model_context_is_noted(trace, tmp_path):
    bundle = _edited(tmp_path, "b08_gemma_a3", "--max-model-len=4096", "--max-model-len=16384")
    result = run(bundle, trace)
    assert result.exit_code == 0, result.output
    notes = json.loads(result.output)["runs"][0]["imported"]["notes"]
    assert any("--max-model-len 16384 exceeds the model's 8192-token context" in n
               for n in notes)


def test_trace_on_stdin_is_refused_with_what_works(trace):
    result = CliRunner().invoke(cli, ["simulate", "--manifests", str(BUNDLES / "b12_llama_ft"),
                                      "--trace", "-", "--catalog", str(CATALOG)],
                                input=trace.read_text())
    assert result.exit_code == 2
    assert result.output.strip() == ("gpuscale: error: --trace: a trace is read from a file, not "
                                     "stdin (the scenario refers to it by path; --manifests - "
                                     "reads stdin); save it and give the path")


def test_emitted_scenario_runs_the_same(trace, tmp_path):
    out = tmp_path / "scenario.yaml"
    first = run(str(BUNDLES / "b02_kserve_style"), trace, "--emit-scenario", str(out))
    again = CliRunner().invoke(cli, ["simulate", str(out), "--catalog", str(CATALOG),
                                     "--format", "json"])
    assert first.exit_code == 0 and again.exit_code == 0, again.output
    a, b = (json.loads(r.output)["runs"][0] for r in (first, again))
    assert a["resolved"] == b["resolved"] and a["gpu_hours"] == b["gpu_hours"]


def test_a_kserve_inference_service_alone_says_what_to_give(trace, tmp_path):
    (tmp_path / "isvc.yaml").write_text(yaml.safe_dump({
        "apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
        "metadata": {"name": "mistral"},
        "spec": {"predictor": {"model": {"modelFormat": {"name": "huggingface"},
                                         "args": ["--model_id=mistralai/Mistral-7B-v0.3"]}}}}))
    result = run(str(tmp_path), trace)
    assert result.exit_code == 2
    assert "InferenceService/mistral is not read: give the Deployment" in result.output


def test_karpenter_v1beta1_nodepool_is_read_in_its_v1_form(trace, tmp_path):
    bundle = _edited(tmp_path, "b02_kserve_style", "apiVersion: karpenter.sh/v1\n",
                     "apiVersion: karpenter.sh/v1beta1\n")
    path = Path(bundle) / "deploy.yaml"
    path.write_text(path.read_text()
                    .replace("consolidationPolicy: WhenEmptyOrUnderutilized",
                             "consolidationPolicy: WhenUnderutilized")
                    .replace("    consolidateAfter: 5m", "    expireAfter: 168h")
                    .replace("nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass,",
                             "nodeClassRef: {apiVersion: karpenter.k8s.aws/v1beta1, "
                             "kind: EC2NodeClass,"))
    out = tmp_path / "s.yaml"
    result = run(bundle, trace, "--emit-scenario", str(out))
    assert result.exit_code == 0, result.output
    (pool,) = yaml.safe_load(out.read_text())["strategies"][0]["nodes"]["node_pools"]
    # WhenEmptyOrUnderutilized after 0s is the v1 default, so the emitted pool omits it.
    assert pool.get("disruption", {}).get("consolidate_after", "0s") == "0s"
    assert pool["expire_after"] == "168h"
    nodes = json.loads(result.output)["runs"][0]["resolved"]["nodes"]
    assert nodes["consolidation_policy"] == "WhenEmptyOrUnderutilized"


def test_a_scaler_in_another_namespace_is_not_the_workloads(trace, tmp_path):
    bundle = _edited(tmp_path, "b03_karpenter_gpu_name",
                     "  name: llama-70b\n  namespace: inference\nspec:\n  scaleTargetRef:",
                     "  name: llama-70b\n  namespace: staging\nspec:\n  scaleTargetRef:")
    result = run(bundle, trace)
    assert result.exit_code == 0, result.output
    run_json = json.loads(result.output)["runs"][0]
    assert run_json["resolved"]["autoscaler"]["kind"] == "fixed"
    assert any("ScaledObject/staging/llama-70b targets llama-70b in another namespace" in n
               for n in run_json["imported"]["notes"])
