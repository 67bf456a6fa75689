"""`gpuscale compare SCENARIO`: every strategy of the scenario on the same workload."""

from __future__ import annotations

from pathlib import Path

import click

from gpuscale.cli.options import input_path
from gpuscale.cli.run_common import report_options, run_and_report, run_options
from gpuscale.scenario import load_scenario


@click.command("compare")
@click.argument("scenario_file", type=click.Path(path_type=Path))
@click.option("--seed", type=click.IntRange(min=0), default=None, help="Override the scenario's seed.")
@run_options
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Write the JSON summary here.")
@report_options
@click.option("--force", is_flag=True, help="Overwrite --out if it exists.")
def command(scenario_file: Path, seed: int | None, fmt: str, out: Path | None, force: bool,
            series: bool, report: Path | None, wide: bool, seeds: int,
            fail_under: float | None, decisions: Path | None) -> None:
    """Run every strategy in SCENARIO_FILE (- for stdin) on one workload draw and compare
    them; the last line is the verdict (the cheapest strategy that meets the SLO)."""
    scenario_file = input_path(scenario_file)
    scenario = load_scenario(scenario_file)
    if seed is not None:
        scenario = scenario.model_copy(update={"seed": seed})
    run_and_report(scenario, scenario_file.parent, strategies=None, fmt=fmt, out=out, force=force,
                   series=series, report=report, wide=wide, seeds=seeds, fail_under=fail_under,
                   decisions=decisions)
