"""`gpuscale compare SCENARIO`: every strategy of the scenario on the same workload."""

from __future__ import annotations

from pathlib import Path

import click

from gpuscale.cli.run_common import FORMATS, report_options, run_and_report
from gpuscale.scenario import load_scenario


@click.command("compare")
@click.argument("scenario_file", type=click.Path(path_type=Path))
@click.option("--seed", type=click.IntRange(min=0), default=None, help="Override the scenario's seed.")
@click.option("--format", "fmt", type=FORMATS, default="table", show_default=True)
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Write the JSON summary here.")
@report_options
@click.option("--force", is_flag=True, help="Overwrite --out if it exists.")
def command(scenario_file: Path, seed: int | None, fmt: str, out: Path | None, force: bool,
            series: bool, report: Path | None,
            decisions: Path | None) -> None:
    """Run every strategy in SCENARIO_FILE on one workload draw and compare them."""
    scenario = load_scenario(scenario_file)
    if seed is not None:
        scenario = scenario.model_copy(update={"seed": seed})
    run_and_report(scenario, scenario_file.parent, strategies=None, fmt=fmt, out=out, force=force,
                   series=series, report=report,
                   decisions=decisions)
