import json

import yaml
from click.testing import CliRunner

from gpuscale.cli import cli

from .helpers import EXAMPLES


def _run(*args):
    return CliRunner().invoke(cli, ["plan", *args])


def test_writes_plan_md_and_manifests(tmp_path):
    out = tmp_path / "plan"
    result = _run(str(EXAMPLES / "llama70b-fp8-h100-chat.yaml"), "--out", str(out), "--no-simulate")
    assert result.exit_code == 0, result.output
    text = (out / "plan.md").read_text()
    for heading in ("Layer 1", "Layer 2", "Layer 3", "Warm-pool evidence", "cost per day"):
        assert heading in text
    files = sorted(p.name for p in (out / "manifests").iterdir())
    assert "nodepool-gpu-serving.yaml" in files and "chat-scaler.yaml" in files
    docs = list(yaml.safe_load_all((out / "manifests" / "chat.yaml").read_text()))
    assert [d["kind"] for d in docs] == [
        "Deployment",
        "Service",
        "PodDisruptionBudget",
        "ServiceMonitor",
    ]
    assert list(docs[0]) == ["apiVersion", "kind", "metadata", "spec"]  # stable key order


def test_never_overwrites_without_force(tmp_path):
    out = tmp_path / "plan"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    result = _run(str(EXAMPLES / "llama70b-fp8-h100-chat.yaml"), "--out", str(out), "--no-simulate")
    assert result.exit_code == 2 and "--force" in result.output
    assert (out / "keep.txt").read_text() == "mine"
    (out / "manifests").mkdir()
    (out / "manifests" / "stale.yaml").write_text("old plan output")
    result = _run(
        str(EXAMPLES / "llama70b-fp8-h100-chat.yaml"), "--out", str(out), "--no-simulate", "--force"
    )
    assert result.exit_code == 0 and (out / "plan.md").exists()
    # --force replaces the plan's own outputs, never a file the user keeps there.
    assert (out / "keep.txt").read_text() == "mine"
    assert not (out / "manifests" / "stale.yaml").exists()
    assert (out / "manifests" / "chat.yaml").exists()


def test_json_format_is_the_plan_as_data():
    result = _run(
        str(EXAMPLES / "shared-cluster-prod-and-training.yaml"), "--format", "json", "--no-simulate"
    )
    data = json.loads(result.output)
    assert data["name"] == "shared-h100"
    # the 3 requested traps; the 405B replica spanning two nodes is planned (and simulated
    # without --no-simulate) like any other, no longer refused as unverifiable
    assert len(data["refusals"]) == 3 and {r["workload"] for r in data["roles"]} == {
        "assistant",
        "frontier",
    }
    assert not any("spanning" in r["requested"] for r in data["refusals"])
    frontier = next(r for r in data["roles"] if r["workload"] == "frontier")
    assert (frontier["pods_per_replica"], frontier["gpus_per_pod"], frontier["pp"]) == (2, 8, 2)


def test_refusal_plan_has_no_manifests(tmp_path):
    out = tmp_path / "p"
    result = _run(str(EXAMPLES / "single-node-refusal.yaml"), "--out", str(out))
    assert result.exit_code == 0
    assert "serverless" in (out / "plan.md").read_text() and not (out / "manifests").exists()


def test_bad_input_is_one_line_exit_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ncluster: {instance_types: [p9.huge]}\n")
    result = _run(str(bad))
    assert result.exit_code == 2 and "p9.huge" in result.output
