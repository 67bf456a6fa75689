"""`simulate --manifests` / `compare --manifests A --manifests B`: import each bundle as a
scenario on the same trace; run_common runs them as it runs scenario files (one code path),
joining their runs in one result.
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


def import_bundles(bundles: tuple[str, ...], trace: Path | None,
                   seed: int | None = None, start_time=None) -> list:
    from gpuscale.cli.run_common import overridden
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
    for imp in imported:
        imp.scenario = overridden(imp.scenario, seed=seed, start_time=start_time)
    return imported


def manifest_units(bundles: tuple[str, ...], trace: Path | None, seed: int | None,
                   strategies: list[str] | None = None,
                   start_time=None) -> tuple[list, list, list[str]]:
    """(imported bundles, their run units, the lines that say what each import read)."""
    from gpuscale.cli.run_common import RunUnit

    imported = import_bundles(bundles, trace, seed=seed, start_time=start_time)
    units = [RunUnit(imp.scenario, Path("."), strategies, imp.as_json()) for imp in imported]
    return imported, units, imported_lines(imported)


def emit_scenario(path: Path, data: dict, *, force: bool) -> None:
    import os

    check_output_path(path, force=force)
    # The trace path relative to the written file (scenario paths resolve from their folder),
    # so the scenario and the trace can move together.
    trace = Path(data["workload"]["path"])
    relative = os.path.relpath(trace, path.resolve().parent)
    data = dict(data, workload=dict(data["workload"], path=relative))
    header = ("# Written by `gpuscale simulate --manifests ... --emit-scenario`: the scenario the\n"
              "# manifests describe. Run it with `gpuscale simulate FILE` (with the same\n"
              "# --catalog files when it names a user catalog entry).\n")
    path.write_text(header + yaml.safe_dump(data, sort_keys=False))
