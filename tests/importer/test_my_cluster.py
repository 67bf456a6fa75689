"""The example bundle (a vLLM Deployment, a KEDA ScaledObject, a Karpenter NodePool, a model
and an instance type from a user catalog) simulates with --manifests, and editing a field moves
the result the way a user expects."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gpuscale.cli import cli
from gpuscale.importer.build import import_manifests
from gpuscale.importer.catalog_files import use_catalogs
from gpuscale.sim import simulate_scenario

from .bundle import CATALOG, MANIFESTS, TRACE, load_docs, of_kind, write_bundle

RESOLVED_KEYS = {("model", "name"), ("model", "tp"), ("model", "precision"),
                 ("autoscaler", "kind"), ("autoscaler", "min_replicas"),
                 ("autoscaler", "max_replicas"), ("nodes", "kind"),
                 ("nodes", "consolidation_policy")}


def run_cli(*args: str) -> dict:
    result = CliRunner().invoke(cli, [*args, "--catalog", str(CATALOG), "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def simulate(bundle: Path) -> dict:
    use_catalogs([CATALOG])
    imported = import_manifests([str(bundle)], TRACE)
    result, walls = simulate_scenario(imported.scenario, Path("."))
    return result.to_json(walls)["runs"][0]


@pytest.fixture(scope="module")
def baseline() -> dict:
    from gpuscale.catalog.specs import set_user_entries

    run = simulate(MANIFESTS)
    set_user_entries({}, {}, {})
    return run


def test_example_simulates_and_says_what_it_simulated():
    data = run_cli("simulate", "--manifests", str(MANIFESTS), "--trace", str(TRACE))
    (run,) = data["runs"]
    resolved = run["resolved"]
    assert {
        (a, b) for a in resolved for b in resolved[a] if isinstance(resolved[a], dict)
    } >= RESOLVED_KEYS
    assert resolved["model"] == {"name": "Qwen3-32B", "tp": 4, "precision": "bf16",
                                 "kv_precision": "bf16", "ep": 1, "attention_dp": 1,
                                 "nodes_per_replica": 1}
    assert resolved["autoscaler"] == {"kind": "keda", "min_replicas": 1, "max_replicas": 4}
    assert resolved["nodes"]["kind"] == "karpenter"
    assert resolved["nodes"]["consolidation_policy"] == "WhenEmpty"
    # L40S efficiency factors are assumed (gpus.yaml): the result says so.
    assert resolved["gpu"] == {"name": "L40S", "instance_type": "g6e.12xlarge", "calibrated": False,
                               "efficiency_source": "assumed (H100 factors)"}
    assert resolved["catalog"] == {"model": "user", "gpu": "built-in", "instance_type": "user"}
    assert run["requests"]["total"] == len(TRACE.read_text().splitlines()) - 1
    assert any("image_size_gb" in d for d in run["imported"]["defaults"])
    # The bundle's PDB is simulated now (tests/importer/test_capacity_kinds.py): no note says
    # otherwise.
    assert not any("PodDisruptionBudget" in n and "not simulated" in n
                   for n in run["imported"]["notes"])


def test_table_shows_resolved_line_and_defaults():
    result = CliRunner().invoke(cli, ["simulate", "--manifests", str(MANIFESTS), "--trace",
                                      str(TRACE), "--catalog", str(CATALOG)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("resolved "))
    wrapped = [lines[start]] + [ln.strip() for ln in lines[start + 1:start + 4]
                                if ln.startswith("  ") and not ln.startswith("  note")]
    line = " ".join(wrapped)  # the line is wrapped at 100 columns
    assert "Qwen3-32B tp=4 bf16 on g6e.12xlarge" in line and "keda 1..4" in line
    assert "karpenter WhenEmpty" in line and "NO calibration points" in line
    assert "default: slo: ttft 2 s" in result.output


def test_without_the_catalog_the_model_is_refused_in_one_line():
    result = CliRunner().invoke(
        cli, ["simulate", "--manifests", str(MANIFESTS), "--trace", str(TRACE)]
    )
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert (
        "'Qwen/Qwen3-32B' is not in the catalog" in result.output and "--catalog" in result.output
    )


def _edited(tmp_path: Path, kind: str, edit) -> Path:
    docs = load_docs()
    edit(of_kind(docs, kind)["spec"])
    return write_bundle(tmp_path, docs)


def test_higher_keda_threshold_scales_less_and_costs_less(tmp_path, baseline):
    def edit(spec):
        spec["triggers"][0]["metadata"]["threshold"] = "40"
    run = simulate(_edited(tmp_path, "ScaledObject", edit))
    assert run["replicas"]["peak"] < baseline["replicas"]["peak"]
    assert run["cost_usd"] < baseline["cost_usd"]
    assert run["slo_attainment"] <= baseline["slo_attainment"]


def test_higher_min_replica_count_holds_more_replicas_and_meets_the_slo_more(tmp_path, baseline):
    def edit(spec):
        spec["minReplicaCount"] = 2
    run = simulate(_edited(tmp_path, "ScaledObject", edit))
    assert run["replicas"]["initial"] == 2
    assert run["replicas"]["mean"] > baseline["replicas"]["mean"]
    assert run["slo_attainment"] > baseline["slo_attainment"]
    # Not necessarily dearer: on this trace the baseline's late scale-up (node launch + a
    # ~9-minute cold start of a 32B model) bills replicas that arrive after the burst.


def test_nodepool_gpu_limit_caps_the_nodes(tmp_path, baseline):
    def edit(spec):
        spec["limits"] = {"nvidia.com/gpu": 4}
    run = simulate(_edited(tmp_path, "NodePool", edit))
    assert baseline["nodes"]["peak"] > 1
    assert run["nodes"]["peak"] == 1
    assert run["cost_usd"] < baseline["cost_usd"]


def test_lower_max_replica_count_bounds_the_peak(tmp_path, baseline):
    def edit(spec):
        spec["maxReplicaCount"] = 2
    run = simulate(_edited(tmp_path, "ScaledObject", edit))
    assert baseline["replicas"]["peak"] > 2 and run["replicas"]["peak"] == 2


def test_compare_two_bundles_on_one_trace(tmp_path):
    def edit(spec):
        spec["minReplicaCount"] = 2
    proposed = _edited(tmp_path, "ScaledObject", edit)
    data = run_cli("compare", "--manifests", str(MANIFESTS), "--manifests", str(proposed),
                   "--trace", str(TRACE))
    today, pr = data["runs"]
    assert (today["name"], pr["name"]) == ("manifests", "bundle")
    assert today["requests"]["total"] == pr["requests"]["total"]
    assert (today["resolved"]["autoscaler"]["min_replicas"],
            pr["resolved"]["autoscaler"]["min_replicas"]) == (1, 2)
    assert pr["slo_attainment"] > today["slo_attainment"]


def test_emitted_scenario_simulates_to_the_same_result(tmp_path):
    emitted = tmp_path / "scenario.yaml"
    direct = run_cli("simulate", "--manifests", str(MANIFESTS), "--trace", str(TRACE),
                     "--emit-scenario", str(emitted))
    assert yaml.safe_load(emitted.read_text())["model"]["name"] == "Qwen3-32B"
    again = run_cli("simulate", str(emitted))
    for key in ("requests", "ttft_s", "slo_attainment", "replicas", "cost_usd"):
        assert again["runs"][0][key] == direct["runs"][0][key]
    assert again["runs"][0]["resolved"] == direct["runs"][0]["resolved"]


def test_manifests_from_stdin(tmp_path):
    text = "\n---\n".join(p.read_text() for p in sorted(MANIFESTS.glob("*.yaml")))
    result = CliRunner().invoke(cli, ["simulate", "--manifests", "-", "--trace", str(TRACE),
                                      "--catalog", str(CATALOG), "--format", "json"], input=text)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["runs"][0]["resolved"]["model"]["name"] == "Qwen3-32B"


def test_catalog_from_the_environment(monkeypatch):
    monkeypatch.setenv("GPUSCALE_CATALOG", str(CATALOG))
    result = CliRunner().invoke(cli, ["simulate", "--manifests", str(MANIFESTS), "--trace",
                                      str(TRACE), "--format", "json"])
    assert result.exit_code == 0, result.output


def test_manifests_need_a_trace():
    result = CliRunner().invoke(cli, ["simulate", "--manifests", str(MANIFESTS)])
    assert result.exit_code == 2 and "--trace" in result.output


def test_every_model_command_takes_catalog_and_reports_its_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("models: {X: {hidden_size: 1}}\n")
    for args in (["audit", str(MANIFESTS)], ["calibrate", "--row", "A1"],
                 ["plan", str(tmp_path / "none.yaml")], ["schedule", str(CATALOG)],
                 ["diagnose", str(CATALOG)], ["compare", str(CATALOG)],
                 ["sweep", str(CATALOG), "--grid", str(CATALOG), "--out", str(tmp_path / "t.csv")]):
        result = CliRunner().invoke(cli, [args[0], "--catalog", str(bad), *args[1:]])
        assert result.exit_code == 2, (args, result.output)
        assert result.output.strip().count("\n") == 0
        assert (
            f"{bad}: models.X.num_hidden_layers: missing required config.json field"
            in result.output
        )


def test_sweep_workers_see_the_user_catalog(tmp_path):
    emitted = tmp_path / "scenario.yaml"
    run_cli("simulate", "--manifests", str(MANIFESTS), "--trace", str(TRACE),
            "--emit-scenario", str(emitted))
    grid = tmp_path / "grid.yaml"
    grid.write_text(
        'parameters:\n  "strategies[qwen3-32b].autoscaler.triggers[0].threshold": [5, 40]\n'
    )
    out = tmp_path / "table.csv"
    result = CliRunner().invoke(cli, ["sweep", str(emitted), "--grid", str(grid), "--out", str(out),
                                      "--workers", "2", "--catalog", str(CATALOG)])
    assert result.exit_code == 0, result.output
    assert len(out.read_text().splitlines()) == 3
