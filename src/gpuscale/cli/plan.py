"""`gpuscale plan INPUT --out DIR`: decisions, manifests and evidence for a three-layer plan."""

from __future__ import annotations

import json
from pathlib import Path

import click

from gpuscale.errors import UserInputError


@click.command("plan")
@click.argument("input_file", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Write plan.md and manifests/*.yaml into this directory.")
@click.option("--force", is_flag=True, help="Replace --out if it exists.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="json prints the plan as data.")
@click.option("--no-simulate", is_flag=True, help="Size the warm pool analytically (fast, no evidence).")
def command(input_file: Path, out: Path | None, force: bool, fmt: str, no_simulate: bool) -> None:
    """Design node, scheduling and replica autoscaling for INPUT_FILE (a plan-input YAML)."""
    from gpuscale.manifests.plan import render_plan_manifests, to_yaml
    from gpuscale.plan import load_plan_input, make_plan, plan_to_json
    from gpuscale.plan.report import render_plan_md

    if out is not None and out.exists() and not force:
        raise UserInputError(f"{out} exists; pass --force to overwrite it")
    if out is not None and out.exists() and not out.is_dir():
        raise UserInputError(f"{out} is a file, not a directory; give --out a directory")
    if out is not None and not out.exists() and not out.parent.exists():
        raise UserInputError(f"directory {out.parent} does not exist")
    plan = make_plan(load_plan_input(input_file), input_file.parent, simulate=not no_simulate)
    from gpuscale.outputs import real_directory, safe_filename, write_atomic

    # Workload names become file names: a 300-character name must not fail with
    # "File name too long" (the hash keeps long names distinct).
    files = {safe_filename(name.removesuffix(".yaml"), ".yaml"): objects
             for name, objects in render_plan_manifests(plan).items()}
    text = render_plan_md(plan, sorted(files))
    if out is not None:
        # --force replaces what a plan writes (plan.md, manifests/*.yaml) and nothing else:
        # other files a user keeps in the directory are never deleted, and nothing is written
        # or deleted through a symbolic link planted in DIR.
        out.mkdir(exist_ok=True)
        old_manifests = real_directory(out / "manifests", "manifests")
        if old_manifests.is_dir():
            for stale in old_manifests.glob("*.yaml"):
                stale.unlink()  # a symlink named *.yaml is removed itself, not its target
        if files:
            old_manifests.mkdir(exist_ok=True)
        write_atomic(out / "plan.md", text)  # replaces a planted plan.md symlink, not its target
        for name, objects in sorted(files.items()):
            write_atomic(out / "manifests" / name, to_yaml(objects))
    if fmt == "json":
        click.echo(json.dumps(plan_to_json(plan), indent=2))
    else:
        click.echo(text)
        if out is not None:
            click.echo(f"plan written to {out}/plan.md ({len(files)} manifest files)")
