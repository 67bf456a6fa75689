"""A bundle with a Cluster Autoscaler Deployment and no NodePool: CA's flags are layer 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuscale.cli import cli
from gpuscale.errors import UserInputError
from gpuscale.importer.build import import_manifests
from gpuscale.importer.catalog_files import use_catalogs
from gpuscale.importer.cluster_autoscaler import go_duration_s, parse_flags
from gpuscale.sim import simulate_scenario

from .bundle import CATALOG, TRACE, load_docs, of_kind, write_bundle
from .test_manifests import HPA

INSTANCE_TYPE = "g6e.12xlarge"  # the example catalog's instance type (4 L40S; tp=4 fits one)


def ca_deployment(*flags: str) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "cluster-autoscaler", "namespace": "kube-system"},
        "spec": {"template": {"spec": {"containers": [{
            "name": "cluster-autoscaler",
            "image": "registry.k8s.io/autoscaling/cluster-autoscaler:v1.34.0",
            "command": ["./cluster-autoscaler", "--cloud-provider=aws", *flags],
        }]}}},
    }


def ca_docs(*flags: str, scaler: str = "keda", selector: bool = True) -> list[dict]:
    """The example bundle with its NodePool/EC2NodeClass replaced by a CA Deployment."""
    docs = [d for d in load_docs() if d["kind"] not in ("NodePool", "EC2NodeClass")]
    if scaler == "hpa":
        docs = [d for d in docs if d["kind"] != "ScaledObject"] + [HPA]
    if selector:
        pod = of_kind(docs, "Deployment")["spec"]["template"]["spec"]
        pod["nodeSelector"] = {"node.kubernetes.io/instance-type": INSTANCE_TYPE}
    return [*docs, ca_deployment(*flags)]


def imported(folder: Path, docs: list[dict]):
    use_catalogs([CATALOG])
    return import_manifests([str(write_bundle(folder, docs))], TRACE)


def simulated(folder: Path, docs: list[dict]) -> dict:
    result, walls = simulate_scenario(imported(folder, docs).scenario, Path("."))
    return result.to_json(walls)["runs"][0]


def refused(folder: Path, docs: list[dict], *expected: str) -> str:
    with pytest.raises(UserInputError) as info:
        imported(folder, docs)
    message = str(info.value)
    assert "\n" not in message
    for text in expected:
        assert text in message, message
    return message


def test_go_durations_and_both_flag_forms():
    assert go_duration_s("10m") == 600.0
    assert go_duration_s("1h30m") == 5400.0
    assert go_duration_s("600s") == 600.0
    assert go_duration_s("1.5m") == 90.0
    assert go_duration_s("0") == 0.0
    assert parse_flags(["./ca", "--a=1", "--b", "2", "-v", "4", "--scale-down-enabled",
                        "--expendable-pods-priority-cutoff", "-10", "--c"]) == [
        ("a", "1"), ("b", "2"), ("v", "4"), ("scale-down-enabled", None),
        ("expendable-pods-priority-cutoff", "-10"), ("c", None)]


@pytest.mark.parametrize("scaler", ["keda", "hpa"])
def test_ca_flags_become_the_cluster_autoscaler_provider(tmp_path, scaler):
    got = imported(tmp_path, ca_docs(
        "--nodes=0:4:gpu-l40s", "--scale-down-unneeded-time", "5m",
        "--scale-down-delay-after-add=2m", "--max-node-provision-time=20m",
        "--expander=most-pods,least-waste", "--scale-down-gpu-utilization-threshold=0.3",
        "--scan-interval=30s", scaler=scaler))
    nodes = got.scenario.strategies[0].nodes
    assert nodes is not None and nodes.kind == "cluster_autoscaler"
    assert nodes.scale_down_unneeded_time_s == 300.0
    assert nodes.scale_down_delay_after_add_s == 120.0
    assert nodes.max_node_provision_time_s == 1200.0
    assert nodes.expanders == ["most-pods", "least-waste"]
    assert nodes.scale_down_gpu_utilization_threshold == 0.3
    assert nodes.scan_interval_s == 30.0
    # Flags not given keep CA's defaults (reference layer1-node-provisioning.md 2.3).
    assert nodes.scale_down_delay_after_failure_s == 180.0
    (group,) = nodes.node_groups
    assert (group.name, group.instance_type, group.max_size) == ("gpu-l40s", INSTANCE_TYPE, 4)
    # The initial replica's node exists at t=0 as the group's floor, and that is said.
    assert group.min_size == 1
    assert any("min size 0 raised to 1" in n for n in got.notes)


def test_resolved_nodes_kind_reads_the_ca_provider(tmp_path):
    bundle = write_bundle(tmp_path, ca_docs("--nodes=0:4:gpu-l40s"))
    result = CliRunner().invoke(cli, ["simulate", "--manifests", str(bundle), "--trace",
                                      str(TRACE), "--catalog", str(CATALOG), "--format", "json"])
    assert result.exit_code == 0, result.output
    (run,) = json.loads(result.output)["runs"]
    assert run["resolved"]["nodes"]["kind"] == "cluster_autoscaler"
    assert run["nodes"]["provider"] == "cluster_autoscaler"


def test_shorter_unneeded_time_scales_down_earlier_and_costs_fewer_gpu_hours(tmp_path):
    slow = simulated(tmp_path / "slow", ca_docs("--nodes=0:4:gpu-l40s",
                                                "--scale-down-unneeded-time=10m"))
    fast = simulated(tmp_path / "fast", ca_docs("--nodes=0:4:gpu-l40s",
                                                "--scale-down-unneeded-time=1m"))
    assert slow["nodes"]["events"]["nodes_removed"] > 0  # the trace does scale down
    assert fast["gpu_hours"] < slow["gpu_hours"]
    last_removal_s = [run["nodes"]["nodes_by_state"]["t_s"][-1] for run in (fast, slow)]
    assert last_removal_s[0] < last_removal_s[1]


def test_without_nodes_flag_a_group_is_sized_from_the_replicas(tmp_path):
    got = imported(tmp_path, ca_docs("--node-group-auto-discovery=asg:tag=k8s.io/x"))
    (group,) = got.scenario.strategies[0].nodes.node_groups
    assert group.instance_type == INSTANCE_TYPE and group.max_size == 4  # keda max 4, tp=4
    assert any("auto-discovery" in d for d in got.defaults)


def test_unmodelled_flags_are_listed_in_the_notes(tmp_path):
    got = imported(tmp_path, ca_docs("--nodes=0:4:gpu-l40s", "--balance-similar-node-groups",
                                     "--skip-nodes-with-local-storage", "false"))
    (note,) = [n for n in got.notes if "flags not simulated" in n]
    assert "Deployment/kube-system/cluster-autoscaler" in note
    for flag in ("--cloud-provider=aws", "--balance-similar-node-groups",
                 "--skip-nodes-with-local-storage=false"):
        assert flag in note
    assert not any("is not simulated from manifests" in n for n in got.notes)


@pytest.mark.parametrize(("flag", "expected"), [
    ("--scale-down-unneeded-time=10 minutes", "Go duration"),
    ("--scale-down-unneeded-time=600", "Go duration"),
    ("--max-node-provision-time=-5m", "Go duration"),
    ("--scale-down-utilization-threshold=1.5", "from 0 to 1"),
    ("--expander=cheapest", "comma list"),
    ("--nodes=4:0:gpu", "MIN <= MAX"),
    ("--nodes=1:4", "MIN:MAX:NAME"),
    ("--max-drain-parallelism=0", "integer >= 1"),
])
def test_malformed_flag_is_one_line_naming_file_object_and_flag(tmp_path, flag, expected):
    message = refused(tmp_path, ca_docs(flag), "all.yaml", "Deployment/kube-system/"
                      "cluster-autoscaler", flag.split("=")[0], expected)
    assert message.count(flag.split("=")[0]) >= 1


def test_bad_duration_exits_2_with_one_line(tmp_path):
    bundle = write_bundle(tmp_path, ca_docs("--scale-down-unneeded-time=10x"))
    result = CliRunner().invoke(cli, ["simulate", "--manifests", str(bundle), "--trace",
                                      str(TRACE), "--catalog", str(CATALOG)])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert "--scale-down-unneeded-time" in result.output and "'10x'" in result.output


def test_unknown_instance_type_without_selector_is_refused(tmp_path):
    refused(tmp_path, ca_docs("--nodes=0:4:my-asg", selector=False), "--nodes", "my-asg",
            "instance type is unknown")


def test_a_nodepool_still_wins_and_the_ca_deployment_is_noted(tmp_path):
    docs = [*load_docs(), ca_deployment("--nodes=0:4:gpu-l40s")]
    got = imported(tmp_path, docs)
    assert got.scenario.strategies[0].nodes.kind == "karpenter"
    assert any("(Cluster Autoscaler) not simulated" in n for n in got.notes)


def test_a_group_too_small_for_the_pod_is_refused(tmp_path):
    docs = ca_docs("--nodes=0:4:g6e.2xlarge", selector=False)  # 1 GPU for a tp=4 pod
    refused(tmp_path, docs, "--nodes", "g6e.2xlarge has 1 GPU,", "fewer than the serving pod's 4")
