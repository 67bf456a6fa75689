"""`gpuscale compare SCENARIO`: every strategy of the scenario on the same workload.

`gpuscale compare --manifests TODAY --manifests PROPOSED --trace FILE` compares two manifest
bundles (today's setup and a pull request's) on one trace.
"""

from __future__ import annotations

from pathlib import Path

import click

from gpuscale.cli.catalog_option import catalog_option
from gpuscale.cli.metrics_out import metrics_options
from gpuscale.cli.run_common import report_options, run_and_report, run_options, scenario_units
from gpuscale.cli.simulate import manifest_options


@click.command("compare")
@click.argument("scenario_file", type=click.Path(path_type=Path), required=False)
@click.option("--manifests", "manifests", multiple=True,
              help="A manifest bundle (file, directory or -); give it twice to compare two.")
@manifest_options
@catalog_option
@click.option(
    "--seed", type=click.IntRange(min=0), default=None, help="Override the scenario's seed."
)
@run_options
@click.option(
    "--out", type=click.Path(path_type=Path), default=None, help="Write the JSON summary here."
)
@report_options
@metrics_options
@click.option("--force", is_flag=True, help="Overwrite --out if it exists.")
def command(scenario_file: Path | None, manifests: tuple[str, ...], trace: Path | None,
            emit: Path | None, seed: int | None, fmt: str, out: Path | None, force: bool,
            series: bool, report: Path | None, wide: bool, seeds: int,
            fail_under: float | None, decisions: Path | None, metrics_out: Path | None,
            start_time) -> None:
    """Run every strategy in SCENARIO_FILE (- for stdin; or each --manifests bundle) on one
    workload draw and compare them; the last line is the verdict (the cheapest strategy that
    meets the SLO)."""
    if manifests:
        if scenario_file is not None:
            raise click.UsageError("give a SCENARIO_FILE or --manifests, not both")
        if emit is not None:
            raise click.UsageError("--emit-scenario goes with `simulate --manifests` (one bundle)")
        if "-" in manifests and len(manifests) > 1:
            raise click.UsageError("stdin (-) can hold only one of the bundles compared")
        from gpuscale.cli.manifests_run import manifest_units

        _, units, footer = manifest_units(manifests, trace, seed, start_time=start_time)
    else:
        units = scenario_units(scenario_file, trace, emit, seed, start_time=start_time)
        footer = []
    # One code path for both modes: the same verdict, gates, seeds and outputs.
    run_and_report(units, fmt=fmt, out=out, force=force, series=series, report=report,
                   wide=wide, seeds=seeds, fail_under=fail_under, decisions=decisions,
                   metrics_out=metrics_out, footer=footer)
