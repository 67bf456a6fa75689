"""Diagnose names the right cause for one snapshot per cause, and the CLI renders it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.audit import load_inputs, parse_text
from gpuscale.audit.diagnose import diagnose
from gpuscale.audit.diagnose.causes import CAUSES
from gpuscale.cli import cli

SNAPSHOTS = Path(__file__).resolve().parent / "diagnose"
ALL = sorted(p.stem for p in SNAPSHOTS.glob("*.json"))


@pytest.mark.parametrize("cause", ALL)
def test_snapshot_names_its_cause(cause):
    results = diagnose(load_inputs([str(SNAPSHOTS / f"{cause}.json")]))
    assert results, "no Pending GPU pod found"
    assert {d.cause for d in results} == {cause}, [d.summary for d in results]


def test_every_cause_but_schedulable_has_a_snapshot():
    assert set(CAUSES) - {"schedulable"} == set(ALL)


def test_fragmentation_evidence_has_the_numbers():
    (d,) = diagnose(load_inputs([str(SNAPSHOTS / "fragmentation.json")]))
    assert "10 GPUs are free" in d.summary and "at most 4" in d.summary
    assert any("FailedScheduling" in e for e in d.evidence)
    assert d.layer.startswith("layer 2")


def test_pod_filter_and_cli_json():
    runner = CliRunner()
    result = runner.invoke(
        cli,
        [
            "diagnose",
            str(SNAPSHOTS / "gang-waiting.json"),
            "--pod",
            "train/trainer-1",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.output)
    assert row["pod"] == "train/trainer-1" and row["cause"] == "gang-waiting"
    missing = runner.invoke(
        cli, ["diagnose", str(SNAPSHOTS / "gang-waiting.json"), "--pod", "nope"]
    )
    assert missing.exit_code == 2


def test_cli_text_and_bad_snapshot(tmp_path):
    runner = CliRunner()
    ok = runner.invoke(cli, ["diagnose", str(SNAPSHOTS / "taints.json")])
    assert "taints [layer 2 scheduling: node filters]" in ok.output
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "List", "items": [')
    result = runner.invoke(cli, ["diagnose", str(bad)])
    assert result.exit_code == 2 and str(bad) in result.output


def test_a_manifest_is_not_taken_for_a_healthy_snapshot(tmp_path):
    """A file without Pods is refused (exit 2, naming it), not reported as 'no Pending pods'."""
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: vllm}\n"
                        "spec: {template: {spec: {containers: []}}}\n")
    result = CliRunner().invoke(cli, ["diagnose", str(manifest)])
    assert result.exit_code == 2
    assert str(manifest) in result.output and "Deployment" in result.output
    assert "no Pending GPU pods" not in result.output


def test_a_scenario_given_to_diagnose_is_named_for_what_it_is(tmp_path):
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("name: s\nmodel: {name: Llama-3.1-8B}\nworkload: {kind: poisson}\n")
    result = CliRunner().invoke(cli, ["diagnose", str(scenario)])
    assert result.exit_code == 2
    assert "no Kubernetes objects" in result.output and "gpuscale simulate" in result.output


def _snapshot(free: list[int], want: int) -> str:
    items = []
    for i, f in enumerate(free):
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"n{i}", "labels": {}},
                "status": {
                    "allocatable": {"nvidia.com/gpu": "8"},
                    "capacity": {"nvidia.com/gpu": "8"},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        )
        if f < 8:
            items.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": f"busy{i}", "namespace": "x"},
                    "spec": {
                        "nodeName": f"n{i}",
                        "containers": [
                            {"name": "c", "resources": {"limits": {"nvidia.com/gpu": str(8 - f)}}}
                        ],
                    },
                    "status": {"phase": "Running"},
                }
            )
    items.append(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "want", "namespace": "x"},
            "spec": {
                "containers": [
                    {"name": "c", "resources": {"limits": {"nvidia.com/gpu": str(want)}}}
                ]
            },
            "status": {"phase": "Pending"},
        }
    )
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 8), min_size=1, max_size=6), st.integers(1, 8))
def test_free_gpu_arithmetic(free, want):
    """One node with enough -> fits; enough only in total -> fragmentation; else insufficient."""
    (d,) = diagnose(parse_text(_snapshot(free, want), "h.json"))
    if max(free) >= want:
        assert d.cause == "schedulable"
    elif sum(free) >= want:
        assert d.cause == "fragmentation"
    else:
        assert d.cause == "insufficient-gpus"


def test_non_gpu_and_running_pods_are_ignored():
    snap = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "cpu"},
                "spec": {"containers": [{"name": "c"}]},
                "status": {"phase": "Pending"},
            }
        ],
    }
    assert diagnose(parse_text(json.dumps(snap), "s.json")) == []


def test_cluster_without_client_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "kubernetes", None)
    result = CliRunner().invoke(cli, ["diagnose", "--cluster"])
    assert result.exit_code == 2 and "pip install 'gpuscale[cluster]'" in result.output


def test_a_pool_that_can_launch_is_never_reported_as_unable_to():
    (d,) = diagnose(load_inputs([str(SNAPSHOTS / "provisioner-not-acting.json")]))
    assert any("can launch" in e for e in d.evidence)
    assert "no NodePool" not in d.summary and "can add" not in d.summary
    assert "no NodeClaim is launching" in d.summary


def test_a_file_that_is_not_a_snapshot_says_so():
    fixture = Path(__file__).resolve().parent / "fixtures" / "GPU001" / "fires.yaml"
    result = CliRunner().invoke(cli, ["diagnose", str(fixture)])
    assert result.exit_code == 2
    assert "no Pod objects" in result.output and "gpuscale audit" in result.output
