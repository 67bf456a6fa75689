"""`gpuscale schedule` on a pod list and a node list in the openb schema (Alibaba
cluster-trace-gpu-v2023; ../shared/traces/README.md). The fixture is generated here, so the
tests need no trace files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gpuscale.cli import cli
from gpuscale.scenario.schedule import load_schedule_scenario
from gpuscale.sim.schedule import build_run, run_scenario

POD_HEADER = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
              "deletion_time,scheduled_time")
NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model"


def _write(tmp: Path, num_pods: int = 12, num_nodes: int = 3) -> Path:
    # Nodes: 2 x (8 GPUs, 64 cores) and the rest 2 GPUs, 16 cores. Pods: a mix of whole-GPU,
    # GPU-sharing (gpu_milli < 1000) and CPU-only rows; one arrives every 10 s, lives 100 s.
    nodes = [NODE_HEADER] + [
        f"openb-node-{i:04d},{64000 if i < 2 else 16000},{262144 if i < 2 else 65536},"
        f"{8 if i < 2 else 2},{'G2' if i < 2 else 'T4'}" for i in range(num_nodes)]
    pods = [POD_HEADER]
    for i in range(num_pods):
        num_gpu, gpu_milli = [(1, 1000), (1, 470), (0, 0), (2, 1000)][i % 4]
        pods.append(f"openb-pod-{i:04d},4000,8192,{num_gpu},{gpu_milli},,LS,Running,"
                    f"{1000 + 10 * i},{1100 + 10 * i},{1000 + 10 * i}")
    (tmp / "pods.csv").write_text("\n".join(pods) + "\n")
    (tmp / "nodes.csv").write_text("\n".join(nodes) + "\n")
    return tmp


def _scenario(tmp: Path, arrivals: str, **extra) -> Path:
    data = {"name": "openb-mini", "duration_s": 1000,
            "node_list": {"path": "nodes.csv"},
            "pod_list": {"path": "pods.csv", "arrivals": arrivals},
            "schedulers": [{"kind": "kube-scheduler"}, {"kind": "kai"}], **extra}
    path = tmp / "scenario.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_at_once_binds_every_pod_and_sharing_pods_take_a_whole_gpu(tmp_path):
    scenario = load_schedule_scenario(_scenario(_write(tmp_path), "at_once"))
    run = build_run(scenario, scenario.schedulers[0])
    run.sim.run(until_s=scenario.duration_s)
    assert len(run.cluster.nodes) == 3
    assert run.cluster.nodes["openb-node-0000"].num_gpus == 8
    assert run.cluster.nodes["openb-node-0002"].instance_type.vcpus == 16
    bound = [p for p in run.cluster.pods.values() if p.node_name is not None]
    assert len(bound) == 12
    # 3 x 1 whole + 3 x 1 shared (one whole GPU each) + 3 x 2 = 12 GPUs; CPU pods take none
    assert run.cluster.gpus_allocated() == 12
    assert run.cluster.pods["openb-pod-0001-0"].gpus == 1


def test_trace_arrivals_follow_creation_and_deletion_times(tmp_path):
    result = run_scenario(load_schedule_scenario(_scenario(_write(tmp_path), "trace")))
    for run in result["runs"]:
        jobs = run["jobs"]
        assert jobs["submitted"] == 12 and jobs["started"] == 12 and jobs["finished"] == 12
        first = jobs["jobs"]["openb-pod-0000"]
        last = jobs["jobs"]["openb-pod-0011"]
        assert first["submitted_s"] == 0.0 and last["submitted_s"] == 110.0  # shifted to t=0
        assert last["finished_s"] == pytest.approx(210.0)  # 100 s lifetime once bound


def test_cli_runs_both_schedulers_on_the_lists(tmp_path):
    path = _scenario(_write(tmp_path), "at_once")
    out = CliRunner().invoke(cli, ["schedule", str(path), "--format", "json"])
    assert out.exit_code == 0, out.output
    runs = json.loads(out.output)["runs"]
    assert [r["scheduler"] for r in runs] == ["kube-scheduler/LeastAllocated", "kai/binpack"]
    assert all(r["jobs"]["started"] == 12 for r in runs)


def test_a_pod_list_without_a_column_is_one_line_naming_the_file(tmp_path):
    _write(tmp_path)
    text = (tmp_path / "pods.csv").read_text().replace("num_gpu,", "gpus,", 1)
    (tmp_path / "pods.csv").write_text(text)
    out = CliRunner().invoke(cli, ["schedule", str(_scenario(tmp_path, "at_once"))])
    assert out.exit_code == 2
    assert "pods.csv" in out.output and "num_gpu" in out.output
    assert "Traceback" not in out.output


def test_a_missing_node_list_is_bad_input(tmp_path):
    path = _scenario(tmp_path, "at_once")
    out = CliRunner().invoke(cli, ["schedule", str(path)])
    assert out.exit_code == 2 and "nodes.csv" in out.output and "not found" in out.output
