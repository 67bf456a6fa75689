"""Shared body of `simulate`, `compare` and `demo`: run, show progress, print, write JSON."""

from __future__ import annotations

import json
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from gpuscale.cli.io import OutputFile, check_output_path, is_stream
from gpuscale.cli.metrics_out import check_metrics_path, write_metrics
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


def overridden(scenario: Scenario, *, seed: int | None, start_time) -> Scenario:
    """The scenario with the command line's `--seed` and `--start-time`, when given."""
    update = {k: v for k, v in (("seed", seed), ("start_time", start_time)) if v is not None}
    return scenario.model_copy(update=update) if update else scenario


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


@dataclass(frozen=True)
class RunUnit:
    """One scenario a command runs: a scenario file's, or one imported manifest bundle's
    (`imported`: its sources, defaults and notes, which every run's JSON carries). Several
    units (`compare --manifests A --manifests B`) run on the same trace and join into one
    result, so the verdict, gates, seeds and outputs are the same code for both modes."""

    scenario: Scenario
    base_dir: Path
    strategies: list[str] | None = None
    imported: dict | None = None
    source: str = "<scenario>"  # the scenario's file, named by errors found at run time


@dataclass
class CommandSection:
    """A command's own part of a result, made from the first seed's runs (a backtest's
    agreement with its history): JSON under `key`, lines printed after the table, and the
    report's section (a `report.html.ExtraSection`)."""

    key: str
    data: dict
    lines: list[str] = field(default_factory=list)
    report: Any = None


# Called with the first seed's run results (every unit's, in order); the runs keep their
# series (`RunResult.prometheus`) for it.
SectionMaker = Callable[[list[Any]], CommandSection]


def scenario_units(scenario_file: Path | None, trace: Path | None, emit: Path | None,
                   seed: int | None, strategies: list[str] | None = None,
                   start_time=None) -> list[RunUnit]:
    """The one unit of a scenario file (`-`: stdin), with `--seed` and `--start-time`
    applied."""
    from gpuscale.cli.options import scenario_file_argument
    from gpuscale.scenario import load_scenario

    path = scenario_file_argument(scenario_file, trace, emit)
    scenario = overridden(load_scenario(path), seed=seed, start_time=start_time)
    return [RunUnit(scenario, path.parent, strategies, source=str(path))]


def run_and_report(units: Sequence[RunUnit], *, fmt: str, out: Path | None, force: bool,
                   overwrite_own: bool = False, series: bool = False,
                   report: Path | None = None, wide: bool = False, seeds: int = 1,
                   fail_under: float | None = None, verdict_line: bool = True,
                   decisions: Path | None = None, metrics_out: Path | None = None,
                   footer: Sequence[str] = (), section: SectionMaker | None = None) -> dict:
    """Run (once per seed), print the table and the verdict, write the outputs; exit 1
    under `fail_under`. `metrics_out` gets the first seed's series (OpenMetrics); `footer`:
    lines printed after the table (e.g. what an import read); `section`: the command's own
    part, from the first seed's runs (in the JSON, after the footer, in the report)."""
    from gpuscale.metrics.oracle import SLO_ATTAINMENT_TARGET
    from gpuscale.report.verdict import failing_gate, spread, verdict

    units = _checked_units(units, seeds)
    if out is not None and str(out) == "-":  # `--out -`: the JSON is the output
        fmt, out = ("yaml" if fmt == "yaml" else "json"), None
    _check_output_paths(out, report, decisions, metrics_out, force=force,
                        overwrite_own=overwrite_own)
    seeded = [_run_seed(units, offset, fmt=fmt, force=force, series=series and offset == 0,
                        report=report if offset == 0 else None,
                        decisions=decisions if offset == 0 else None,
                        metrics_out=metrics_out if offset == 0 else None,
                        section=section if offset == 0 else None)
              for offset in range(seeds)]
    results = [data for data, _ in seeded]
    data, section_lines = seeded[0]
    slo = {"ttft_s": units[0].scenario.slo.ttft_s, "tpot_s": units[0].scenario.slo.tpot_s}
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
    _print_result(data, text, fmt=fmt, out=out, report=report, wide=wide,
                  footer=[*footer, *section_lines])
    if decisions is not None and fmt == "table":
        click.echo(f"decision log written to {decisions}")
    if metrics_out is not None and fmt == "table" and not is_stream(metrics_out):
        click.echo(f"series written to {metrics_out} (OpenMetrics; docs/promql.md)")
    if seeds > 1 and fmt == "table":
        print_spread(data)
    if fmt == "table":
        _print_notes_and_verdict(units, line)
    if fail_under is not None and (gate := failing_gate(results, fail_under)) is not None:
        click.echo(f"gpuscale: {gate}", err=True)
        click.get_current_context().exit(1)
    return data


def _check_output_paths(out: Path | None, report: Path | None, decisions: Path | None,
                        metrics_out: Path | None, *, force: bool, overwrite_own: bool) -> None:
    """Check every output path before the (possibly long) runs, so a typo costs nothing and
    no file is half-written when a later one is refused; each is written once its data
    exists."""
    if out is not None:
        check_result_path(out, force=force, overwrite_own=overwrite_own)
    if report is not None:
        check_result_path(report, force=force)
    if decisions is not None:
        check_output_path(decisions, force=force)
    check_metrics_path(metrics_out, force=force)


def _print_notes_and_verdict(units: Sequence[RunUnit], line: str | None) -> None:
    """Under the table: the scenarios' own readings of it, then the verdict."""
    notes = dict.fromkeys(n for unit in units for n in unit.scenario.notes)
    for note in notes:
        click.echo(textwrap.fill(note, width=98, initial_indent="- ",
                                 subsequent_indent="  ", break_on_hyphens=False))
    if line:
        click.echo(textwrap.fill(line, width=98, subsequent_indent="  ", break_on_hyphens=False))


def _checked_units(units: Sequence[RunUnit], seeds: int) -> list[RunUnit]:
    """Each unit's `--strategy` names once each (a repeated name ran twice), and the runs
    `--seeds` starts over every unit bounded before any runs (workloads/limits.py)."""
    from dataclasses import replace

    from gpuscale.workloads.limits import check_runs, planned_load

    checked = [replace(unit, strategies=_chosen_strategies(unit.scenario, unit.strategies))
               for unit in units]
    for unit in checked:
        _check_last_seed(unit.scenario, seeds)
    counts = [len(u.strategies) if u.strategies else len(u.scenario.strategies) for u in checked]
    runs = seeds * sum(counts)
    requests = seeds * sum(count * planned_load(unit.scenario.workload)[0]
                           for count, unit in zip(counts, checked, strict=True))
    check_runs(f"--seeds {seeds} x {sum(counts)} strategies", runs, requests / max(runs, 1))
    return checked


def _chosen_strategies(scenario: Scenario, strategies: list[str] | None) -> list[str] | None:
    """`--strategy` names once each, in the order given (a repeated name ran twice)."""
    if not strategies:
        return None
    for name in strategies:
        if not name.strip():
            raise UserInputError("--strategy: an empty name; known: "
                                 f"{', '.join(s.name for s in scenario.strategies)}")
    return list(dict.fromkeys(strategies))


def _check_last_seed(scenario: Scenario, seeds: int) -> None:
    """`--seeds`' last seed within 64 bits: a seed past it was echoed back, not run."""
    from gpuscale.workloads.limits import MAX_SEED

    last = scenario.seed + seeds - 1
    if last > MAX_SEED:
        raise UserInputError(f"seeds {scenario.seed}..{last} pass the 64-bit range "
                             f"(at most {MAX_SEED})", field="--seed")


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
                  wide: bool, footer: Sequence[str] = ()) -> None:
    if fmt in ("json", "yaml"):
        from gpuscale.cli.options import json_text_as

        click.echo(json_text_as(fmt, text), nl=False)
        return
    # rich (the table) only for table output: `-o json` does not pay for its import.
    from gpuscale.importer.resolved import resolved_text
    from gpuscale.report.terminal import print_summary

    print_summary(data, wide=wide)
    from gpuscale.outputs import terminal_safe

    for run in data["runs"]:  # what was simulated, a run each (issue 15), within 100 columns
        click.echo(resolved_text(run))
    for line in footer:
        click.echo(terminal_safe(line))
    if out is not None and not is_stream(out):
        click.echo(f"JSON summary written to {out}")
    if report is not None:
        click.echo(f"HTML report written to {report}")


def _run_seed(units: Sequence[RunUnit], offset: int, *, fmt: str, force: bool,
              series: bool = False, report: Path | None = None,
              decisions: Path | None = None, metrics_out: Path | None = None,
              section: SectionMaker | None = None) -> tuple[dict, list[str]]:
    """Every unit at its seed + `offset`, joined as one result JSON (with the command's
    section; its lines returned beside), with the report, the decision log and the series
    written; the result file, the table and the verdict are run_and_report's (they need
    every seed)."""
    parts, records, runs = [], [], []
    for unit in units:
        scenario = unit.scenario
        if offset:
            scenario = scenario.model_copy(update={"seed": scenario.seed + offset})
        part, result = _run_unit(scenario, unit, fmt=fmt, log=decisions is not None,
                                 export=metrics_out is not None or section is not None)
        runs += result.runs
        if series or report is not None:
            from gpuscale.report.timeline import attach_series

            part = attach_series(part, result)
        if unit.imported is not None:
            for run in part["runs"]:
                run["imported"] = unit.imported
        parts.append(part)
        records += [record for run in result.runs for record in run.decisions]
    data = parts[0]
    if len(parts) > 1:
        head = {k: v for k, v in parts[0].items() if k != "runs"}  # e.g. a format version
        data = dict(head, scenario=" vs ".join(p["scenario"] for p in parts),
                    runs=[run for p in parts for run in p["runs"]])
    made = section(runs) if section is not None else None
    if made is not None:
        data = dict(data, **{made.key: made.data})
    if report is not None:
        from gpuscale.report.html import ReportInputs, render_html

        extra = [made.report] if made is not None and made.report is not None else []
        html = render_html(ReportInputs(results=[data], title=f"gpuscale: {data['scenario']}",
                                        sections=extra))
        write_result(report, html, force=force)
    if decisions is not None:
        write_result(decisions, "".join(json.dumps(r) + "\n" for r in records), force=force)
    if metrics_out is not None:
        write_metrics(metrics_out, runs, force=force)
    return data, made.lines if made is not None else []


def _run_unit(scenario: Scenario, unit: RunUnit, *, fmt: str, log: bool,
              export: bool = False) -> tuple[dict, Any]:
    """One scenario's runs (with a progress bar on a terminal) as result JSON and result."""
    show_progress = sys.stderr.isatty() and fmt == "table"
    if show_progress:
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        from gpuscale.report.terminal import make_console

        bar = Progress(TextColumn("{task.description}"), BarColumn(), TimeRemainingColumn(),
                       console=make_console(stderr=True), transient=True)
        names = [s.name for s in scenario.strategies
                 if not unit.strategies or s.name in unit.strategies]
        tasks = [bar.add_task(name, total=1.0) for name in names]

        def progress(index: int, count: int, frac: float) -> None:
            bar.update(tasks[index], completed=frac)

        with bar:
            result, walls = simulate_scenario(scenario, unit.base_dir, strategies=unit.strategies,
                                              progress=progress, clock=time.perf_counter,
                                              decisions=log, export_series=export,
                                              source=unit.source)
    else:
        result, walls = simulate_scenario(scenario, unit.base_dir, strategies=unit.strategies,
                                          clock=time.perf_counter, decisions=log,
                                          export_series=export, source=unit.source)
    from gpuscale.importer.resolved import attach_resolved

    return attach_resolved(result.to_json(walls), result.scenario, result.clock_source), result
