"""Checks the trace plan tests share: the replay scenario holds the manifests' cron windows,
`gpuscale compare DIR/scenarios/W.yaml` prints plan.md's replay numbers, and an unreachable
SLO is one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from gpuscale.cli import cli

REPLAY_STRATEGIES = ("plan", "baseline-queue-depth", "fixed-best")


def plan_out(folder: Path, data: dict, name: str = "plan") -> tuple[dict, Path]:
    """`gpuscale plan` of the input `data` (written as FOLDER/input-NAME.yaml, so relative
    trace paths are read from FOLDER) with `--out FOLDER/NAME`: the plan's JSON and the
    folder it wrote."""
    source = folder / f"input-{name}.yaml"
    source.write_text(yaml.safe_dump(data))
    out = folder / name
    result = CliRunner().invoke(cli, ["plan", str(source), "--out", str(out), "--format",
                                      "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output), out


def cron_windows(keda: dict, scaled: dict) -> tuple[list, list]:
    """(start, end, replicas) of the replay's plan strategy and of the shipped ScaledObject."""
    crons = [t for t in keda["triggers"] if t.get("type") == "cron"]
    shipped = [t["metadata"] for t in scaled["spec"]["triggers"] if t["type"] == "cron"]
    return ([(c["start"], c["end"], c["desired_replicas"]) for c in crons],
            [(m["start"], m["end"], int(m["desiredReplicas"])) for m in shipped])


def compare_reproduces_plan_md(plan: dict, out: Path, workload: str = "chat") -> list[dict]:
    """Runs compare on the replay scenario and checks each strategy against the plan's replay
    rows and plan.md's table, to the digit; returns the rows."""
    replay = CliRunner().invoke(cli, ["compare", str(out / "scenarios" / f"{workload}.yaml"),
                                      "--format", "json"])
    assert replay.exit_code == 0, replay.output
    runs = {r["name"]: r for r in json.loads(replay.output)["runs"]}
    rows = plan["warm_pools"][workload]["replay"]
    for name, row in zip(REPLAY_STRATEGIES, rows, strict=True):
        for key in ("gpu_hours", "slo_attainment", "cost_usd", "drain_gpu_hours"):
            assert runs[name][key] == row[key], (name, key)
    text = (out / "plan.md").read_text()
    assert f"| {rows[0]['slo_attainment']:.1%} |" in text
    assert f"| {rows[0]['gpu_hours']:.1f} | {rows[0]['cost_usd']:.2f} |" in text
    return rows


def unreachable_plan(data: dict, folder: Path) -> tuple[str, Path, Path]:
    """`gpuscale plan` of an input whose SLO no fleet reaches: exits 2 with one line naming
    the input, `slo` and "not reachable"; returns (that line, the input, the --out folder)."""
    source = folder / "input.yaml"
    source.write_text(yaml.safe_dump(data))
    out = folder / "plan"
    result = CliRunner().invoke(cli, ["plan", str(source), "--out", str(out)])
    assert result.exit_code == 2, result.output
    line = result.output.strip().splitlines()[-1]
    assert str(source) in line and "slo" in line and "not reachable" in line
    return line, source, out
