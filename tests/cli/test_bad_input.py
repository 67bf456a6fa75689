"""Bad input found in the QA pass: each must be one `gpuscale: error:` line, exit code 2, and
leave no file behind."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuscale.cli import cli

from .test_simulate_cli import _scenario_file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _fails_cleanly(args: list[str], *expected: str) -> str:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("command", ["simulate", "compare", "schedule", "plan"])
def test_a_directory_or_binary_file_as_input_is_one_line(tmp_path, command):
    _fails_cleanly([command, str(tmp_path)], str(tmp_path), "directory")
    binary = tmp_path / "x.yaml"
    binary.write_bytes(b"\xcd\xff\x00name: x\n")
    _fails_cleanly([command, str(binary)], str(binary), "UTF-8")


def test_report_on_a_directory_is_one_line(tmp_path):
    _fails_cleanly(["report", str(tmp_path), "--out", str(tmp_path / "r.html")], "directory")


def test_schedule_yaml_error_is_one_line_with_position(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\n  seed: [\n")
    _fails_cleanly(["schedule", str(bad)], "line 2", "invalid YAML")


def test_a_file_given_to_the_wrong_command_says_which_command(tmp_path):
    _fails_cleanly(["simulate", str(EXAMPLES / "two-teams" / "scenario.yaml")], "gpuscale schedule")
    _fails_cleanly(["schedule", str(EXAMPLES / "midnight-spike" / "scenario.yaml")],
                   "gpuscale simulate")
    plan_input = EXAMPLES / "plans" / "llama70b-fp8-h100-chat.yaml"
    _fails_cleanly(["simulate", str(plan_input)], "a plan input", "gpuscale plan")
    _fails_cleanly(["compare", str(plan_input)], "gpuscale plan")
    _fails_cleanly(["plan", str(EXAMPLES / "pd-split" / "scenario.yaml"), "--out",
                    str(tmp_path / "plan")], "a serving scenario", "gpuscale simulate")
    assert not (tmp_path / "plan").exists()


def test_negative_seed_is_refused(tmp_path):
    scenario = _scenario_file(tmp_path)
    _fails_cleanly(["simulate", str(scenario), "--seed", "-1"], "--seed")
    text = scenario.read_text().replace("seed: ", "seed: -", 1)
    assert "seed: -" in text
    scenario.write_text(text)
    _fails_cleanly(["simulate", str(scenario)], "seed", "greater than or equal to 0")


def test_outputs_are_checked_before_the_run_and_nothing_is_half_written(tmp_path):
    scenario = _scenario_file(tmp_path)
    out = tmp_path / "result.json"
    # --report into a missing directory: refused before the JSON is written.
    _fails_cleanly(["simulate", str(scenario), "--out", str(out),
                    "--report", str(tmp_path / "missing" / "r.html")], "does not exist")
    assert not out.exists()
    # A directory as --out, even with --force: one line, directory untouched.
    _fails_cleanly(["simulate", str(scenario), "--out", str(tmp_path), "--force"], "directory")
    _fails_cleanly(["schedule", str(EXAMPLES / "two-teams" / "scenario.yaml"),
                    "--out", str(tmp_path), "--force"], "directory")


def test_click_usage_errors_are_one_line_too(tmp_path):
    _fails_cleanly(["schedule", str(tmp_path / "missing.yaml")], "does not exist", "--help")
    _fails_cleanly(["simulate", "x.yaml", "--bogus"], "--bogus")
    _fails_cleanly(["simulate"], "Missing argument")


def test_report_refuses_a_csv_that_is_not_a_sweep_table(tmp_path):
    table = tmp_path / "x.csv"
    table.write_text("a,b\n1,2\n")
    out = tmp_path / "r.html"
    _fails_cleanly(["report", str(table), "--out", str(out)], "not a gpuscale sweep table")
    assert not out.exists()
    folder = tmp_path / "d.csv"
    folder.mkdir()
    _fails_cleanly(["report", str(folder), "--out", str(out)], "is a directory")


def test_png_charts_without_matplotlib_write_nothing(tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    scenario = _scenario_file(tmp_path)
    result = tmp_path / "result.json"
    assert CliRunner().invoke(cli, ["simulate", str(scenario), "--out", str(result)]).exit_code == 0
    out = tmp_path / "r.html"
    _fails_cleanly(["report", str(result), "--out", str(out), "--chart-format", "png",
                    "--charts-dir", str(tmp_path / "charts")], "matplotlib")
    assert not out.exists() and not (tmp_path / "charts").exists()
