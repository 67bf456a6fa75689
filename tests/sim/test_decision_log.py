"""The opt-in decision log: off by default, changes nothing, and says why each controller
acted (HPA ratio and tolerance, KEDA activation, Karpenter's method, KAI's allocation)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from gpuscale.cli import cli
from gpuscale.sim import simulate_scenario

from .scenarios import small_scenario
from .test_invariants import _pd_scenario

HPA = {"name": "hpa-queue", "autoscaler": {
    "kind": "hpa", "min_replicas": 1, "max_replicas": 6,
    "metrics": [{"type": "Pods", "metric": "vllm:num_requests_waiting",
                 "target": {"type": "AverageValue", "value": 2}}]}}


def _hpa_run(decisions: bool):
    scenario = small_scenario(rate_per_s=12.0, strategies=[HPA])
    result, _ = simulate_scenario(scenario, Path("."), decisions=decisions)
    return result.runs[0]


def test_off_by_default_and_the_log_changes_no_result():
    off, on = _hpa_run(False), _hpa_run(True)
    assert off.decisions == []
    assert on.decisions
    assert on.summary == off.summary
    assert on.extra["markers"] == off.extra["markers"]


def test_hpa_records_ratio_tolerance_and_the_scale_it_chose():
    run = _hpa_run(True)
    hpa = [r for r in run.decisions if r["controller"] == "hpa"]
    assert [r["time_s"] for r in hpa] == sorted(r["time_s"] for r in hpa)
    assert {r["layer"] for r in hpa} == {"replicas"}
    scaled = [r for r in hpa if r["decision"].startswith("scale")]
    # Every scale the fleet made is in the log, at the same time, with the same counts.
    markers = [(t, detail) for t, kind, detail in run.extra["markers"] if kind.startswith("scale")]
    assert [(r["time_s"], r["decision"].removeprefix("scale ")) for r in scaled] == markers
    up = next(r for r in scaled if r["decision"] == "scale 1->" + r["decision"].split("->")[1])
    assert up["reason"] == "ValidMetricFound"
    assert up["inputs"]["tolerance"] == {"down": 0.1, "up": 0.1}
    (metric,) = up["inputs"]["metrics"]
    assert metric["metric"] == "vllm:num_requests_waiting"
    assert metric["usage_ratio"] > 1.1  # outside the tolerance band: that is why it scaled
    # A hold is a decision too: at max_replicas (6) the log shows the larger proposal held back.
    held_at_max = [r for r in hpa if r["decision"] == "hold"
                   and r["inputs"]["current_replicas"] == 6 and r["inputs"]["proposal"] > 6]
    assert held_at_max


def test_keda_karpenter_and_kai_say_why():
    scenario = _pd_scenario(12.0, 3, scheduler="kai")
    result, _ = simulate_scenario(scenario, Path("."), decisions=True)
    records = result.runs[0].decisions
    by = {}
    for r in records:
        by.setdefault(r["controller"], []).append(r)
    keda = by["keda-operator"]
    assert all("activation_threshold" in t for r in keda for t in r["inputs"]["triggers"])
    assert {r["reason"] for r in keda} <= {"Activated", "Active", "Inactive", "CoolingDown",
                                           "Deactivated", "TriggerError", "FallbackPending",
                                           "BelowMin"}
    kai = by["kai"]
    assert {r["layer"] for r in kai} == {"scheduling"}
    allocated = [r for r in kai if r["decision"].startswith("allocate")]
    assert allocated and all(r["inputs"]["nodes"] for r in allocated)
    disrupt = by.get("karpenter.disruption", [])
    assert disrupt, "the spot pools consolidate: Karpenter's chosen method is logged"
    for r in disrupt:
        assert r["inputs"]["method"] in ("emptiness", "multi-node consolidation",
                                         "single-node consolidation")
        assert (r["inputs"]["method"] == "emptiness") == (r["inputs"]["budget_reason"] == "Empty")


def test_simulate_writes_json_lines(tmp_path):
    scenario = tmp_path / "s.yaml"
    import yaml

    data = small_scenario(rate_per_s=12.0, strategies=[HPA]).model_dump(mode="json")
    scenario.write_text(yaml.safe_dump(data))
    out = tmp_path / "decisions.jsonl"
    result = CliRunner().invoke(cli, ["simulate", str(scenario), "--format", "json",
                                      "--decisions", str(out)])
    assert result.exit_code == 0, result.output
    lines = out.read_text().splitlines()
    assert lines
    first = json.loads(lines[0])
    assert set(first) == {"run", "time_s", "layer", "controller", "decision", "reason", "inputs"}
    assert first["run"] == "hpa-queue"
    again = CliRunner().invoke(cli, ["simulate", str(scenario), "--decisions", str(out)])
    assert again.exit_code == 2 and "exists" in again.output  # never overwritten silently
