"""`gpuscale report INPUT... --out report.html`: one self-contained HTML file, and chart files.

INPUT is a result JSON (from `--out`, best with `--series`), a scenario YAML (run here, all
strategies, series kept), or a sweep table (.csv/.parquet, drawn as a Pareto frontier).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import click

from gpuscale.cli.run_common import check_result_path, write_result
from gpuscale.errors import WRONG_VALUE_ERRORS, UserInputError
from gpuscale.report.export import EXPORT_FORMATS, export_charts, require_format
from gpuscale.report.html import ReportInputs, render_html, report_charts

SWEEP_SUFFIXES = (".csv", ".parquet")
SCENARIO_SUFFIXES = (".yaml", ".yml")


def _result_from_scenario(path: Path) -> dict:
    from gpuscale.report.timeline import attach_series
    from gpuscale.scenario import load_scenario
    from gpuscale.sim import simulate_scenario

    scenario = load_scenario(path)
    result, walls = simulate_scenario(scenario, path.parent, clock=time.perf_counter,
                                      source=str(path))
    return attach_series(result.to_json(walls), result)


def _read_result(path: Path) -> dict:
    from gpuscale.inputs import load_json

    data = load_json(path, what="result JSON file")
    if not (isinstance(data, dict) and isinstance(data.get("runs"), list)):
        raise UserInputError("not a gpuscale result (expected keys scenario, seed, runs)",
                             source=str(path))
    _check_drawable(path, results=[data])
    return data


def _check_drawable(
    path: Path, *, results: Sequence[dict] = (), sweep_rows: Sequence[dict] = ()
) -> None:
    """Draw one input alone once: a hand-edited or foreign file whose values the report
    cannot read (a series of strings, a cost that is a list) is bad input, named after its
    file, not a traceback from the middle of the report."""
    try:
        render_html(ReportInputs(results=list(results), sweep_rows=list(sweep_rows)))
    except WRONG_VALUE_ERRORS as exc:
        again = "`gpuscale sweep`" if sweep_rows else "`gpuscale simulate --out`"
        raise UserInputError(f"a value in it is not what gpuscale writes ({exc}); regenerate it "
                             f"with {again}", source=str(path)) from None


def load_inputs(paths: list[Path], title: str | None) -> ReportInputs:
    from gpuscale.cli.options import input_path
    from gpuscale.sweep.table import read_table

    inputs = ReportInputs()
    for path in map(input_path, paths):  # `-`: a result JSON on stdin
        suffix = path.suffix.lower()
        if suffix in SWEEP_SUFFIXES:
            rows = read_table(path)
            _check_drawable(path, sweep_rows=rows)
            inputs.sweep_rows += rows
        elif suffix in SCENARIO_SUFFIXES:
            inputs.results.append(_result_from_scenario(path))
        else:
            inputs.results.append(_read_result(path))
    names = [str(d.get("scenario")) for d in inputs.results] or ["sweep"]
    inputs.title = title or f"gpuscale: {', '.join(dict.fromkeys(names))}"
    return inputs


@click.command("report")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out", type=click.Path(path_type=Path), required=True, help="The HTML file to write."
)
@click.option("--force", is_flag=True, help="Overwrite --out (and chart files) if they exist.")
@click.option("--title", default=None, help="Page title (default: the scenario names).")
@click.option("--charts-dir", type=click.Path(path_type=Path), default=None,
              help="Also write every chart as its own file into this directory.")
@click.option("--chart-format", type=click.Choice(EXPORT_FORMATS), default="svg", show_default=True,
              help="png needs matplotlib (pip install 'gpuscale[report]').")
def command(inputs: tuple[Path, ...], out: Path, force: bool, title: str | None,
            charts_dir: Path | None, chart_format: str) -> None:
    """Draw RESULT.json, SCENARIO.yaml or SWEEP.csv/.parquet (several may be combined) into one
    offline HTML report: summary, aligned timelines, TTFT/TPOT CDFs, cost vs SLO, Pareto."""
    # Output checks first: loading a SCENARIO.yaml input simulates it, which can take minutes.
    check_result_path(out, force=force)
    if charts_dir is not None:
        require_format(chart_format)  # before the HTML is written: no half-done output
    if charts_dir is not None and charts_dir.exists() and any(charts_dir.iterdir()) and not force:
        raise UserInputError(f"{charts_dir} is not empty; pass --force to write into it")
    loaded = load_inputs(list(inputs), title)
    write_result(out, render_html(loaded), force=force)
    click.echo(f"HTML report written to {out}")
    if charts_dir is not None:
        written = export_charts(report_charts(loaded), charts_dir, chart_format)
        click.echo(f"{len(written)} {chart_format.upper()} charts written to {charts_dir}")
