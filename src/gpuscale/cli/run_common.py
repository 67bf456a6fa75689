"""Shared body of `simulate`, `compare` and `demo`: run, show progress, print, write JSON."""

from __future__ import annotations

import json
import sys
import textwrap
import time
from pathlib import Path

import click

from gpuscale.cli.io import OutputFile, check_output_path, is_stream
from gpuscale.cli.options import output_option
from gpuscale.errors import UserInputError
from gpuscale.report.timeline import result_json_text
from gpuscale.scenario.models import Scenario
from gpuscale.sim import simulate_scenario
from gpuscale.workloads.limits import MAX_RUNS


def run_options(fn):
    """`-o/--output/--format`, `--wide`, `--seeds N` and `--fail-under-slo X`."""
    fn = click.option("--fail-under-slo", "fail_under", type=SloFraction(), default=None,
                      help="Exit 1 when no strategy reaches this SLO attainment on every seed "
                           "(0.99 or 99).")(fn)
    fn = click.option("--seeds", type=click.IntRange(min=1, max=MAX_RUNS), default=1,
                      show_default=True,
                      help="Run seeds SEED..SEED+N-1 and show the spread.")(fn)
    fn = click.option("--wide", is_flag=True, help="One table with every column.")(fn)
    return output_option()(fn)


class SloFraction(click.ParamType):
    """An attainment threshold given as a fraction (0.99) or a percentage (99)."""

    name = "attainment"

    def convert(self, value, param, ctx):
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number (expected 0.99 or 99)", param, ctx)
        frac = number / 100.0 if number > 1 else number
        if not 0 < frac <= 1:
            self.fail(f"{value!r} is outside 0..100 %", param, ctx)
        return frac


def report_options(fn):
    """`--series`, `--report FILE` and `--decisions FILE`, shared by simulate, compare, demo."""
    fn = click.option("--decisions", "decisions", type=OutputFile(), default=None,
                      help="Also write every controller decision (time, inputs, reason) here, "
                           "one JSON object per line (docs/decision-log.md).")(fn)
    fn = click.option("--report", "report", type=OutputFile(), default=None,
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
    if str(path) == "-":
        click.echo(text, nl=False)
    else:
        write_atomic(path, text)  # devices (/dev/null) in place, files via temp + rename


def run_and_report(scenario: Scenario, base_dir: Path, *, strategies: list[str] | None,
                   fmt: str, out: Path | None, force: bool, overwrite_own: bool = False,
                   series: bool = False, report: Path | None = None, wide: bool = False,
                   seeds: int = 1, fail_under: float | None = None,
                   verdict_line: bool = True, decisions: Path | None = None) -> dict:
    """Run (once per seed), print the table and the verdict, write the outputs; exit 1
    under `fail_under`."""
    from gpuscale.metrics.oracle import SLO_ATTAINMENT_TARGET
    from gpuscale.report.verdict import failing_gate, spread, verdict

    strategies = _chosen_strategies(scenario, strategies)
    _check_seeds(scenario, strategies, seeds)
    if out is not None and str(out) == "-":  # `--out -`: the JSON is the output
        fmt, out = ("yaml" if fmt == "yaml" else "json"), None
    if out is not None:  # before the (possibly long) runs; written once the verdict is known
        check_result_path(out, force=force, overwrite_own=overwrite_own)
    data = _run_one(scenario, base_dir, strategies=strategies, fmt=fmt, force=force,
                    series=series, report=report, decisions=decisions)
    results = [data] + [
        _run_one(scenario.model_copy(update={"seed": scenario.seed + i}), base_dir,
                 strategies=strategies, fmt=fmt, force=force)
        for i in range(1, seeds)]
    slo = {"ttft_s": scenario.slo.ttft_s, "tpot_s": scenario.slo.tpot_s}
    target = fail_under if fail_under is not None else SLO_ATTAINMENT_TARGET
    line = verdict(results, slo, target) if data["runs"] and verdict_line else None
    if line:
        data = dict(data, verdict=line)  # CI reads it too: `-o json | jq -r .verdict`
    if seeds > 1:
        data = dict(data, seeds=[r["seed"] for r in results], spread=spread(results),
                    by_seed=[r["runs"] for r in results])
    text = result_json_text(data)
    if out is not None:
        write_result(out, text, force=force, overwrite_own=overwrite_own)
    _print_result(data, text, fmt=fmt, out=out, report=report, wide=wide)
    if decisions is not None and fmt == "table":
        click.echo(f"decision log written to {decisions}")
    if seeds > 1 and fmt == "table":
        print_spread(data)
    if fmt == "table":
        for note in scenario.notes:  # the scenario's own reading of the table
            click.echo(textwrap.fill(note, width=98, initial_indent="- ",
                                     subsequent_indent="  ", break_on_hyphens=False))
        if line:
            click.echo(
                textwrap.fill(line, width=98, subsequent_indent="  ", break_on_hyphens=False)
            )
    if fail_under is not None and (gate := failing_gate(results, fail_under)) is not None:
        click.echo(f"gpuscale: {gate}", err=True)
        click.get_current_context().exit(1)
    return data


def _chosen_strategies(scenario: Scenario, strategies: list[str] | None) -> list[str] | None:
    """`--strategy` names once each, in the order given (a repeated name ran twice)."""
    if not strategies:
        return None
    for name in strategies:
        if not name.strip():
            raise UserInputError("--strategy: an empty name; known: "
                                 f"{', '.join(s.name for s in scenario.strategies)}")
    return list(dict.fromkeys(strategies))


def _check_seeds(scenario: Scenario, strategies: list[str] | None, seeds: int) -> None:
    """The runs `--seeds` starts, and its last seed, bounded before any runs
    (workloads/limits.py): 10^9 seeds ran for days; a seed past 64 bits was echoed back."""
    from gpuscale.workloads.limits import MAX_SEED, check_runs, planned_load

    last = scenario.seed + seeds - 1
    if last > MAX_SEED:
        raise UserInputError(f"seeds {scenario.seed}..{last} pass the 64-bit range "
                             f"(at most {MAX_SEED})", field="--seed")
    count = len(strategies) if strategies else len(scenario.strategies)
    check_runs(f"--seeds {seeds} x {count} strategies", seeds * count,
               planned_load(scenario.workload)[0])


def print_spread(data: dict) -> None:
    """Per strategy over the seeds: attainment min/mean/max, cost mean, worst TTFT p99."""
    from rich.table import Table

    from gpuscale.report.terminal import PLAIN_BOX, make_console, ttft_text

    seeds = data["seeds"]
    table = Table(title=f"spread over seeds {seeds[0]}..{seeds[-1]}", title_justify="left",
                  box=PLAIN_BOX, pad_edge=False, show_edge=False)
    for header in ("strategy", "SLO min", "SLO mean", "SLO max", "cost $ mean", "TTFT p99 worst"):
        table.add_column(header, justify="left" if header == "strategy" else "right",
                         no_wrap=True)
    for row in data["spread"]:
        slo = row["slo_attainment"]
        table.add_row(row["name"], *(f"{100 * slo[k]:.1f}%" for k in ("min", "mean", "max")),
                      f"{row['cost_usd']['mean']:.2f}", ttft_text(row["ttft_p99_worst_s"], 1))
    make_console().print(table)


def _print_result(data: dict, text: str, *, fmt: str, out: Path | None, report: Path | None,
                  wide: bool) -> None:
    if fmt in ("json", "yaml"):
        from gpuscale.cli.options import json_text_as

        click.echo(json_text_as(fmt, text), nl=False)
        return
    # rich (the table) only for table output: `-o json` does not pay for its import.
    from gpuscale.importer.resolved import resolved_text
    from gpuscale.report.terminal import print_summary

    print_summary(data, wide=wide)
    for run in data["runs"]:  # what was simulated, a run each (issue 15), within 100 columns
        click.echo(resolved_text(run))
    if out is not None and not is_stream(out):
        click.echo(f"JSON summary written to {out}")
    if report is not None:
        click.echo(f"HTML report written to {report}")


def _run_one(scenario: Scenario, base_dir: Path, *, strategies: list[str] | None,
             fmt: str, force: bool, series: bool = False, report: Path | None = None,
             decisions: Path | None = None) -> dict:
    """One seed's runs as result JSON, with the report and decision log written; the
    result file, the table and the verdict are run_and_report's (they need every seed)."""
    # Check every output path before the (possibly long) run, so a typo costs nothing and
    # no file is half-written when a later one is refused.
    if report is not None:
        check_result_path(report, force=force)
    if decisions is not None:
        check_output_path(decisions, force=force)
    log = decisions is not None
    show_progress = sys.stderr.isatty() and fmt == "table"
    if show_progress:
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        from gpuscale.report.terminal import make_console

        bar = Progress(TextColumn("{task.description}"), BarColumn(), TimeRemainingColumn(),
                       console=make_console(stderr=True), transient=True)
        names = [s.name for s in scenario.strategies if not strategies or s.name in strategies]
        tasks = [bar.add_task(name, total=1.0) for name in names]

        def progress(index: int, count: int, frac: float) -> None:
            bar.update(tasks[index], completed=frac)

        with bar:
            result, walls = simulate_scenario(scenario, base_dir, strategies=strategies,
                                              progress=progress, clock=time.perf_counter,
                                              decisions=log)
    else:
        result, walls = simulate_scenario(scenario, base_dir, strategies=strategies,
                                          clock=time.perf_counter, decisions=log)
    data = result.to_json(walls)
    from gpuscale.importer.resolved import attach_resolved

    data = attach_resolved(data, scenario)
    if series or report is not None:
        from gpuscale.report.timeline import attach_series

        data = attach_series(data, result)
    if report is not None:
        from gpuscale.report.html import ReportInputs, render_html

        html = render_html(ReportInputs(results=[data], title=f"gpuscale: {scenario.name}"))
        write_result(report, html, force=force)
    if decisions is not None:
        lines = [json.dumps(record) for run in result.runs for record in run.decisions]
        write_result(decisions, "".join(line + "\n" for line in lines), force=force)
    return data
