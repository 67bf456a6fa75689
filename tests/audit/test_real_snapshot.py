"""`diagnose` and the shape check on a snapshot shaped as `kubectl get nodes,pods -A -o yaml`
really prints it (tests/audit/diagnose/kubectl/README.md), not only the fields a rule reads."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from gpuscale.audit import load_inputs
from gpuscale.audit.diagnose import diagnose
from gpuscale.audit.structure import shape_error
from gpuscale.cli import cli

SNAPSHOT = Path(__file__).resolve().parent / "diagnose" / "kubectl" / "nodes-pods.yaml"


def test_every_object_of_a_real_dump_is_well_shaped():
    objects = load_inputs([str(SNAPSHOT)])
    assert {o.kind for o in objects} == {"Node", "Pod"} and len(objects) == 8
    assert [(o.ref, shape_error(o.data)) for o in objects if shape_error(o.data)] == []


def test_a_real_dump_is_diagnosed_with_the_numbers_and_the_schedulers_message():
    (d,) = diagnose(load_inputs([str(SNAPSHOT)]))
    assert d.pod == "inference/qwen3-32b-6d8c9b7f54-m8t3z" and d.gpus == 4
    assert d.cause == "insufficient-gpus"
    evidence = "\n".join(d.evidence)
    assert "ip-10-0-45-112.ec2.internal: 0 GPUs free" in evidence  # 4 held by the TP4 pod
    assert "ip-10-0-77-9.ec2.internal: 3 GPUs free" in evidence  # 1 of 4 held
    assert "ip-10-0-12-34.ec2.internal: labels do not match" in evidence  # the CPU node
    assert "scheduler: 0/3 nodes are available" in evidence
    # The dump holds no NodePools, so it cannot say none can add a node: it names the pool.
    assert "gpu-l40s" in d.summary and "nodepools" in d.summary


def test_the_cli_prints_it_within_100_columns():
    result = CliRunner().invoke(cli, ["diagnose", str(SNAPSHOT)])
    assert result.exit_code == 0, result.output
    assert "(4 GPUs): insufficient-gpus" in result.output
    assert max(map(len, result.output.splitlines())) <= 100


def test_names_that_are_scalars_outside_an_hpa_metric_are_not_read_as_mappings():
    node = {"kind": "Node", "status": {"allocatable": {"pods": "110"},
                                       "capacity": {"pods": "110"}}}
    assert shape_error(node) is None
    env = {"kind": "Pod", "spec": {"containers": [{"name": "c", "env": [
        {"name": "M", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}}]}]}}
    assert shape_error(env) is None
    # ... while inside an HPA metric they still must be mappings.
    hpa = {"spec": {"metrics": [{"type": "Pods", "pods": "110"}]}}
    assert shape_error(hpa) == (("spec", "metrics", 0, "pods"), "expected a mapping, got '110'")
    hpa = {"spec": {"metrics": [{"type": "External", "external": {"target": 5}}]}}
    assert shape_error(hpa) == (("spec", "metrics", 0, "external", "target"),
                                "expected a mapping, got 5")
