"""The cluster-side kinds read from manifests: CapacityBuffer, PodDisruptionBudget, KAI
PodGroup and the Cluster Autoscaler priority expander's ConfigMap; each refused shape is one
line naming the file, object and field."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from gpuscale.errors import UserInputError
from gpuscale.importer.build import import_manifests
from gpuscale.importer.catalog_files import use_catalogs

from .bundle import CATALOG, EXAMPLE, TRACE, load_docs, of_kind, write_bundle
from .test_cluster_autoscaler import ca_docs
from .test_my_cluster import simulate

BUFFER = yaml.safe_load((EXAMPLE / "capacity-buffer.yaml").read_text())
POD_TEMPLATE = {"apiVersion": "v1", "kind": "PodTemplate",
                "metadata": {"name": "gpu-chunk", "namespace": "llm"},
                "template": {"spec": {"containers": [{"name": "pause", "image": "pause",
                                                      "resources": {"limits": {
                                                          "nvidia.com/gpu": "4"}}}]}}}


def _imported(folder: Path, docs: list[dict]):
    use_catalogs([CATALOG])
    return import_manifests([str(write_bundle(folder, docs))], TRACE)


def _nodes(folder: Path, docs: list[dict]) -> dict:
    return _imported(folder, docs).data["strategies"][0]["nodes"]


def _refused(folder: Path, docs: list[dict], *expected: str) -> str:
    with pytest.raises(UserInputError) as info:
        _imported(folder, docs)
    message = str(info.value)
    assert "\n" not in message
    for text in expected:
        assert text in message, message
    return message


def _buffer(**spec) -> dict:
    doc = copy.deepcopy(BUFFER)
    doc["spec"] = {k: v for k, v in {**doc["spec"], **spec}.items() if v is not None}
    return doc


# -- CapacityBuffer -------------------------------------------------------------------------------
def test_buffer_on_the_serving_deployment_becomes_a_karpenter_buffer(tmp_path):
    got = _imported(tmp_path, [*load_docs(), _buffer()])
    nodes = got.data["strategies"][0]["nodes"]
    assert nodes["capacity_buffers"] == [{"name": "qwen3-32b-headroom", "gpus_per_pod": 4,
                                          "replicas": 1, "scalable_labels": {}}]
    assert any("--feature-gates CapacityBuffer=true" in n for n in got.notes)


def test_buffer_reaches_the_cluster_autoscaler_too(tmp_path):
    docs = ca_docs("--nodes=0:4:gpu") + [_buffer(percentage=50, replicas=None)]
    (buffer,) = _nodes(tmp_path, docs)["capacity_buffers"]
    assert buffer["percentage"] == 50 and "replicas" not in buffer


def test_pod_template_buffer_takes_the_templates_gpus(tmp_path):
    docs = [*load_docs(), POD_TEMPLATE,
            _buffer(scalableRef=None, podTemplateRef={"name": "gpu-chunk"}, replicas=2)]
    (buffer,) = _nodes(tmp_path, docs)["capacity_buffers"]
    assert (buffer["gpus_per_pod"], buffer["replicas"]) == (4, 2)
    assert "scalable_labels" not in buffer


@pytest.mark.parametrize(("spec", "extra", "expected"), [
    ({"provisioningStrategy": "buffer.x-k8s.io/standby"}, [], "spec.provisioningStrategy"),
    ({"podTemplateRef": {"name": "gpu-chunk"}}, [POD_TEMPLATE], "exactly one of podTemplateRef"),
    ({"scalableRef": None}, [], "exactly one of podTemplateRef"),
    ({"scalableRef": {"apiGroup": "apps", "kind": "Deployment", "name": "web"}}, [],
     "not the serving workload"),
    ({"scalableRef": None, "podTemplateRef": {"name": "gpu-chunk"}, "percentage": 10},
     [POD_TEMPLATE], "spec.percentage"),
    ({"scalableRef": None, "podTemplateRef": {"name": "gpu-chunk"}, "replicas": None},
     [POD_TEMPLATE], "needs replicas or limits"),
    ({"scalableRef": None, "podTemplateRef": {"name": "missing"}}, [],
     "PodTemplate 'missing' is not in the manifests"),
    ({"replicas": None}, [], "set replicas, percentage or limits"),
    ({"replicas": -1}, [], "spec.replicas"),
    ({"limits": {"cpu": "8"}}, [], "limits on cpu are not simulated"),
    # Found by probing: each ran past any time limit (a virtual pod per chunk, every pass).
    ({"replicas": 1_000_000_000}, [], "spec.replicas: expected at most 10,000"),
    ({"replicas": None, "percentage": 10**9}, [], "spec.percentage: expected at most 10,000"),
    ({"replicas": None, "limits": {"nvidia.com/gpu": "1e9"}}, [],
     "spec.limits: expected at most 10,000 pods' GPUs"),
])
def test_refused_buffer_shapes(tmp_path, spec, extra, expected):
    _refused(tmp_path, [*load_docs(), *extra, _buffer(**spec)], "all.yaml",
             "CapacityBuffer/llm/qwen3-32b-headroom", expected)


def test_cpu_only_template_is_refused(tmp_path):
    cpu = copy.deepcopy(POD_TEMPLATE)
    cpu["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "4"}}
    docs = [*load_docs(), cpu, _buffer(scalableRef=None, podTemplateRef={"name": "gpu-chunk"})]
    _refused(tmp_path, docs, "PodTemplate/llm/gpu-chunk", "needs a whole number >= 1")


@pytest.fixture(scope="module")
def buffered(tmp_path_factory) -> dict:
    from gpuscale.catalog.specs import set_user_entries

    run = simulate(write_bundle(tmp_path_factory.mktemp("buf"), [*load_docs(), _buffer()]))
    set_user_entries({}, {}, {})
    return run


def test_a_one_node_buffer_cuts_ttft_on_the_burst_and_costs_gpu_hours(buffered):
    base = simulate(Path(EXAMPLE / "manifests"))
    assert buffered["ttft_s"]["p50"] < base["ttft_s"]["p50"]
    assert buffered["ttft_s"]["p90"] < base["ttft_s"]["p90"]
    assert buffered["slo_attainment"] > base["slo_attainment"]
    assert buffered["gpu_hours"] > base["gpu_hours"]
    assert buffered["idle_gpu_minutes"] > base["idle_gpu_minutes"]
    assert buffered["nodes"]["events"]["buffer_nodes_at_start"] == 1


def test_a_zero_replica_buffer_changes_nothing(tmp_path):
    base = simulate(Path(EXAMPLE / "manifests"))
    run = simulate(write_bundle(tmp_path, [*load_docs(), _buffer(replicas=0)]))
    for key in ("ttft_s", "slo_attainment", "gpu_hours", "cost_usd"):
        assert run[key] == base[key]


# -- PodDisruptionBudget -------------------------------------------------------------------------
def test_the_examples_pdb_is_simulated(tmp_path):
    nodes = _nodes(tmp_path, load_docs())
    assert nodes["pod_disruption_budgets"] == [
        {"name": "qwen3-32b", "match_labels": {}, "max_unavailable": 1}]


def test_pdb_selecting_other_pods_is_noted_not_simulated(tmp_path):
    docs = load_docs()
    of_kind(docs, "PodDisruptionBudget")["spec"]["selector"] = {"matchLabels": {"app": "web"}}
    got = _imported(tmp_path, docs)
    assert "pod_disruption_budgets" not in got.data["strategies"][0]["nodes"]
    assert any("does not select the serving pods" in n for n in got.notes)


def test_pdb_match_expressions_select_the_serving_pods(tmp_path):
    docs = load_docs()
    of_kind(docs, "PodDisruptionBudget")["spec"]["selector"] = {"matchExpressions": [
        {"key": "app", "operator": "In", "values": ["qwen3-32b", "other"]}]}
    assert len(_nodes(tmp_path, docs)["pod_disruption_budgets"]) == 1


def test_pdb_reaches_the_cluster_autoscaler(tmp_path):
    (pdb,) = _nodes(tmp_path, ca_docs("--nodes=0:4:gpu"))["pod_disruption_budgets"]
    assert pdb["max_unavailable"] == 1


@pytest.mark.parametrize(("spec", "expected"), [
    ({"minAvailable": 1, "maxUnavailable": 1}, "exactly one of minAvailable"),
    ({"maxUnavailable": None}, "exactly one of minAvailable"),
    ({"maxUnavailable": "half"}, "a percentage such as"),
    ({"maxUnavailable": -1}, "an integer >= 0"),
    # Found by probing: the API server refuses > 100%; it ran as more pods than exist.
    ({"maxUnavailable": "150%"}, "(0%..100%), got"),
    ({"minAvailable": "101%", "maxUnavailable": None}, "(0%..100%), got"),
    ({"selector": {"matchExpressions": [{"key": "app", "operator": "Like"}]}},
     "expected an operator"),
])
def test_refused_pdb_shapes(tmp_path, spec, expected):
    docs = load_docs()
    pdb_spec = of_kind(docs, "PodDisruptionBudget")["spec"]
    for key, value in spec.items():
        if value is None:
            pdb_spec.pop(key, None)
        else:
            pdb_spec[key] = value
    _refused(tmp_path, docs, "PodDisruptionBudget/llm/qwen3-32b", expected)


def test_strict_pdb_holds_expiring_nodes_and_evicts_fewer_replicas(tmp_path):
    """Nodes expire every 15 min; with a PDB that lets no replica go, expiry drains wait (no
    terminationGracePeriod) and fewer serving pods are evicted than with maxUnavailable: 1."""
    def run(pdb_spec: dict) -> dict:
        docs = load_docs()
        pool = of_kind(docs, "NodePool")["spec"]["template"]["spec"]
        pool["expireAfter"] = "15m"
        # do-not-disrupt would hold the drains by itself; leave the PDB alone to decide.
        of_kind(docs, "Deployment")["spec"]["template"]["metadata"].pop("annotations")
        of_kind(docs, "PodDisruptionBudget")["spec"] = {
            "selector": {"matchLabels": {"app": "qwen3-32b"}}, **pdb_spec}
        return simulate(write_bundle(tmp_path / str(len(pdb_spec)) / next(iter(pdb_spec)),
                                     docs))
    loose = run({"maxUnavailable": "100%"})
    strict = run({"minAvailable": "100%"})
    loose_n = loose["nodes"]["evictions_by_cause"].get("expiration", 0)
    strict_n = strict["nodes"]["evictions_by_cause"].get("expiration", 0)
    assert loose_n > strict_n


# -- KAI PodGroup ---------------------------------------------------------------------------------
def _kai_docs(group_spec: dict, annotate: bool = True) -> list[dict]:
    docs = load_docs()
    pod = of_kind(docs, "Deployment")["spec"]["template"]
    pod["spec"]["schedulerName"] = "kai-scheduler"
    if annotate:
        pod["metadata"].setdefault("annotations", {})["pod-group-name"] = "qwen-gang"
    group = {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup",
             "metadata": {"name": "qwen-gang", "namespace": "llm"}, "spec": group_spec}
    return [*docs, group]


def test_pod_group_maps_onto_the_kai_gang(tmp_path):
    got = _imported(tmp_path, _kai_docs({"minMember": 2, "queue": "team-a",
                                         "priorityClassName": "inference",
                                         "preemptibility": "non-preemptible",
                                         "stalenessGracePeriod": "-1s"}))
    group = got.scenario.pod_group
    assert (group.name, group.min_member, group.queue, group.priority, group.preemptible) == (
        "qwen-gang", 2, "default-queue", 125, False)
    assert group.staleness_grace_s < 0  # never evicted as stale
    assert got.data["scheduler"]["kind"] == "kai"
    assert any("team-a" in n for n in got.notes)


def test_pod_group_priority_from_a_priority_class_in_the_bundle(tmp_path):
    pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
          "metadata": {"name": "serving-high"}, "value": 1000}
    docs = [*_kai_docs({"minMember": 1, "priorityClassName": "serving-high"}), pc]
    assert _imported(tmp_path, docs).scenario.pod_group.priority == 1000


def test_pod_group_no_pod_names_is_noted(tmp_path):
    got = _imported(tmp_path, _kai_docs({"minMember": 2}, annotate=False))
    assert got.scenario.pod_group is None
    assert any("no serving pod names it" in n for n in got.notes)


def test_gang_of_two_starts_nothing_below_min_member(tmp_path):
    """minMember 2 with one replica: KAI never starts the lone pod (a gang waits for all its
    members), so the run serves nothing until the autoscaler asks for a second replica."""
    from gpuscale.sim import simulate_scenario

    solo = _imported(tmp_path / "a", _kai_docs({"minMember": 1}))
    gang = _imported(tmp_path / "b", _kai_docs({"minMember": 2}))
    runs = []
    for got in (solo, gang):
        result, walls = simulate_scenario(got.scenario, Path("."))
        runs.append(result.to_json(walls)["runs"][0])
    assert runs[1]["slo_attainment"] < runs[0]["slo_attainment"]


@pytest.mark.parametrize(("spec", "expected"), [
    ({"subGroups": [{"name": "a", "minMember": 1}]}, "spec.subGroups"),
    ({"minSubGroup": 1}, "spec.minSubGroup"),
    ({"topologyConstraint": {"requiredTopologyLevel": "rack"}}, "spec.topologyConstraint"),
    ({"minMember": -1}, "spec.minMember"),
    ({"priorityClassName": "vip"}, "PriorityClass 'vip'"),
    ({"preemptibility": "sometimes"}, "spec.preemptibility"),
    ({"preemptionDelay": "5 minutes"}, "spec.preemptionDelay"),
    ({"preemptionDelay": "-5m"}, "expected a duration >= 0"),
])
def test_refused_pod_group_shapes(tmp_path, spec, expected):
    _refused(tmp_path, _kai_docs(spec), "PodGroup/llm/qwen-gang", expected)


# -- Cluster Autoscaler priority expander ---------------------------------------------------------
def _priority_map(text: str, name: str = "cluster-autoscaler-priority-expander") -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "kube-system"},
            "data": {"priorities": text}}


def test_priority_expander_reads_its_configmap(tmp_path):
    docs = ca_docs("--nodes=0:4:gpu-spot", "--nodes=0:4:gpu-od", "--expander=priority")
    docs.append(_priority_map("10:\n  - .*-od$\n50:\n  - .*-spot$\n"))
    nodes = _nodes(tmp_path, docs)
    assert nodes["expanders"] == ["priority"]
    assert nodes["priorities"] == {10: [".*-od$"], 50: [".*-spot$"]}


@pytest.mark.parametrize(("doc", "expected"), [
    (None, "no ConfigMap cluster-autoscaler-priority-expander"),
    (_priority_map("ten:\n  - gpu\n"), "priority 'ten' is not an integer"),
    (_priority_map("10: gpu\n"), "expected a list of regexes under 10"),
    (_priority_map("10:\n  - '(gpu'\n"), "does not compile"),
    (_priority_map("[1, 2]\n"), "expected a mapping of priority"),
])
def test_refused_priority_expander_shapes(tmp_path, doc, expected):
    docs = ca_docs("--nodes=0:4:gpu", "--expander=priority")
    _refused(tmp_path, docs + ([doc] if doc else []), expected)


def test_priority_matching_no_group_is_noted(tmp_path):
    docs = ca_docs("--nodes=0:4:gpu", "--expander=priority") + [_priority_map("1:\n  - cpu\n")]
    assert any("no node group (gpu) matches" in n for n in _imported(tmp_path, docs).notes)


def test_editing_the_priorities_moves_scale_ups_to_the_preferred_group(tmp_path):
    """Two node groups the serving pod fits (4 x L40S, 8 x H100); the ConfigMap decides which
    one grows, and preferring the H100 group makes the same run dearer."""
    from gpuscale.sim import simulate_scenario

    def cost(preferred: str) -> float:
        docs = ca_docs("--nodes=1:4:g6e.12xlarge", "--nodes=0:4:p5.48xlarge",
                       "--expander=priority", selector=False)
        docs.append(_priority_map(f"50:\n  - ^{preferred}$\n1:\n  - .*\n"))
        got = _imported(tmp_path / preferred[:2], docs)
        result, walls = simulate_scenario(got.scenario, Path("."))
        return result.to_json(walls)["runs"][0]["cost_usd"]
    assert cost("p5\\.48xlarge") > cost("g6e\\.12xlarge")


def test_a_refused_buffer_exits_2_with_one_line(tmp_path):
    from click.testing import CliRunner

    from gpuscale.cli import cli

    bundle = write_bundle(tmp_path, [*load_docs(), _buffer(limits={"memory": "1Ti"})])
    result = CliRunner().invoke(cli, ["simulate", "--manifests", str(bundle), "--trace",
                                      str(TRACE), "--catalog", str(CATALOG)])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert "spec.limits" in result.output and "CapacityBuffer/llm/qwen3-32b-headroom" in (
        result.output)
