"""`gpuscale sweep SCENARIO --grid grid.yaml --out table.csv`: many runs, one row each.

Runs go to local worker processes (default) or a Ray cluster (`--backend ray`). Each finished
run is appended to the table at once; running the same command again skips what is there.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from gpuscale.cli.catalog_option import catalog_option
from gpuscale.cli.io import OutputFile
from gpuscale.cli.options import MAX_WORKERS
from gpuscale.errors import UserInputError
from gpuscale.report.terminal import make_console
from gpuscale.scenario.load import load_yaml
from gpuscale.sweep import BACKENDS, expand_grid, load_grid, run_sweep


def run_settings(row: dict) -> str:
    """A table row's grid settings as `name=value`, each path by its last part unless two
    paths share it (then in full)."""
    from gpuscale.sweep.grid import PARAM_PREFIX

    paths = [k[len(PARAM_PREFIX):] for k in row if k.startswith(PARAM_PREFIX)]
    short = {p: p.rsplit(".", 1)[-1] for p in paths}
    shown = {p: (s if list(short.values()).count(s) == 1 else p) for p, s in short.items()}
    return ", ".join(f"{shown[p]}={row[PARAM_PREFIX + p]}" for p in paths) or "(no settings)"


@click.command("sweep")
@catalog_option
@click.argument("scenario_file", type=click.Path(path_type=Path))
@click.option("--grid", "grid_file", type=click.Path(path_type=Path), required=True,
              help="grid.yaml: `parameters` (cartesian product) or `runs` (a list of overrides).")
@click.option("--out", type=OutputFile(), required=True,
              help="Results table, .csv or .parquet; an existing one is resumed.")
@click.option("--backend", type=click.Choice(BACKENDS), default="local", show_default=True)
@click.option("--workers", type=click.IntRange(min=1, max=MAX_WORKERS), default=None,
              help="Parallel runs (default: CPU count, at most the number of runs).")
@click.option("--address", default=None, help="Ray cluster address (default: start Ray locally).")
@click.option("--dry-run", is_flag=True, help="List the runs and exit.")
def command(scenario_file: Path, grid_file: Path, out: Path, backend: str, workers: int | None,
            address: str | None, dry_run: bool) -> None:
    """Run SCENARIO_FILE once per point of the grid and strategy; resume an interrupted sweep."""
    if address and backend != "ray":
        raise click.UsageError("--address only applies to --backend ray")
    if out.suffix.lower() not in (".csv", ".parquet"):
        # `report` picks its reader by suffix: a table written as sweep.txt could not be read back.
        raise UserInputError(f"{out}: expected a .csv or .parquet path for the results table",
                             field="--out")
    from gpuscale.cli.options import input_path

    scenario_data = load_yaml(input_path(scenario_file))  # `-`: the scenario on stdin
    if not isinstance(scenario_data, dict):
        raise UserInputError("expected a scenario (a mapping at the top level)",
                             source=str(scenario_file))
    runs = expand_grid(load_grid(grid_file), scenario_data, source=str(grid_file))
    if dry_run:
        for run in runs:
            settings = ", ".join(f"{k}={v}" for k, v in run.overrides)
            click.echo(f"{run.run_id}  {run.strategy}  {settings}")
        click.echo(f"{len(runs)} runs")
        return
    start = time.perf_counter()

    def on_dropped(what: list[str]) -> None:
        from gpuscale.outputs import terminal_safe

        click.echo(terminal_safe(f"gpuscale: resuming {out}: dropped {len(what)} unreadable "
                                 f"part(s), their runs run again: {'; '.join(what[:5])}"), err=True)

    with _progress() as on_row:
        skipped, ran = run_sweep(scenario_data, scenario_file.parent, runs, out, backend=backend,
                                 workers=workers, address=address, on_row=on_row,
                                 on_dropped=on_dropped)
    wall_s = time.perf_counter() - start
    rate = f", {60 * ran / wall_s:.1f} runs/min" if ran and wall_s > 0 else ""
    click.echo(f"{len(runs)} runs: {skipped} already in {out}, {ran} run in {wall_s:.1f} s{rate}")


@contextmanager
def _progress() -> Iterator[Callable[[dict, int, int], None]]:
    """What a finished run shows: a progress bar on a terminal, else one line a run on
    stderr."""
    if not sys.stderr.isatty():
        def on_line(row: dict, done: int, total: int) -> None:
            from gpuscale.outputs import terminal_safe

            # The run's settings, not its id (a hash that says nothing to a reader).
            click.echo(terminal_safe(
                f"[{done}/{total}] {row['strategy']} {run_settings(row)}: SLO met "
                f"{100 * (row['slo_attainment'] or 0):.1f}%, ${row['cost_usd']}"), err=True)

        yield on_line
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TextColumn("ETA"), TimeRemainingColumn(), console=make_console(stderr=True),
                   transient=True)
    task = bar.add_task("runs", total=None)

    def on_bar(row: dict, done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    with bar:
        yield on_bar
