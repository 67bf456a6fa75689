"""What a new user meets in the first hour (issue 30): tables whose cells are cut at 80
columns, `resolved` lines past 100, sweep progress by hash, a Pareto chart of unlabelled dots
and headers that overprint, a silent `make demo`, Python dict text in notes, "1 GPUs", no
did-you-mean for a mistyped subcommand, no example snapshot for `diagnose`, and `--out`
meaning four things with no page saying which."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from click.testing import CliRunner

from gpuscale.cli import cli

ROOT = Path(__file__).resolve().parents[2]
from .test_adversarial_inputs import TINY  # noqa: E402


def test_an_80_column_terminal_gets_whole_cells(monkeypatch, tmp_path):
    from gpuscale.report import terminal

    monkeypatch.setattr(terminal.os, "isatty", lambda fd: True)
    monkeypatch.setenv("COLUMNS", "80")
    console = terminal.make_console()
    path = tmp_path / "s.yaml"
    # Strategy names as long as real ones (a plan's baseline-queue-depth...): at 80 columns
    # rich shrank the other columns to "SLO…" and "TTFT …".
    path.write_text(TINY.replace("name: fixed1", "name: baseline-queue-depth-keda-long")
                    .replace("name: keda", "name: fixed-best-always-on"))
    result = CliRunner().invoke(cli, ["simulate", str(path), "-o", "json"])
    import json

    with console.capture() as captured:
        terminal.print_summary(json.loads(result.output), console)
    text = captured.get()
    assert "…" not in text and "SLO met" in text and "TTFT p99" in text


def test_resolved_lines_fit_100_columns(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(TINY)
    result = CliRunner().invoke(cli, ["simulate", str(path)])
    assert result.exit_code == 0, result.output
    resolved = result.output[result.output.index("resolved "):].splitlines()
    assert resolved[0].startswith("resolved fixed1: Llama-3.1-8B")
    assert "NO calibration points" in result.output  # nothing dropped by the wrap
    assert max(len(line) for line in resolved) <= 100


def test_sweep_progress_names_the_settings_not_a_hash(tmp_path):
    scenario, grid = tmp_path / "s.yaml", tmp_path / "g.yaml"
    scenario.write_text(TINY)
    grid.write_text('parameters:\n  "strategies[keda].autoscaler.triggers[0].threshold": '
                    '[2, 5]\n')
    result = CliRunner().invoke(cli, ["sweep", str(scenario), "--grid", str(grid), "--out",
                                      str(tmp_path / "t.csv"), "--workers", "1"])
    assert result.exit_code == 0, result.output
    progress = [ln for ln in result.stderr.splitlines() if ln.startswith("[")]
    assert progress and all("threshold=" in ln for ln in progress)
    assert not any(re.search(r"\b[0-9a-f]{16}\b", ln) for ln in progress)


def test_the_sweep_report_numbers_its_frontier_and_wraps_its_headers():
    from gpuscale.report.charts import pareto_chart
    from gpuscale.report.html import CSS

    rows = [{"run_id": "a", "strategy": "s", "set:x": 1, "cost_usd": 1.0, "slo_attainment": 0.5},
            {"run_id": "b", "strategy": "s", "set:x": 2, "cost_usd": 2.0, "slo_attainment": 0.9}]
    chart = pareto_chart(rows)
    numbered = [line for line in chart.lines if line.show_labels]
    assert [line.labels for line in numbered] == [("#1", "#2")]
    # A 90-pixel header with a long unbroken name (min_replica_count) overprinted its neighbour.
    assert "overflow-wrap:anywhere" in CSS[CSS.index("th{white-space:normal"):]


def test_make_demo_says_it_is_installing_before_the_long_quiet_step(tmp_path):
    plan = subprocess.run(["make", "-n", "demo", f"VENV={tmp_path / 'venv'}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert plan.returncode == 0, plan.stderr
    lines = plan.stdout.splitlines()
    install = next(i for i, ln in enumerate(lines) if "pip install -q -e ." in ln)
    assert any(ln.startswith("echo") and "compiling" in ln for ln in lines[:install])


def test_notes_show_label_matchers_as_promql_not_a_python_dict():
    from gpuscale.importer.promql import QueryContext, import_query
    from gpuscale.metrics.exposition import known_series

    notes: list[str] = []
    ctx = QueryContext(known_series("vllm"), values={"model_name": "served"})
    import_query('sum(vllm:num_requests_waiting{model_name="m", zone!="a\\"b"})', ctx,
                 source="so.yaml", field_path="query", notes=notes)
    text = " ".join(notes)
    assert 'pins model_name="m"' in text and 'carry model_name="served"' in text, notes
    assert 'zone!="a\\"b"' in text and "='" not in text, notes


def test_one_gpu_is_one_gpu():
    from gpuscale.units import gpus_text

    assert [gpus_text(n) for n in (0, 1, 4, 0.5)] == ["0 GPUs", "1 GPU", "4 GPUs", "0.5 GPU"]
    snapshot = ROOT / "tests" / "audit" / "diagnose" / "kubectl" / "nodes-pods.yaml"
    # Every 4 of the dump made 1: 1-GPU nodes and pods, the Pending one asking for 1 GPU.
    text = snapshot.read_text().replace('nvidia.com/gpu: "4"', 'nvidia.com/gpu: "1"')
    result = CliRunner().invoke(cli, ["diagnose", "-"], input=text)
    assert result.exit_code == 0, result.output
    assert "(1 GPU): " in result.output and "1 GPUs" not in result.output


def test_a_mistyped_subcommand_is_answered_with_the_closest():
    result = CliRunner().invoke(cli, ["simulat", "x.yaml"])
    assert result.exit_code == 2
    assert "did you mean 'simulate'?" in result.output


def test_the_diagnose_example_snapshot_names_its_cause():
    result = CliRunner().invoke(cli, ["diagnose", str(ROOT / "examples" / "diagnose" /
                                                      "snapshot.yaml")])
    assert result.exit_code == 0, result.output
    assert "(4 GPUs): nodepool-limits" in result.output
    assert "examples/diagnose/snapshot.yaml" in CliRunner().invoke(
        cli, ["diagnose", "--help"]).output


def test_the_cli_page_says_what_out_means_for_every_command():
    page = (ROOT / "docs" / "cli.md").read_text()
    section = page[page.index("## What `--out` writes"):]
    section = section[:section.index("\n## ", 5)]
    import importlib

    from gpuscale.cli import SUBCOMMANDS

    # every command that has an --out (backtest came later and was missing), found, not listed
    with_out = [name for name, (module, _) in SUBCOMMANDS.items()
                if any("--out" in p.opts for p in importlib.import_module(module).command.params)]
    assert {"simulate", "schedule", "report", "sweep", "plan"} <= set(with_out)
    for command in with_out:
        assert f"`{command}`" in section, command
    assert "DIR" in section and "resumed" in section
