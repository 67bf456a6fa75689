"""`gpuscale calibrate`: run the calibration rows and print measured vs predicted."""

from __future__ import annotations

import json
from pathlib import Path

import click

from gpuscale.calibration import calibrate
from gpuscale.calibration.rows import data_row_checks
from gpuscale.calibration.user_rows import load_rows
from gpuscale.cli.calibrate_fit import fit_options, run_fit
from gpuscale.cli.catalog_option import catalog_option
from gpuscale.cli.options import json_text_as, output_option
from gpuscale.errors import GpuscaleError


def _status(check) -> str:
    if check.passed:
        return "pass*" if check.input_note else "pass"
    return "known miss" if check.known_miss else "FAIL"


def as_json(checks) -> dict:
    """{"rows": [{"row": ID, "checks": [...]}]}, rows in the order they ran (issue 14)."""
    rows: dict[str, list[dict]] = {}
    for c in checks:
        rows.setdefault(c.row, []).append(c.as_check())
    return {"rows": [{"row": row, "checks": entries} for row, entries in rows.items()]}


@click.command()
@catalog_option
@click.option("--row", "rows", multiple=True, help="Only these rows (e.g. A6, A15); repeatable.")
@click.option("--rows", "rows_file", type=click.Path(path_type=Path), default=None,
              help="Run the rows of this YAML file (docs/calibration.md gives the format) "
                   "instead of the built-in ones.")
@output_option()
@fit_options
def command(rows: tuple[str, ...], rows_file: Path | None, fmt: str, **fit_args) -> None:
    """Reproduce the published measurements of calibration.md with the model (or --fit yours)."""
    if fit_args["fit_file"] is not None:
        return run_fit(fmt=fmt, **fit_args)
    if rows_file is not None:
        user = load_rows(rows_file)
        wanted = {r.strip() for r in rows}
        checks = data_row_checks([r for r in user if not wanted or r.id in wanted])
    else:
        checks = calibrate(list(rows) or None)
    if fmt in ("json", "yaml"):
        click.echo(json_text_as(fmt, json.dumps(as_json(checks), indent=2)))
    else:
        width = max([15, *(len(c.row) for c in checks)])  # user rows may have long ids
        header = f"{'row':{width}} {'check':46} {'measured':>11} {'predicted':>11} " \
                 f"{'error':>8} {'tol':>6}  result"
        click.echo(header)
        for c in checks:
            click.echo(f"{c.row:{width}} {c.label:46} {c.measured:>11.4g} {c.predicted:>11.4g} "
                       f"{c.error_frac:>+8.1%} {c.tolerance_frac:>6.0%}  {_status(c)}")
        notes: dict[str, list[str]] = {}
        for c in checks:
            if c.input_note:
                notes.setdefault(c.input_note, []).append(f"{c.row} {c.label}")
        for note, labels in notes.items():
            click.echo(f"\n* {'; '.join(labels)}, input read as: {note}")
        misses: dict[str, list[str]] = {}
        for c in checks:
            if not c.passed and c.known_miss:
                misses.setdefault(c.known_miss, []).append(f"{c.row} {c.label}")
        for reason, labels in misses.items():
            click.echo(f"\n{'; '.join(labels)}: {reason}")
    failed = [c for c in checks if not c.passed and not c.known_miss]
    if failed:
        raise GpuscaleError(f"{len(failed)} calibration check(s) outside tolerance: "
                            + ", ".join(f"{c.row} {c.label}" for c in failed))
