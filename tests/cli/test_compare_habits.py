"""compare's verdict, --seeds, --fail-under-slo, -o json|yaml|table, `-` for stdin, and
writing to /dev/null or stdout without --force."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gpuscale.cli import cli

from ..sim.scenarios import small_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _scenario_text() -> str:
    return yaml.safe_dump(small_scenario(duration_s=120.0).model_dump(mode="json"))


def _scenario_file(tmp_path: Path) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(_scenario_text())
    return path


def test_compare_ends_with_a_verdict_line(tmp_path):
    result = CliRunner().invoke(cli, ["compare", str(_scenario_file(tmp_path))])
    assert result.exit_code == 0, result.output
    tail = result.output.split("verdict: ")
    assert len(tail) == 2 and "\n- " not in tail[1]  # the verdict comes last (maybe wrapped)


def test_demo_plan_run_meets_the_slo_below_hpa_gpu_util_70(tmp_path):
    out = tmp_path / "demo.json"
    result = CliRunner().invoke(cli, ["demo", "--out", str(out)])
    assert result.exit_code == 0, result.output
    runs = {r["name"]: r for r in json.loads(out.read_text())["runs"]}
    assert runs["plan"]["slo_attainment"] >= 0.99
    assert runs["plan"]["cost_usd"] < runs["hpa-gpu-util-70"]["cost_usd"]
    lines = result.output.strip().splitlines()
    assert result.output.split("verdict: ")[1].startswith("plan meets")
    assert sum(line.startswith("- ") for line in lines) == 3  # the lesson, under the table


def test_fail_under_slo_exits_1_only_when_no_strategy_reaches_it(tmp_path):
    scenario = str(_scenario_file(tmp_path))
    ok = CliRunner().invoke(cli, ["compare", scenario, "--fail-under-slo", "0.5"])
    assert ok.exit_code == 0, ok.output
    gate = CliRunner().invoke(cli, ["compare", str(EXAMPLES / "pd-split" / "scenario.yaml"),
                                    "--fail-under-slo", "99.9"])
    assert gate.exit_code == 1, gate.output
    assert "fail-under-slo" in gate.output
    bad = CliRunner().invoke(cli, ["compare", scenario, "--fail-under-slo", "150"])
    assert bad.exit_code == 2


def test_seeds_runs_each_seed_and_reports_the_spread(tmp_path):
    result = CliRunner().invoke(cli, ["compare", str(_scenario_file(tmp_path)), "--seeds", "3",
                                      "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    base = data["seed"]
    assert data["seeds"] == [base, base + 1, base + 2] and len(data["by_seed"]) == 3
    for row in data["spread"]:
        slo = row["slo_attainment"]
        assert slo["min"] <= slo["mean"] <= slo["max"]
    table = CliRunner().invoke(cli, ["compare", str(_scenario_file(tmp_path)), "--seeds", "2"])
    assert "spread over seeds" in table.output


def test_output_yaml_and_the_format_alias_and_stdin(tmp_path):
    text = _scenario_text()
    as_yaml = CliRunner().invoke(cli, ["simulate", "-", "-o", "yaml"], input=text)
    assert as_yaml.exit_code == 0, as_yaml.output
    data = yaml.safe_load(as_yaml.output)
    as_json = CliRunner().invoke(cli, ["simulate", "-", "--format", "json"], input=text)
    def no_wall(d):
        return [{k: v for k, v in r.items() if k != "wall_s"} for r in d["runs"]]

    assert no_wall(data) == no_wall(json.loads(as_json.output)) and data["runs"]
    old_word = CliRunner().invoke(cli, ["simulate", "-", "--output", "text"], input=text)
    assert old_word.exit_code == 0 and "strategy" in old_word.output


def test_dev_null_and_stdout_need_no_force(tmp_path):
    scenario = str(_scenario_file(tmp_path))
    for _ in range(2):
        result = CliRunner().invoke(cli, ["compare", scenario, "--out", "/dev/null"])
        assert result.exit_code == 0, result.output
    to_stdout = CliRunner().invoke(cli, ["compare", scenario, "--out", "-"])
    assert to_stdout.exit_code == 0 and json.loads(to_stdout.output)["runs"]


def test_json_writes_an_infinite_ttft_as_null_not_infinity():
    from gpuscale.report.timeline import result_json_text

    text = result_json_text({"scenario": "s", "seed": 0,
                             "runs": [{"ttft_s": {"p99": float("inf")}}]})
    assert "Infinity" not in text and json.loads(text)["runs"][0]["ttft_s"]["p99"] is None


@pytest.mark.slow
def test_every_command_takes_o_and_reads_dash_where_it_reads_a_file(tmp_path):
    examples = EXAMPLES
    runner = CliRunner()
    sched = runner.invoke(cli, ["schedule", "-", "-o", "yaml"],
                          input=(examples / "gang-partial-launch" / "karpenter.yaml").read_text())
    assert sched.exit_code == 0, sched.output
    assert yaml.safe_load(sched.output)["runs"]
    calib = runner.invoke(cli, ["calibrate", "--row", "A6", "-o", "yaml"])
    assert yaml.safe_load(calib.output)["rows"][0]["row"] == "A6"
    result = runner.invoke(cli, ["simulate", str(_scenario_file(tmp_path)), "-o", "json",
                                 "--series"])
    report = runner.invoke(cli, ["report", "-", "--out", str(tmp_path / "r.html")],
                           input=result.output)
    assert report.exit_code == 0, report.output
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>") or \
        "<html" in (tmp_path / "r.html").read_text()
    for command in ("simulate", "compare", "demo", "plan", "audit", "diagnose", "schedule",
                    "calibrate"):
        help_text = runner.invoke(cli, [command, "--help"]).output
        assert "-o, --output, --format" in help_text, command


def test_json_carries_the_verdict_and_out_file_too(tmp_path):
    out = tmp_path / "r.json"
    result = CliRunner().invoke(cli, ["compare", str(_scenario_file(tmp_path)), "-o", "json",
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    assert printed["verdict"].startswith("verdict: ")
    assert json.loads(out.read_text())["verdict"] == printed["verdict"]
    one = CliRunner().invoke(cli, ["simulate", str(_scenario_file(tmp_path)), "-o", "json",
                                   "--strategy", "fixed-1"])
    assert "verdict" not in json.loads(one.output)  # one strategy named: nothing to compare
