"""Every example file stays valid for the command that reads it (examples must not rot)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpuscale.plan import load_plan_input
from gpuscale.scenario import load_scenario
from gpuscale.scenario.schedule import load_schedule_scenario

from .golden.regen import NOT_SCENARIOS

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
# Manifest bundles + catalogs are read by `simulate --manifests` and `backtest` (their own
# tests run them); diagnose/ is a kubectl snapshot (tests/cli/test_first_hour.py diagnoses it).
FILES = sorted(p for p in EXAMPLES.rglob("*.yaml")
               if p.name != "grid.yaml" and not NOT_SCENARIOS & set(p.parts))


def _reader(path: Path):
    if "plans" in path.relative_to(EXAMPLES).parts:
        return load_plan_input
    data = yaml.safe_load(path.read_text())
    # Scheduling-only scenarios describe jobs and queues, not a served model.
    return load_schedule_scenario if "model" not in data else load_scenario


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_example_validates(path):
    assert _reader(path)(path) is not None


def test_every_example_folder_is_covered():
    assert {p.parent.name for p in FILES} >= {
        "consolidation-trap", "midnight-spike", "pd-split", "scale-from-zero", "seven-of-eight",
        "two-teams", "gang-partial-launch", "plans", "warm-pool-sweep", "promql-triggers"}
