"""Shared fixtures of the plan tests: the example inputs and their plans (analytic warm pool)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import yaml

from gpuscale.manifests.plan import render_plan_manifests
from gpuscale.plan import make_plan, plan_input_from_dict

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "plans"
SHARED = REPO / ".." / "shared"
EXAMPLE_NAMES = sorted(p.stem for p in EXAMPLES.glob("*.yaml"))


def example_dict(name: str) -> dict:
    return yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())


@cache
def example_plan(name: str):
    return make_plan(plan_input_from_dict(example_dict(name)), EXAMPLES, simulate=False)


@cache
def example_manifests(name: str) -> dict:
    return render_plan_manifests(example_plan(name))


def all_objects():
    for name in EXAMPLE_NAMES:
        for file, objects in example_manifests(name).items():
            for obj in objects:
                yield name, file, obj
