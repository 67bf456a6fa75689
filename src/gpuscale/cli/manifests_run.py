"""`simulate --manifests` / `compare --manifests A --manifests B`: import, then run as usual.

Two bundles that differ only in what a strategy holds (autoscaler, nodes, scheduler) run as
two strategies of one scenario on one workload draw; bundles that differ in the model, engine
or cluster run as two scenarios on the same trace, their runs joined in one result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import yaml

from gpuscale.cli.io import check_output_path


def imported_lines(imported: list) -> list[str]:
    lines = []
    for imp in imported:
        lines.append(f"imported {imp.scenario.strategies[0].name} from {', '.join(imp.sources)}")
        lines += [f"  default: {d}" for d in imp.defaults]
        lines += [f"  note: {n}" for n in imp.notes]
    return lines


def import_bundles(bundles: tuple[str, ...], trace: Path | None) -> list:
    from gpuscale.importer.build import import_manifests

    if trace is None:
        raise click.UsageError("--manifests needs --trace FILE (the requests to replay)")
    imported: list[Any] = []
    for index, bundle in enumerate(bundles):
        # Name runs by bundle when comparing, so two copies of one Deployment stay apart.
        name = None if len(bundles) == 1 else f"{Path(bundle).name or 'stdin'}"
        if len(bundles) > 1 and name in [i.scenario.strategies[0].name for i in imported]:
            name = f"{name}-{index + 1}"
        imported.append(import_manifests([bundle], trace, name=name))
    return imported


def run_imported(imported: list, *, fmt: str, out: Path | None, force: bool,
                 series: bool = False, report: Path | None = None) -> dict:
    """Run each imported scenario (the trace makes their workloads identical) and join the
    runs into one result: {"scenario", "seed", "runs", "imported"}."""
    import time

    from gpuscale.cli.run_common import check_result_path, write_result
    from gpuscale.importer.resolved import attach_resolved, resolved_text
    from gpuscale.report.terminal import print_summary
    from gpuscale.report.timeline import attach_series, result_json_text
    from gpuscale.sim import simulate_scenario

    for path in (out, report):
        if path is not None:
            check_result_path(path, force=force)
    runs: list[Any] = []
    head: dict[str, Any] = {}
    for imp in imported:
        result, walls = simulate_scenario(imp.scenario, Path("."), clock=time.perf_counter)
        part = attach_resolved(result.to_json(walls), imp.scenario)
        if series or report is not None:
            part = attach_series(part, result)
        for run in part["runs"]:
            run["imported"] = imp.as_json()
        runs.extend(part["runs"])
        head = head or {k: v for k, v in part.items() if k != "runs"}  # e.g. a format version
    data = dict(head, scenario=" vs ".join(i.scenario.name for i in imported),
                seed=imported[0].scenario.seed, runs=runs)
    text = result_json_text(data)
    if out is not None:
        write_result(out, text, force=force)
    if report is not None:
        from gpuscale.report.html import ReportInputs, render_html

        write_result(report, render_html(ReportInputs(results=[data], title=f"gpuscale: "
                                                      f"{data['scenario']}")), force=force)
    if fmt == "json":
        click.echo(text, nl=False)
        return data
    print_summary(data)
    for run in runs:
        click.echo(resolved_text(run))  # wrapped at 100 columns
    for line in imported_lines(imported):
        click.echo(line)
    if out is not None:
        click.echo(f"JSON summary written to {out}")
    return data


def emit_scenario(path: Path, data: dict, *, force: bool) -> None:
    import os

    from gpuscale.importer.emit import emitted_data
    from gpuscale.outputs import write_atomic

    check_output_path(path, force=force)
    data = emitted_data(data)  # floors and consolidation said (importer/emit.py)
    # The trace path relative to the written file (scenario paths resolve from their folder),
    # so the scenario and the trace can move together.
    trace = Path(data["workload"]["path"])
    relative = os.path.relpath(trace, path.resolve().parent)
    data = dict(data, workload=dict(data["workload"], path=relative))
    header = ("# Written by `gpuscale simulate --manifests ... --emit-scenario`: the scenario the\n"
              "# manifests describe. Run it with `gpuscale simulate FILE` (with the same\n"
              "# --catalog files when it names a user catalog entry).\n")
    write_atomic(path, header + yaml.safe_dump(data, sort_keys=False))  # devices in place
