"""`gpuscale calibrate`: run the calibration rows and print measured vs predicted."""

from __future__ import annotations

import json

import click

from gpuscale.cli.calibrate_fit import fit_options, run_fit
from gpuscale.cli.catalog_option import catalog_option
from gpuscale.calibration import calibrate
from gpuscale.errors import GpuscaleError


def _status(check) -> str:
    if check.passed:
        return "pass*" if check.input_note else "pass"
    return "known miss" if check.known_miss else "FAIL"


@click.command()
@catalog_option
@click.option("--row", "rows", multiple=True, help="Only these rows (e.g. A6, A15); repeatable.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@fit_options
def command(rows: tuple[str, ...], fmt: str, **fit_args) -> None:
    """Reproduce the published measurements of calibration.md with the model (or --fit yours)."""
    if fit_args["fit_file"] is not None:
        return run_fit(fmt=fmt, **fit_args)
    checks = calibrate(list(rows) or None)
    if fmt == "json":
        click.echo(json.dumps([c.as_dict() for c in checks], indent=2))
    else:
        header = f"{'row':5} {'check':46} {'measured':>11} {'predicted':>11} {'error':>8} " \
                 f"{'tol':>6}  result"
        click.echo(header)
        for c in checks:
            click.echo(f"{c.row:5} {c.label:46} {c.measured:>11.4g} {c.predicted:>11.4g} "
                       f"{c.error_frac:>+8.1%} {c.tolerance_frac:>6.0%}  {_status(c)}")
        for c in checks:
            if c.input_note:
                click.echo(f"\n* {c.row} {c.label}, input read as: {c.input_note}")
        misses = [c for c in checks if not c.passed and c.known_miss]
        for c in misses:
            click.echo(f"\n{c.row} {c.label}: {c.known_miss}")
    failed = [c for c in checks if not c.passed and not c.known_miss]
    if failed:
        raise GpuscaleError(f"{len(failed)} calibration check(s) outside tolerance: "
                            + ", ".join(f"{c.row} {c.label}" for c in failed))
