"""Hostile inputs of each class over every command that reads a file: each ends in under
20 s in one `gpuscale: error:` line with exit 2 (audit keeps its 0/1/2)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gpuscale.cli import cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SCENARIO = EXAMPLES / "midnight-spike" / "scenario.yaml"

BOMB = "a0: &a0 [" + ", ".join(["lol"] * 10) + "]\n" + "".join(
    f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 9))


def _one_line(args: list[str], *expected: str, code: int = 2) -> str:
    start = time.perf_counter()
    result = CliRunner().invoke(cli, args)
    assert time.perf_counter() - start < 20
    assert result.exit_code == code, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


HOSTILE_TEXTS = {
    "bomb-in-description": BOMB + "description: *a8\n",
    "deep": "name: " + "[" * 10_000 + "]" * 10_000 + "\n",
    "dup": "name: a\nname: b\n",
    "tag": "name: !!python/object:os.system x\n",
    "bool": "seed: !!bool maybe\n",
    "merge": "name: x\nmodel: {<<: 5}\n",
    "bigint": "seed: " + "9" * 5000 + "\n",
}


@pytest.mark.parametrize("command", ["simulate", "compare", "plan", "schedule"])
@pytest.mark.parametrize("name", sorted(HOSTILE_TEXTS))
def test_hostile_yaml_is_one_line(tmp_path, command, name):
    path = tmp_path / "x.yaml"
    path.write_text(HOSTILE_TEXTS[name])
    _one_line([command, str(path)], str(path))


@pytest.mark.parametrize("name", sorted(HOSTILE_TEXTS))
def test_hostile_manifests_are_one_line_in_audit(tmp_path, name):
    path = tmp_path / "m.yaml"
    path.write_text(HOSTILE_TEXTS[name])
    _one_line(["audit", str(path)], str(path))


def _part(data: dict, **fields) -> None:
    """Replace the first workload part's arrival fields (its lengths are kept)."""
    part = data["workload"]["parts"][0]
    for key in ("rate_per_s", "duration_s"):
        part.pop(key, None)
    part.update(fields)


def _mutated(tmp_path: Path, edit) -> Path:
    data = yaml.safe_load(SCENARIO.read_text())
    edit(data)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda d: d["workload"]["parts"][1].update(at_s=float("nan")), "at_s"),
    (lambda d: _part(d, kind="diurnal", min_rate_per_s=0.1, max_rate_per_s=1, duration_s=3000,
                     peak_at_s=float("nan")), "expected a finite number"),
    (lambda d: d["workload"]["parts"][0].update(rate_per_s=float("inf")), "finite"),
    (lambda d: d["workload"]["parts"][0].update(rate_per_s="1e400"), "finite"),
    (lambda d: d["workload"]["parts"][0].update(rate_per_s=1e9), "requests, more than"),
    (lambda d: d.update(duration_s=10 * 365 * 86400), "horizon"),
    (lambda d: d["workload"]["parts"][1].update(count=10**9), "requests, more than"),
    (lambda d: d["workload"]["parts"][0].update(kind="bursty", cv=1e6), "cv"),
    (lambda d: _part(d, kind="piecewise", phases=[{"duration_s": 1e-12, "rate_per_s": 1}],
                     duration_s=3000),
     "phase instances"),
])
def test_numbers_and_work_are_refused_up_front(tmp_path, edit, expected):
    _one_line(["simulate", str(_mutated(tmp_path, edit))], expected)


@pytest.mark.parametrize("schedule", ["not a cron", "@fortnightly", "*/0 * * * *", "0 0 99 * *"])
def test_invalid_budget_crons_are_refused_at_load(tmp_path, schedule):
    def edit(d):
        pool = d["strategies"][0]["nodes"]["node_pools"][0]
        pool.setdefault("disruption", {})["budgets"] = [
            {"nodes": "0", "schedule": schedule, "duration": "1h"}]
    _one_line(["simulate", str(_mutated(tmp_path, edit))], "schedule")


def test_out_of_range_start_time_is_refused_at_load(tmp_path):
    def edit(d):
        d["strategies"][0]["nodes"]["start_utc"] = "9999-12-31T23:00:00Z"
    _one_line(["simulate", str(_mutated(tmp_path, edit))], "start_utc")


def test_deep_result_json_is_one_line_in_report(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    _one_line(["report", str(path), "--out", str(tmp_path / "r.html")], "nested deeper")


@pytest.mark.parametrize("command", ["simulate", "plan", "schedule"])
def test_dev_zero_as_input_is_refused_with_the_figure(command):
    _one_line([command, "/dev/zero"], "/dev/zero", "16777216-byte limit")


def test_dev_zero_as_a_trace_is_refused(tmp_path):
    def edit(d):
        d["workload"] = {"kind": "trace", "format": "generic", "path": "/dev/zero"}
    _one_line(["simulate", str(_mutated(tmp_path, edit))], "not a regular file")


def test_nan_cost_in_a_result_is_an_error_not_a_drawing(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('{"scenario": "s", "seed": 0, "runs": [{"name": "a", "cost_usd": NaN}]}')
    _one_line(["report", str(path), "--out", str(tmp_path / "r.html")], "NaN is not a JSON number")
    assert not (tmp_path / "r.html").exists()


def test_prompts_longer_than_max_model_len_are_rejected_as_vllm_does(tmp_path):
    import json

    def edit(d):
        d["engine"] = dict(d.get("engine") or {}, max_model_len=32768)
    path = _mutated(tmp_path, edit)
    result = CliRunner().invoke(cli, ["simulate", str(path), "--strategy", "karpenter",
                                      "--format", "json"])
    assert result.exit_code == 0, result.output
    run = json.loads(result.output)["runs"][0]
    # The spike's ~64k-token prompts (median 64,000, sigma 0.3) cannot be served at 32k.
    rejected = run["drops_by_reason"].get("exceeds_max_model_len", 0)
    assert 100 <= rejected <= 120
