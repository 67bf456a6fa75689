"""Each manifest kind the importer reads, and each refusal, on edits of the example bundle."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from gpuscale.errors import UserInputError
from gpuscale.importer.build import import_manifests
from gpuscale.importer.catalog_files import use_catalogs
from gpuscale.importer.traces import detect_format

from .bundle import CATALOG, TRACE, container, load_docs, of_kind, write_bundle

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "traces"

HPA = {
    "apiVersion": "autoscaling/v2",
    "kind": "HorizontalPodAutoscaler",
    "metadata": {"name": "qwen3-32b", "namespace": "llm"},
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "qwen3-32b"},
        "minReplicas": 1,
        "maxReplicas": 3,
        "metrics": [
            {
                "type": "Pods",
                "pods": {
                    "metric": {"name": "vllm_num_requests_waiting"},
                    "target": {"type": "AverageValue", "averageValue": "5"},
                },
            }
        ],
        "behavior": {
            "scaleDown": {
                "stabilizationWindowSeconds": 600,
                "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
            }
        },
    },
}


def imported(tmp_path: Path, docs: list[dict], trace: Path = TRACE):
    use_catalogs([CATALOG])
    return import_manifests([str(write_bundle(tmp_path, docs))], trace)


def refused(tmp_path: Path, docs: list[dict], *expected: str) -> str:
    with pytest.raises(UserInputError) as info:
        imported(tmp_path, docs)
    message = str(info.value)
    assert "\n" not in message
    for text in expected:
        assert text in message, message
    return message


def without(docs: list[dict], kind: str) -> list[dict]:
    return [d for d in docs if d["kind"] != kind]


def test_hpa_is_read_with_its_behavior_and_adapter_metric_name(tmp_path):
    docs = without(load_docs(), "ScaledObject") + [copy.deepcopy(HPA)]
    imp = imported(tmp_path, docs)
    spec = imp.scenario.strategies[0].autoscaler
    assert spec.kind == "hpa" and (spec.min_replicas, spec.max_replicas) == (1, 3)
    assert spec.metrics[0].metric == "vllm:num_requests_waiting"
    assert spec.behavior.scale_down.stabilization_window_s == 600
    assert spec.behavior.scale_down.policies[0].period_s == 60
    assert any("adapter metric" in n for n in imp.notes)


def test_hpa_external_metric_is_a_sum_with_a_note(tmp_path):
    hpa = copy.deepcopy(HPA)
    hpa["spec"]["metrics"] = [{"type": "External", "external": {
        "metric": {"name": "vllm:num_requests_running"},
        "target": {"type": "AverageValue", "averageValue": "24"}}}]
    imp = imported(tmp_path, without(load_docs(), "ScaledObject") + [hpa])
    query = imp.scenario.strategies[0].autoscaler.metrics[0].query
    assert (query.metric, query.aggregation) == ("vllm:num_requests_running", "sum")
    assert any("External metric" in n for n in imp.notes)


def test_hpa_cpu_metric_is_refused(tmp_path):
    hpa = copy.deepcopy(HPA)
    hpa["spec"]["metrics"] = [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
    refused(tmp_path, without(load_docs(), "ScaledObject") + [hpa], "Resource metric 'cpu'")


def test_no_scaler_holds_spec_replicas(tmp_path):
    docs = without(load_docs(), "ScaledObject")
    of_kind(docs, "Deployment")["spec"]["replicas"] = 2
    imp = imported(tmp_path, docs)
    assert imp.scenario.strategies[0].autoscaler.kind == "fixed"
    assert imp.scenario.initial_replicas == 2
    assert any("held at spec.replicas (2)" in d for d in imp.defaults)


def test_two_scalers_on_one_deployment_are_refused(tmp_path):
    refused(tmp_path, load_docs() + [copy.deepcopy(HPA)], "several autoscalers scale qwen3-32b",
            "GPU014")


def test_statefulset_and_leaderworkerset_are_read(tmp_path):
    docs = load_docs()
    deployment = of_kind(docs, "Deployment")
    deployment["kind"] = "StatefulSet"
    assert imported(tmp_path / "sts", docs).scenario.model.tp == 4
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
           "metadata": deployment["metadata"],
           "spec": {"replicas": 1, "leaderWorkerTemplate": {
               "size": 1, "workerTemplate": deployment["spec"]["template"]}}}
    docs = without(docs, "StatefulSet") + [lws]
    assert imported(tmp_path / "lws", docs).scenario.model.name == "Qwen3-32B"
    # A group of 2 pods of 4 GPUs for an engine of 4 GPUs: refused (it ran as one pod); an
    # engine of 8 GPUs over the two pods is one replica across nodes (tests/importer/lws).
    lws["spec"]["leaderWorkerTemplate"]["size"] = 2
    refused(tmp_path / "lws2", docs, "group of 2 pods requests 8 GPUs (4 each)",
            "parallelism uses 4")


def test_engine_arguments_are_read_in_both_spellings_and_from_env(tmp_path):
    docs = load_docs()
    c = container(docs)
    c["command"] = ["/bin/sh", "-c"]
    c["args"] = [("vllm serve $(MODEL) --tensor-parallel-size 4 --max-num-batched-tokens 4096 "
                  "--max-num-seqs=64 --kv-cache-dtype fp8 --load-format runai_streamer")]
    c["env"].append({"name": "MODEL", "value": "Qwen/Qwen3-32B"})
    c["env"].append({"name": "VLLM_SKIP_P2P_CHECK", "value": "1"})
    scenario = imported(tmp_path, docs).scenario
    assert (scenario.engine.max_num_batched_tokens, scenario.engine.max_num_seqs) == (4096, 64)
    assert scenario.model.kv_precision.value == "fp8"
    assert scenario.cold_start.loader == "streamer" and scenario.cold_start.skip_p2p_check


def test_fp8_checkpoint_is_read_from_the_model_id(tmp_path):
    docs = load_docs()
    container(docs)["args"][0] = "Qwen/Qwen3-32B-FP8"
    scenario = imported(tmp_path, docs).scenario
    assert scenario.model.name == "Qwen3-32B" and scenario.model.precision.value == "fp8"


@pytest.mark.parametrize(
    "edit, expected",
    [
        (
            lambda c: c["resources"]["limits"].update({"nvidia.com/gpu": "2"}),
            "requests 2 GPU(s) but vLLM's parallelism needs 4",
        ),
        (
            lambda c: c["args"].__setitem__(0, "mistralai/Mistral-Small-3.2-24B-Instruct-2506"),
            "'mistralai/Mistral-Small-3.2-24B-Instruct-2506' is not in the catalog",
        ),
        (lambda c: c["args"].append("--quantization=awq"), "only bf16 and fp8 weights"),
        (lambda c: c["args"].append("--max-num-seqs=lots"), "--max-num-seqs expects an integer"),
        # Found by fuzzing: a ZeroDivisionError traceback (GPUs per node // 0).
        (lambda c: c["args"].append("--tensor-parallel-size=0"),
         "--tensor-parallel-size expects an integer >= 1, got '0'"),
        (lambda c: c["args"].append("-pp=-2"), "-pp expects an integer >= 1, got '-2'"),
        (
            lambda c: c.update(image="nginx", command=["nginx"]),
            "no Deployment, StatefulSet or LeaderWorkerSet running vLLM",
        ),
    ],
)
def test_container_refusals(tmp_path, edit, expected):
    docs = load_docs()
    edit(container(docs))
    refused(tmp_path, docs, expected)


def test_untolerated_nodepool_taint_is_refused(tmp_path):
    docs = load_docs()
    of_kind(docs, "Deployment")["spec"]["template"]["spec"]["tolerations"].pop()
    refused(tmp_path, docs, "does not tolerate taint workload=llm:NoSchedule", "NodePool/gpu-l40s")


def test_non_prometheus_trigger_is_refused(tmp_path):
    docs = load_docs()
    of_kind(docs, "ScaledObject")["spec"]["triggers"][0]["type"] = "cpu"
    refused(tmp_path, docs, "trigger type 'cpu' is not simulated", "spec.triggers[0].type",
            "ScaledObject/llm/qwen3-32b, line")


def test_unsupported_query_in_a_scaledobject_names_file_and_field(tmp_path):
    docs = load_docs()
    of_kind(docs, "ScaledObject")["spec"]["triggers"][0]["metadata"]["query"] = \
        "sum by (pod) (vllm:num_requests_waiting_total)"
    message = refused(tmp_path, docs, "spec.triggers[0].metadata.query",
                      "'vllm:num_requests_waiting_total', which the simulated cluster does not "
                      "expose", "did you mean")
    assert message.startswith(str(tmp_path / "bundle" / "all.yaml"))


def test_no_nodepool_needs_an_instance_type_selector(tmp_path):
    docs = without(without(load_docs(), "NodePool"), "EC2NodeClass")
    refused(tmp_path / "a", docs, "no Karpenter NodePool")
    of_kind(docs, "Deployment")["spec"]["template"]["spec"]["nodeSelector"] = {
        "node.kubernetes.io/instance-type": "g6e.12xlarge"}
    imp = imported(tmp_path / "b", docs)
    assert imp.scenario.strategies[0].nodes is None
    assert imp.scenario.cluster.instance_type == "g6e.12xlarge"


def test_nodepool_allowing_no_catalog_instance_type_is_refused(tmp_path):
    docs = load_docs()
    reqs = of_kind(docs, "NodePool")["spec"]["template"]["spec"]["requirements"]
    reqs[0]["values"] = ["g6e.48xlarge"]
    refused(tmp_path, docs, "NodePool(s) gpu-l40s allow no instance type", "--catalog")


def test_balanced_consolidation_is_simulated(tmp_path):
    docs = load_docs()
    of_kind(docs, "NodePool")["spec"]["disruption"]["consolidationPolicy"] = "Balanced"
    pool = imported(tmp_path, docs).scenario.strategies[0].nodes.node_pools[0]
    assert pool.disruption.consolidation_policy == "Balanced"


def test_bad_nodepool_field_names_the_manifest(tmp_path):
    docs = load_docs()
    of_kind(docs, "NodePool")["spec"]["disruption"]["consolidateAfter"] = "soon"
    refused(tmp_path, docs, "NodePool/gpu-l40s", "consolidateAfter")


def test_small_root_volume_is_noted(tmp_path):
    docs = load_docs()
    of_kind(docs, "EC2NodeClass")["spec"]["blockDeviceMappings"][0]["ebs"]["volumeSize"] = "50Gi"
    imp = imported(tmp_path, docs)
    assert any("50 GiB volume" in n and "GPU026" in n for n in imp.notes)


@pytest.mark.parametrize("size", ["-300Gi", "0", "0Gi"])
def test_a_volume_of_no_size_is_refused(tmp_path, size):
    """Found by probing: a negative or zero root volume was accepted without a word."""
    docs = load_docs()
    of_kind(docs, "EC2NodeClass")["spec"]["blockDeviceMappings"][0]["ebs"]["volumeSize"] = size
    refused(tmp_path, docs, "blockDeviceMappings[0].ebs.volumeSize", "expected a size > 0",
            "EC2NodeClass/gpu")


def test_io2_volume_sets_weight_storage(tmp_path):
    docs = load_docs()
    of_kind(docs, "EC2NodeClass")["spec"]["blockDeviceMappings"][0]["ebs"]["volumeType"] = "io2"
    assert imported(tmp_path, docs).scenario.cold_start.weight_storage == "io2"


def test_kai_queues_and_scheduler(tmp_path):
    docs = load_docs()
    template = of_kind(docs, "Deployment")["spec"]["template"]
    template["spec"]["schedulerName"] = "kai-scheduler"
    template["metadata"]["labels"]["kai.scheduler/queue"] = "inference"
    docs += [{"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "org"},
              "spec": {"resources": {"gpu": {"quota": 16, "limit": -1, "overQuotaWeight": 1}}}},
             {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue",
              "metadata": {"name": "inference"},
              "spec": {"parentQueue": "org", "priority": 200,
                       "resources": {"gpu": {"quota": 8, "limit": 12}}}}]
    imp = imported(tmp_path, docs)
    scheduler = imp.scenario.scheduler
    assert scheduler.kind == "kai"
    queue = next(q for q in scheduler.queues if q.name == "default-queue")
    assert (queue.parent, queue.priority, queue.quota_gpus, queue.limit_gpus) == ("org", 200, 8, 12)


@pytest.mark.parametrize("path, fmt", [
    (SHARED / "azure_llm_2023" / "AzureLLMInferenceTrace_code.csv", "azure"),
    (SHARED / "mooncake" / "synthetic_trace.jsonl", "mooncake"),
    (TRACE, "generic"),
])
def test_trace_format_is_detected(path, fmt):
    if not path.exists():
        pytest.skip("shared traces not present")
    assert detect_format(path) == fmt


def test_burstgpt_and_unknown_trace_formats(tmp_path):
    burst = tmp_path / "burst.csv"
    burst.write_text("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                     "5,ChatGPT,472,18,490,Conversation log\n")
    assert detect_format(burst) == "burstgpt"
    other = tmp_path / "other.csv"
    other.write_text("time,tokens\n1,2\n")
    with pytest.raises(UserInputError, match="unknown trace format"):
        detect_format(other)


def _paths(node, path=()):
    yield path
    items = (
        node.items()
        if isinstance(node, dict)
        else enumerate(node)
        if isinstance(node, list)
        else ()
    )
    for key, value in items:
        yield from _paths(value, path + (key,))


@pytest.mark.slow
def test_misshapen_fields_are_one_line_errors_never_tracebacks(tmp_path):
    """Every field of the example bundle replaced by a value of another type (alternating a
    string, a list, a number and a mapping): each import succeeds or fails as one UserInputError
    line. Found 46 tracebacks in 1,169 such mutations before the readers checked types."""
    use_catalogs([CATALOG])
    docs = load_docs()
    bad_values = ("x", ["x"], 7, {"a": 1})
    paths = [p for p in _paths(docs) if len(p) >= 2]
    for index, path in enumerate(paths):
        mutated = copy.deepcopy(docs)
        node = mutated
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = bad_values[index % len(bad_values)]
        try:
            import_manifests([str(write_bundle(tmp_path, mutated))], TRACE)
        except UserInputError as exc:
            assert "\n" not in str(exc), (path, str(exc))


@pytest.mark.parametrize("model_id, name", [
    ("meta-llama/Llama-3.1-8B-Instruct", "Llama-3.1-8B"),
    ("meta-llama/Meta-Llama-3.1-70B-Instruct", "Llama-3.1-70B"),
    ("llama-3.3-70b", "Llama-3.3-70B"),
    ("/models/Qwen3-32B", "Qwen3-32B"),
])
def test_model_ids_map_to_catalog_names(model_id, name):
    from gpuscale.importer.workload import catalog_model

    use_catalogs([CATALOG])
    assert catalog_model(model_id)[0] == name


NEW_USER_BUNDLE = """\
# Source: vllm/templates/statefulset.yaml (a Helm-rendered stream)
apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
  kind: StatefulSet
  metadata: {name: llama}
  spec:
    replicas: 2
    selector: {matchLabels: {app: llama}}
    template:
      metadata: {labels: {app: llama}}
      spec:
        nodeSelector: {node.kubernetes.io/instance-type: g6e.2xlarge}
        containers:
        - name: server
          image: vllm/vllm-openai:latest
          command: ["python3", "-m", "vllm.entrypoints.openai.api_server"]
          args: ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8192",
                 "--gpu-memory-utilization", "0.92"]
          resources: {limits: {nvidia.com/gpu: 1}}
- apiVersion: autoscaling/v2
  kind: HorizontalPodAutoscaler
  metadata: {name: llama}
  spec:
    scaleTargetRef: {apiVersion: apps/v1, kind: StatefulSet, name: llama}
    minReplicas: 2
    maxReplicas: 6
    metrics:
    - type: Pods
      pods:
        metric: {name: "vllm:num_requests_waiting"}
        target: {type: AverageValue, averageValue: 2}
"""


def test_a_bundle_the_project_has_not_seen_runs_from_stdin_on_a_public_trace():
    """A new user's StatefulSet + HPA as a `kubectl get -o yaml` List, a built-in model and
    instance type, no NodePool (nodeSelector), the Azure code trace, piped on stdin."""
    import json

    from click.testing import CliRunner

    from gpuscale.cli import cli

    trace = SHARED / "azure_llm_2023" / "AzureLLMInferenceTrace_code.csv"
    if not trace.exists():
        pytest.skip("shared traces not present")
    result = CliRunner().invoke(cli, ["simulate", "--manifests", "-", "--trace", str(trace),
                                      "--format", "json"], input=NEW_USER_BUNDLE)
    assert result.exit_code == 0, result.output
    (run,) = json.loads(result.output)["runs"]
    assert run["resolved"]["autoscaler"] == {"kind": "hpa", "min_replicas": 2, "max_replicas": 6}
    assert run["resolved"]["nodes"]["kind"] == "pool"
    assert run["resolved"]["model"]["name"] == "Llama-3.1-8B"
    assert run["requests"]["total"] == 8819 and run["replicas"]["initial"] == 2
    assert run["replicas"]["peak"] > 2  # the waiting queue grows past 2 per replica


def test_pools_the_serving_pod_cannot_use_are_dropped_with_a_note(tmp_path):
    docs = load_docs()
    gpu_pool = of_kind(docs, "NodePool")
    training = copy.deepcopy(gpu_pool)
    training["metadata"]["name"] = "training"
    training["spec"]["template"]["spec"]["taints"].append({"key": "team", "value": "research",
                                                          "effect": "NoSchedule"})
    cpu = copy.deepcopy(gpu_pool)
    cpu["metadata"]["name"] = "cpu"
    cpu["spec"]["template"]["spec"]["requirements"][0]["values"] = ["g6e.2xlarge"]
    docs += [training, cpu]
    imp = imported(tmp_path, docs)
    names = [p.name for p in imp.scenario.strategies[0].nodes.node_pools]
    assert names == ["gpu-l40s"]
    assert any("team=research" in n for n in imp.notes)
    assert any("NodePool/cpu dropped" in n for n in imp.notes)


def test_disabled_chunked_prefill_says_what_was_simulated(tmp_path):
    docs = load_docs()
    args = container(docs)["args"]
    args[args.index("--enable-chunked-prefill")] = "--no-enable-chunked-prefill"
    imp = imported(tmp_path, docs)
    batching = getattr(imp.scenario.engine, "batching", None)
    assert batching == "prefill_first" or any(
        "simulated with chunked prefill" in n for n in imp.notes)


def test_pipeline_parallel_size_is_read_or_refused(tmp_path):
    """PP=2 x TP=4 needs 8 GPUs per pod: read into model.pp where the scenario has it, else
    refused by name (never silently simulated as TP only)."""
    from gpuscale.scenario.models import ModelDeployment

    docs = load_docs()
    c = container(docs)
    c["args"].append("--pipeline-parallel-size=2")
    if "pp" not in ModelDeployment.model_fields:
        refused(tmp_path, docs, "pipeline parallelism is not simulated")
        return
    refused(tmp_path / "a", docs, "requests 4 GPU(s) but vLLM's parallelism needs 8")
    c["resources"]["limits"]["nvidia.com/gpu"] = "8"
    of_kind(docs, "NodePool")["spec"]["template"]["spec"]["requirements"][0]["values"] = [
        "g6e.48xlarge"]
    extra = tmp_path / "extra.yaml"
    extra.write_text("instance_types:\n  g6e.48xlarge: {gpu: L40S, num_gpus: 8, vcpus: 192, "
                     "memory_gib: 1536, on_demand_usd_per_hour: 30.131, zones: [us-east-1a]}\n")
    use_catalogs([CATALOG, extra])
    imp = import_manifests([str(write_bundle(tmp_path / "b", docs))], TRACE)
    assert (imp.scenario.model.tp, imp.scenario.model.pp) == (4, 2)


def test_cron_trigger_is_read_beside_the_prometheus_one(tmp_path):
    # issue 27: the plan's scheduled capacity ships as KEDA cron triggers and must replay
    docs = load_docs()
    triggers = of_kind(docs, "ScaledObject")["spec"]["triggers"]
    # 01:10 in Berlin is 00:10 UTC on 2026-01-01, inside the example trace's 45 minutes
    triggers.append({"type": "cron", "metadata": {"timezone": "Europe/Berlin",
                                                  "start": "10 1 * * *", "end": "0 19 * * *",
                                                  "desiredReplicas": "5"}})
    imp = imported(tmp_path, docs)
    autoscaler = imp.scenario.strategies[0].autoscaler
    cron = autoscaler.triggers[-1]
    assert (cron.type, cron.timezone, cron.start, cron.end, cron.desired_replicas) == (
        "cron", "Europe/Berlin", "10 1 * * *", "0 19 * * *", 5)


@pytest.mark.parametrize(("edit", "expected"), [
    ({"desiredReplicas": None}, "spec.triggers[1].metadata.desiredReplicas"),
    ({"desiredReplicas": "five"}, "expected an integer"),
    ({"start": "0 0 * * *", "end": "0 0 * * *"}, "start and end must differ"),
])
def test_bad_cron_triggers_are_one_line_errors(tmp_path, edit, expected):
    docs = load_docs()
    meta = {"timezone": "Etc/UTC", "start": "0 8 * * *", "end": "0 20 * * *",
            "desiredReplicas": "4"}
    meta.update(edit)
    of_kind(docs, "ScaledObject")["spec"]["triggers"].append(
        {"type": "cron", "metadata": {k: v for k, v in meta.items() if v is not None}})
    refused(tmp_path, docs, expected)
