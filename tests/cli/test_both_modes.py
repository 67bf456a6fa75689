"""`--manifests` is not a second-class mode (issue 29): the same bundle as manifests and as the
scenario it describes (`--emit-scenario`) gives the same verdict, `--fail-under-slo` exit code,
`--seeds` spread, `--decisions` log, `--report` and `--metrics-out` series, because both run through
one code path."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuscale.cli import cli

from ..importer.bundle import CATALOG, MANIFESTS, TRACE, load_docs, of_kind, write_bundle

MODES = ("manifests", "scenario")


@pytest.fixture(scope="module")
def scenario_file(tmp_path_factory) -> Path:
    """The example bundle's own scenario, written by `simulate --manifests --emit-scenario`."""
    path = tmp_path_factory.mktemp("emitted") / "scenario.yaml"
    result = CliRunner().invoke(cli, ["simulate", "--manifests", str(MANIFESTS), "--trace",
                                      str(TRACE), "--catalog", str(CATALOG), "--emit-scenario",
                                      str(path), "-o", "json"])
    assert result.exit_code == 0, result.output
    return path


def run(mode: str, scenario_file: Path, *args: str, command: str = "simulate"):
    source = (["--manifests", str(MANIFESTS), "--trace", str(TRACE)] if mode == "manifests"
              else [str(scenario_file)])
    return CliRunner().invoke(cli, [command, *source, "--catalog", str(CATALOG), *args])


@pytest.mark.parametrize("mode", MODES)
def test_fail_under_slo_sets_the_exit_code(mode, scenario_file):
    # The bundle meets ~44 % of its SLO: a 99 % gate fails (exit 1), a 10 % gate passes.
    failing = run(mode, scenario_file, "--fail-under-slo", "99")
    assert failing.exit_code == 1, failing.output
    assert "no strategy reaches the --fail-under-slo 99" in failing.output
    assert run(mode, scenario_file, "--fail-under-slo", "10").exit_code == 0


@pytest.mark.parametrize("mode", MODES)
def test_seeds_run_every_seed(mode, scenario_file):
    result = run(mode, scenario_file, "--seeds", "2", "-o", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["seeds"] == [data["seed"], data["seed"] + 1]
    assert len(data["by_seed"]) == 2 and data["spread"][0]["name"] == "qwen3-32b"


@pytest.mark.parametrize("mode", MODES)
def test_decisions_and_report_are_written(mode, scenario_file, tmp_path):
    log, report = tmp_path / "decisions.jsonl", tmp_path / "report.html"
    result = run(mode, scenario_file, "--decisions", str(log), "--report", str(report))
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert {r["controller"] for r in records} >= {"keda-operator", "keda-hpa"}
    polled = [t for r in records if r["controller"] == "keda-operator"
              for t in r["inputs"]["triggers"]]
    # Each poll names what its trigger read: the query as written, Prometheus' answer, when.
    assert polled and all({"name", "query", "value", "eval_time_s"} <= set(t) for t in polled)
    assert {t["query"] for t in polled} == {'sum(vllm:num_requests_waiting{model_name="Qwen/'
                                            'Qwen3-32B"})'}
    assert any(t["value"] for t in polled)
    assert "<svg" in report.read_text()
    assert f"decision log written to {log}" in result.output


@pytest.mark.parametrize("mode", MODES)
def test_metrics_out_is_written_from_the_start_time(mode, scenario_file, tmp_path):
    series = tmp_path / "run.om"
    result = run(mode, scenario_file, "--metrics-out", str(series), "--start-time",
                 "2026-06-01T12:00:00+02:00")
    assert result.exit_code == 0, result.output
    text = series.read_text()
    assert text.startswith("# TYPE ") and text.endswith("# EOF\n")
    assert 'vllm:num_requests_waiting{' in text and "kube_deployment_spec_replicas{" in text
    stamps = [float(m.group(1)) for m in re.finditer(r" (\d+(?:\.\d+)?)$", text, re.M)]
    assert min(stamps) == 1780308000.0  # 10:00 UTC
    assert f"series written to {series}" in result.output


def test_metrics_out_refuses_to_overwrite_in_both_modes(scenario_file, tmp_path):
    series = tmp_path / "mine.om"
    series.write_text("mine")
    for mode in MODES:
        result = run(mode, scenario_file, "--metrics-out", str(series))
        assert result.exit_code == 2 and series.read_text() == "mine", result.output


def _written_in_both_modes(scenario_file: Path, folder: Path, option: str) -> list[bytes]:
    """The file `option` writes, run once in each mode."""
    out = []
    for mode in MODES:
        path = folder / f"{mode}{option}"
        assert run(mode, scenario_file, option, str(path)).exit_code == 0
        out.append(path.read_bytes())
    return out


def test_both_modes_export_the_same_series(scenario_file, tmp_path):
    exports = _written_in_both_modes(scenario_file, tmp_path, "--metrics-out")
    assert exports[0] == exports[1] and exports[0]


def test_both_modes_log_the_same_decisions(scenario_file, tmp_path):
    logs = _written_in_both_modes(scenario_file, tmp_path, "--decisions")
    assert logs[0] == logs[1] and logs[0]


def test_both_modes_give_the_same_runs(scenario_file):
    runs = []
    for mode in MODES:
        result = run(mode, scenario_file, "-o", "json")
        runs.append([{k: v for k, v in r.items() if k not in ("wall_s", "imported")}
                     for r in json.loads(result.output)["runs"]])
    assert runs[0] == runs[1]


@pytest.mark.slow
def test_compare_of_two_bundles_prints_the_verdict(tmp_path):
    docs = load_docs()
    bigger = [dict(d) for d in docs]
    so = of_kind(bigger, "ScaledObject")
    so["spec"] = dict(so["spec"], minReplicaCount=4)
    today = write_bundle(tmp_path, docs, "today")
    proposed = write_bundle(tmp_path, bigger, "proposed")
    series = tmp_path / "both.om"
    result = CliRunner().invoke(cli, ["compare", "--manifests", str(today), "--manifests",
                                      str(proposed), "--trace", str(TRACE), "--catalog",
                                      str(CATALOG), "-o", "json", "--fail-under-slo", "50",
                                      "--metrics-out", str(series)])
    assert result.exit_code == 0, result.output
    # One export holds both bundles' series, told apart by a `run` label.
    text = series.read_text()
    assert 'run="today"' in text and 'run="proposed"' in text
    data = json.loads(result.output)
    assert [r["name"] for r in data["runs"]] == ["today", "proposed"]
    assert data["verdict"].startswith("verdict: ")
    assert all(r["imported"]["sources"] for r in data["runs"])
