"""A shape whose SLO no fleet reaches gets the same analysis as a trace (issue 27, "When the SLO
cannot be met"): the reachable attainment, the cheapest fleet within 0.1 point of it, and the
changes that would reach the SLO, each simulated; one line, exit 2."""

from __future__ import annotations

import pytest
import yaml
from click.testing import CliRunner

from gpuscale.cli import cli
from gpuscale.plan.unreachable import CLOSE_FRAC

from .shape_input import shape_input

# 22 ms a token: an L40S at BF16 decodes this 8B model's bursts at ~24 ms, an L4 slower
INPUT = shape_input("tight", ["g6.2xlarge", "g6e.2xlarge"], 3, (3.0, 0.022, 0.99),
                    swing=0.3, max_candidates=4)


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tight")
    source = tmp / "input.yaml"
    source.write_text(yaml.safe_dump(INPUT))
    out = tmp / "plan"
    result = CliRunner().invoke(cli, ["plan", str(source), "--out", str(out)])
    return result, source, out


def _evidence(text: str) -> dict[str, list[str]]:
    """plan.md's evidence rows by candidate: the cells of each."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 10 and cells[0] != "candidate":
            rows[cells[0]] = cells
    return rows


def test_one_line_exit_2_naming_the_file_and_what_would_reach_it(planned):
    result, source, _ = planned
    assert result.exit_code == 2, result.output
    line = result.output.strip().splitlines()[-1]
    assert line.startswith(f"gpuscale: error: {source}: slo: the SLO")
    assert "not reachable" in line and "at most" in line and "(simulated on its burst)" in line
    assert "what would reach it: FP8 weights and KV cache" in line


def test_plan_md_has_the_reachable_fleet_and_each_change_simulated(planned):
    _, _, out = planned
    text = (out / "plan.md").read_text()
    rows = _evidence(text)
    fleets = [r for name, r in rows.items() if ", fixed " in name]
    assert fleets and all(r[8] == "no" for r in fleets)  # no fleet up to the limit meets it
    best = max(float(r[4]) for r in fleets)
    close = next(r for r in rows.values() if r[9] == "cheapest within 0.1 point of the reachable")
    assert float(close[4]) > 0 and float(close[4]) >= best - CLOSE_FRAC
    # the changes, each simulated: the precision, another GPU the input allows, the SLO the
    # reachable fleet meets
    assert rows["FP8 weights and KV cache"][8] == "yes"
    assert any(name.startswith("L4 (g6.2xlarge") for name in rows)
    reachable_slo = next(r for name, r in rows.items() if name.startswith("the SLO TTFT <="))
    assert reachable_slo[8] == "yes"
    # the decision says the same, with the figures; the old report ("SLO not met") is gone
    assert "| chat: SLO not reachable |" in text and "FP8 weights and KV cache: 100.00% " \
        "(reaches the SLO)" in text
    assert "chat: SLO not met" not in text


def test_the_plan_is_that_fleet_always_on_and_costs_what_it_runs(planned):
    _, _, out = planned
    text = (out / "plan.md").read_text()
    close = next(r for r in _evidence(text).values()
                 if r[9] == "cheapest within 0.1 point of the reachable")
    n = int(close[1])
    scenario = yaml.safe_load((out / "scenarios" / "chat.yaml").read_text())
    keda = scenario["strategies"][0]["autoscaler"]
    assert keda["min_replica_count"] == keda["max_replica_count"] == n
    # one GPU a node (g6e.2xlarge), always on: n x 24 GPU-hours a day
    cost_row = next(ln for ln in text.splitlines() if ln.startswith("| chat | "))
    assert f"| {24.0 * n:.1f} |" in cost_row
