from pathlib import Path

from gpuscale.scenario.docs import render

DOC = Path(__file__).resolve().parents[2] / "docs" / "scenario.md"


def test_scenario_reference_is_generated_from_the_schema():
    assert DOC.read_text() == render(), (
        "docs/scenario.md is stale: run `python -m gpuscale.scenario.docs docs/scenario.md`")
