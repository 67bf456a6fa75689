"""Shared body of `simulate`, `compare` and `demo`: run, show progress, print, write JSON."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from gpuscale.cli.io import check_output_path
from gpuscale.engine import simulate_scenario
from gpuscale.errors import UserInputError
from gpuscale.report.terminal import make_console, print_summary
from gpuscale.report.timeline import result_json_text
from gpuscale.scenario.models import Scenario

FORMATS = click.Choice(["table", "json"])


def report_options(fn):
    """`--series` and `--report FILE`, shared by simulate, compare and demo."""
    fn = click.option("--report", "report", type=click.Path(path_type=Path), default=None,
                      help="Also write the HTML report (timelines, CDFs, cost vs SLO) here.")(fn)
    return click.option("--series", is_flag=True,
                        help="Add each run's time series to the JSON (implied by --report).")(fn)


def _looks_like_our_output(path: Path) -> bool:
    from gpuscale.inputs import load_json

    try:
        data = load_json(path)
    except UserInputError:
        return False
    return isinstance(data, dict) and {"scenario", "seed", "runs"} <= set(data)


def check_result_path(path: Path, *, force: bool, overwrite_own: bool = False) -> None:
    """Refuse to replace a file unless --force (or it is a previous gpuscale result, for demo)."""
    own = overwrite_own and path.is_file() and _looks_like_our_output(path)
    check_output_path(path, force=force or own)


def write_result(path: Path, text: str, *, force: bool, overwrite_own: bool = False) -> None:
    from gpuscale.outputs import write_atomic

    check_result_path(path, force=force, overwrite_own=overwrite_own)
    write_atomic(path, text)


def run_and_report(scenario: Scenario, base_dir: Path, *, strategies: list[str] | None,
                   fmt: str, out: Path | None, force: bool, overwrite_own: bool = False,
                   series: bool = False, report: Path | None = None) -> dict:
    # Check every output path before the (possibly long) run, so a typo costs nothing and
    # no file is half-written when a later one is refused.
    if out is not None:
        check_result_path(out, force=force, overwrite_own=overwrite_own)
    if report is not None:
        check_result_path(report, force=force)
    console = make_console(stderr=True)
    show_progress = sys.stderr.isatty() and fmt == "table"
    if show_progress:
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        bar = Progress(TextColumn("{task.description}"), BarColumn(), TimeRemainingColumn(),
                       console=console, transient=True)
        names = [s.name for s in scenario.strategies if not strategies or s.name in strategies]
        tasks = [bar.add_task(name, total=1.0) for name in names]

        def progress(index: int, count: int, frac: float) -> None:
            bar.update(tasks[index], completed=frac)

        with bar:
            result, walls = simulate_scenario(scenario, base_dir, strategies=strategies,
                                              progress=progress, clock=time.perf_counter)
    else:
        result, walls = simulate_scenario(scenario, base_dir, strategies=strategies,
                                          clock=time.perf_counter)
    data = result.to_json(walls)
    if series or report is not None:
        from gpuscale.report.timeline import attach_series

        data = attach_series(data, result)
    text = result_json_text(data)
    if out is not None:
        write_result(out, text, force=force, overwrite_own=overwrite_own)
    if report is not None:
        from gpuscale.report.html import ReportInputs, render_html

        html = render_html(ReportInputs(results=[data], title=f"gpuscale: {scenario.name}"))
        write_result(report, html, force=force)
    if fmt == "json":
        click.echo(text, nl=False)
    else:
        print_summary(data)
        if out is not None:
            click.echo(f"JSON summary written to {out}")
        if report is not None:
            click.echo(f"HTML report written to {report}")
    return data
