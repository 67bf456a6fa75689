"""`gpuscale simulate SCENARIO`: run one scenario (all its strategies, or those named).

`gpuscale simulate --manifests PATH|- --trace FILE` imports the user's own manifests instead
(importer/), optionally writing the equivalent scenario with `--emit-scenario FILE`.
"""

from __future__ import annotations

from pathlib import Path

import click

from gpuscale.cli.catalog_option import catalog_option
from gpuscale.cli.metrics_out import metrics_options
from gpuscale.cli.run_common import report_options, run_and_report, run_options, scenario_units


def manifest_options(fn):
    fn = click.option("--emit-scenario", "emit", type=click.Path(path_type=Path), default=None,
                      help="With --manifests: also write the equivalent scenario YAML here.")(fn)
    fn = click.option("--trace", type=click.Path(path_type=Path), default=None,
                      help="With --manifests: requests to replay (generic CSV, Azure, "
                           "BurstGPT or Mooncake; detected).")(fn)
    return fn


@click.command("simulate")
@click.argument("scenario_file", type=click.Path(path_type=Path), required=False)
@click.option("--manifests", "manifests", default=None,
              help="Kubernetes manifests (file, directory or - for stdin) to simulate instead "
                   "of a scenario file.")
@manifest_options
@catalog_option
@click.option(
    "--seed", type=click.IntRange(min=0), default=None, help="Override the scenario's seed."
)
@click.option(
    "--strategy", "strategies", multiple=True, help="Run only this strategy (repeatable)."
)
@run_options
@click.option(
    "--out", type=click.Path(path_type=Path), default=None, help="Write the JSON summary here."
)
@report_options
@metrics_options
@click.option("--force", is_flag=True, help="Overwrite --out if it exists.")
def command(scenario_file: Path | None, manifests: str | None, trace: Path | None,
            emit: Path | None, seed: int | None, strategies: tuple[str, ...], fmt: str,
            out: Path | None, force: bool, series: bool, report: Path | None, wide: bool,
            seeds: int, fail_under: float | None, decisions: Path | None,
            metrics_out: Path | None, start_time) -> None:
    """Simulate SCENARIO_FILE (- for stdin; or --manifests) and print SLO attainment, goodput,
    GPU-hours and cost."""
    picked = list(strategies) or None
    if manifests is not None:
        if scenario_file is not None:
            raise click.UsageError("give a SCENARIO_FILE or --manifests, not both")
        from gpuscale.cli.manifests_run import emit_scenario, manifest_units

        imported, units, footer = manifest_units((manifests,), trace, seed, picked,
                                                 start_time)
        if emit is not None:
            emit_scenario(emit, imported[0].data, force=force)
    else:
        units = scenario_units(scenario_file, trace, emit, seed, picked, start_time)
        footer = []
    # One code path for both modes: the same verdict rule, gates, seeds and outputs.
    run_and_report(units, fmt=fmt, out=out, force=force, series=series, report=report,
                   wide=wide, seeds=seeds, fail_under=fail_under, decisions=decisions,
                   verdict_line=len(units[0].scenario.strategies) > 1 and not strategies,
                   metrics_out=metrics_out, footer=footer)
