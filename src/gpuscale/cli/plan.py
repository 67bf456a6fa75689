"""`gpuscale plan INPUT --out DIR`: decisions, manifests and evidence for a three-layer plan."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from gpuscale.cli.catalog_option import catalog_option
from gpuscale.cli.options import (
    MAX_TIME_BUDGET_S,
    MAX_WORKERS,
    FiniteFloatRange,
    input_path,
    output_option,
)
from gpuscale.errors import UserInputError


@click.command("plan")
@catalog_option
@click.argument("input_file", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Write plan.md and manifests/*.yaml into this directory.")
@click.option("--force", is_flag=True, help="Replace --out if it exists.")
@output_option(help_text="table: the plan as text; json: the plan as data; yaml: every manifest "
                         "as one stream for `kubectl apply -f -`.")
@click.option(
    "--no-simulate", is_flag=True, help="Size the warm pool analytically (fast, no evidence)."
)
@click.option("--time-budget-s", type=FiniteFloatRange(min=1, max=MAX_TIME_BUDGET_S),
              default=600.0, show_default=True,
              help="Wall-clock budget of the search over simulations; once spent, the candidates "
                   "tried so far decide and plan.md says so.")
@click.option("--workers", type=click.IntRange(min=1, max=MAX_WORKERS), default=1,
              show_default=True,
              help="Processes the search's simulations run in (results are identical).")
@click.option("--backend", type=click.Choice(["local", "ray"]), default="local",
              show_default=True, help="local: worker processes on this machine; ray: Ray tasks.")
def command(input_file: Path, out: Path | None, force: bool, fmt: str, no_simulate: bool,
            time_budget_s: float, workers: int, backend: str) -> None:
    """Design node, scheduling and replica autoscaling for INPUT_FILE (a plan-input YAML; -
    for stdin)."""
    from gpuscale.manifests.plan import all_manifests_yaml, render_plan_manifests
    from gpuscale.plan import load_plan_input, plan_to_json
    from gpuscale.plan.report import render_plan_md

    if out is not None:
        _check_out_dir(out, force)
    input_file = input_path(input_file)
    plan_input = load_plan_input(input_file)
    plan = _run_plan(plan_input, input_file, not no_simulate, time_budget_s,
                     show_progress=sys.stderr.isatty() and fmt == "table", workers=workers,
                     backend=backend)
    from gpuscale.outputs import safe_filename

    # Workload names become file names: a 300-character name must not fail with
    # "File name too long" (the hash keeps long names distinct).
    files = {safe_filename(name.removesuffix(".yaml"), ".yaml"): objects
             for name, objects in render_plan_manifests(plan).items()}
    if plan.scenarios and not no_simulate:
        # the replay is what ships: the plan's own manifests, imported and re-run
        from gpuscale.cli.plan_replay import run_replays

        plan, _ = run_replays(plan, files, input_file.parent, workers=workers, backend=backend)
    from gpuscale.cli.plan_replay import replay_command

    commands = {name: replay_command(f"DIR/scenarios/{name}.yaml", plan.goodput_frac.get(name, 0))
                for name in plan.scenarios}
    text = render_plan_md(plan, sorted(files), commands)
    if out is not None:
        _write_plan_dir(out, text, files)
        _write_scenarios(out, plan.scenarios, input_file, plan.goodput_frac)
    if plan.unmet_slo:
        # plan.md (when written) holds what is reachable and what would reach the SLO
        raise UserInputError("; ".join(plan.unmet_slo), source=str(input_file), field="slo")
    if fmt == "yaml":
        if not files:
            raise UserInputError("the plan refused this input, so there are no manifests to print; "
                                 "see `gpuscale plan` without -o yaml for why")
        click.echo(all_manifests_yaml(files), nl=False)
    elif fmt == "json":
        from gpuscale.report.timeline import finite_json

        # An infinite TTFT in the warm-pool evidence is null in JSON (docs/metrics.md).
        click.echo(json.dumps(finite_json(plan_to_json(plan)), indent=2, allow_nan=False))
    else:
        click.echo(text)
        if out is not None:
            click.echo(f"plan written to {out}/plan.md ({len(files)} manifest files"
                       + (f", {len(plan.scenarios)} replay scenarios in {out}/scenarios/)"
                          if plan.scenarios else ")"))
            for name in sorted(plan.scenarios):
                click.echo("replay with: " + replay_command(
                    out / "scenarios" / f"{name}.yaml", plan.goodput_frac.get(name, 0)))


def _check_out_dir(out: Path, force: bool) -> None:
    """Refuse an --out the plan may not write, before the (possibly long) search."""
    if out.exists() and not force:
        raise UserInputError(f"{out} exists; pass --force to overwrite it")
    if out.exists() and not out.is_dir():
        raise UserInputError(f"{out} is a file, not a directory; give --out a directory")
    if not out.exists() and not out.parent.exists():
        raise UserInputError(f"directory {out.parent} does not exist")


def _write_plan_dir(out: Path, text: str, files: dict[str, list[dict]]) -> None:
    """plan.md and manifests/ in `out`. --force replaces what a plan writes (plan.md,
    manifests/*.yaml) and nothing else: other files a user keeps in the directory are never
    deleted, and nothing is written or deleted through a symbolic link planted in DIR."""
    from gpuscale.manifests.plan import render_kustomization, to_yaml
    from gpuscale.outputs import real_directory, write_atomic

    out.mkdir(exist_ok=True)
    old_manifests = real_directory(out / "manifests", "manifests")
    real_directory(out / "scenarios", "replay scenarios")  # before anything is written
    if old_manifests.is_dir():
        for stale in old_manifests.glob("*.yaml"):
            stale.unlink()  # a symlink named *.yaml is removed itself, not its target
    if files:
        old_manifests.mkdir(exist_ok=True)
    write_atomic(out / "plan.md", text)  # replaces a planted plan.md symlink, not its target
    for name, objects in sorted(files.items()):
        write_atomic(out / "manifests" / name, to_yaml(objects))
    if files:
        write_atomic(out / "manifests" / "kustomization.yaml",
                     to_yaml([render_kustomization(files)]))


def _run_plan(plan_input, input_file: Path, simulate: bool, time_budget_s: float, *,
              show_progress: bool, workers: int = 1, backend: str = "local"):
    """make_plan with the wall clock and a rich progress bar (only the CLI reads the clock):
    simulations done, the one just finished, and the time budget spent."""
    from gpuscale.plan import make_plan
    from gpuscale.plan.search import SearchBudget

    budget = SearchBudget(time_budget_s=time_budget_s, clock=time.monotonic, workers=workers,
                          backend=backend, started_s=time.monotonic())
    base_dir, source = input_file.parent, str(input_file)
    if not show_progress or not simulate:
        return make_plan(plan_input, base_dir, simulate=simulate, budget=budget, source=source)
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from gpuscale.report.terminal import make_console

    bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                   TimeElapsedColumn(), console=make_console(stderr=True), transient=True)
    # the bar fills with the time budget: the search stops starting work once it is spent
    task = bar.add_task("planning", total=time_budget_s)

    def progress(label: str) -> None:
        spent = time.monotonic() - (budget.started_s or time.monotonic())
        bar.update(task, completed=min(spent, time_budget_s),
                   description=f"{budget.simulations} simulations; last: {label}")

    budget.progress = progress
    with bar:
        return make_plan(plan_input, base_dir, simulate=simulate, budget=budget, source=source)


def _write_scenarios(out: Path, scenarios: dict[str, dict], input_file: Path,
                     goodput_frac: dict[str, float]) -> None:
    """DIR/scenarios/WORKLOAD.yaml: `gpuscale compare` replays the plan against its baselines.
    A trace path is made absolute, so the scenario runs from wherever it is kept."""
    import yaml

    from gpuscale.cli.plan_replay import replay_command
    from gpuscale.outputs import real_directory, write_atomic

    folder = real_directory(out / "scenarios", "replay scenarios")
    if folder.is_dir():
        for stale in folder.glob("*.yaml"):
            stale.unlink()
    if not scenarios:
        return
    folder.mkdir(exist_ok=True)
    for name, data in scenarios.items():
        data = dict(data)
        workload = dict(data["workload"])
        if "path" in workload and not Path(workload["path"]).is_absolute():
            workload["path"] = str((input_file.parent / workload["path"]).resolve())
        data["workload"] = workload
        header = (
            f"# Replay of plan workload {name}: "
            f"{replay_command(folder / (name + '.yaml'), goodput_frac.get(name, 0))}\n"
            "# strategies: plan (the plan's scaler and floor), baseline-queue-depth (KEDA on "
            "queue depth, min 1), fixed-best (cheapest always-on fleet meeting the SLO)\n"
        )
        write_atomic(folder / f"{name}.yaml",
                     header + yaml.safe_dump(data, sort_keys=False, width=100))
