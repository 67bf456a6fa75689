"""`gpuscale simulate SCENARIO`: run one scenario (all its strategies, or those named)."""

from __future__ import annotations

from pathlib import Path

import click

from gpuscale.cli.options import input_path
from gpuscale.cli.run_common import report_options, run_and_report, run_options
from gpuscale.scenario import load_scenario


@click.command("simulate")
@click.argument("scenario_file", type=click.Path(path_type=Path))
@click.option("--seed", type=click.IntRange(min=0), default=None, help="Override the scenario's seed.")
@click.option("--strategy", "strategies", multiple=True, help="Run only this strategy (repeatable).")
@run_options
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Write the JSON summary here.")
@report_options
@click.option("--force", is_flag=True, help="Overwrite --out if it exists.")
def command(scenario_file: Path, seed: int | None, strategies: tuple[str, ...], fmt: str,
            out: Path | None, force: bool, series: bool, report: Path | None, wide: bool,
            seeds: int, fail_under: float | None, decisions: Path | None) -> None:
    """Simulate SCENARIO_FILE (- for stdin) and print SLO attainment, goodput, GPU-hours and
    cost."""
    scenario_file = input_path(scenario_file)
    scenario = load_scenario(scenario_file)
    if seed is not None:
        scenario = scenario.model_copy(update={"seed": seed})
    run_and_report(scenario, scenario_file.parent, strategies=list(strategies) or None, fmt=fmt,
                   out=out, force=force, series=series, report=report, wide=wide, seeds=seeds,
                   fail_under=fail_under, decisions=decisions, verdict_line=len(scenario.strategies) > 1 and not strategies)
