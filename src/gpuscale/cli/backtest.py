"""`gpuscale backtest --manifests DIR --history EXPORT [--manifests DIR2 ...]`: the cluster's
Prometheus history as the workload (docs/backtest.md).

The traffic is rebuilt from the history (backtest/traffic.py) and written as a trace; each
bundle is imported on it as `simulate --manifests` imports one and run as `compare` runs
several; the first bundle's replay is then compared with what was recorded.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from gpuscale.cli.catalog_option import catalog_option
from gpuscale.cli.io import OutputFile
from gpuscale.cli.metrics_out import metrics_out_option
from gpuscale.cli.run_common import report_options, run_options

TRACE_NAME = "history-traffic.csv"


def _check_bundles(bundles: tuple[str, ...]) -> None:
    if not bundles:
        raise click.UsageError("backtest needs --manifests DIR (today's manifests), then any "
                               "alternatives as more --manifests")
    if "-" in bundles:
        raise click.UsageError("backtest reads each bundle twice (its labels pick the history's "
                               "series, then the import): give a file or directory, not "
                               "--manifests -")


@click.command("backtest")
@click.option("--manifests", "manifests", multiple=True,
              help="Today's manifest bundle (file or directory); more --manifests are "
                   "alternatives replayed on the same traffic.")
@click.option("--history", "history_path", type=click.Path(path_type=Path), required=True,
              help="The Prometheus history: a query_range JSON export, OpenMetrics text "
                   "(--metrics-out) or promtool's tsdb dump.")
@catalog_option
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the rebuilt traffic (and of the runs).")
@click.option("--emit-trace", "emit_trace", type=OutputFile(), default=None,
              help="Also write the rebuilt requests here (generic CSV, for --trace).")
@run_options
@click.option("--out", type=OutputFile(), default=None,
              help="Write the JSON summary here.")
@report_options
@metrics_out_option
@click.option("--force", is_flag=True, help="Overwrite output files that exist.")
def command(manifests: tuple[str, ...], history_path: Path, seed: int, emit_trace: Path | None,
            fmt: str, wide: bool, seeds: int, fail_under: float | None, out: Path | None,
            series: bool, report: Path | None, decisions: Path | None,
            metrics_out: Path | None, force: bool) -> None:
    """Replay MANIFESTS on the traffic of a Prometheus history, show how the replay agrees with
    what was recorded, and compare alternatives (more --manifests) on the same traffic."""
    from gpuscale.cli.backtest_run import run_backtest

    _check_bundles(manifests)
    if seeds > 1:
        raise click.UsageError("--seeds is not available on backtest: the traffic is rebuilt "
                               "once per --seed (run a few --seed values to see the spread)")
    with tempfile.TemporaryDirectory(prefix="gpuscale-backtest-") as folder:
        run_backtest(manifests, history_path, Path(folder) / TRACE_NAME, seed=seed,
                     emit_trace=emit_trace, fmt=fmt, wide=wide, fail_under=fail_under,
                     out=out, series=series, report=report, decisions=decisions,
                     metrics_out=metrics_out, force=force)
