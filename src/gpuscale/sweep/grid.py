"""Sweep grids: a grid.yaml -> runs, each a set of scenario overrides and one strategy.

grid.yaml holds either a cartesian product or an explicit list (not both):

    parameters:                        # every combination, in the order written
      "strategies[keda-queue].autoscaler.triggers[0].threshold": [2, 5, 10]
      cluster.ready_nodes: [1, 2]
      seed: [1, 2]
    strategies: [keda-queue]           # optional: which strategies run (default: all)

    runs:                              # or: exactly these override sets
      - {seed: 1, cluster.ready_nodes: 2}

A path is dotted keys with list indices `[0]` or, for lists of named items such as
`strategies`, the item's name `[keda-queue]`. Overrides are applied to the scenario YAML before
validation, so a bad value fails like a bad scenario file, naming the path.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuscale.errors import UserInputError
from gpuscale.scenario import scenario_from_dict
from gpuscale.workloads.limits import check_runs, planned_load

_TOKEN = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]")
PARAM_PREFIX = "set:"  # column prefix of an override in the results table


@dataclass(frozen=True)
class SweepRun:
    run_id: str
    strategy: str
    overrides: tuple[tuple[str, Any], ...]  # (path, value) in grid order


def parse_path(path: str) -> list[str | int]:
    """`a.b[0].c[name]` -> ["a", "b", 0, "c", "name"]; raises on an empty or malformed path."""
    steps: list[str | int] = []
    pos = 0
    for match in _TOKEN.finditer(path):
        between = path[pos:match.start()]
        if between not in ("", ".") or (between == "." and not steps):
            raise UserInputError(f"malformed override path {path!r}", field=path)
        key, index = match.groups()
        if key is not None:
            steps.append(key)
        else:
            steps.append(int(index) if index.lstrip("-").isdigit() else index)
        pos = match.end()
    if not steps or pos != len(path) or path.endswith("."):
        raise UserInputError(f"malformed override path {path!r}", field=path)
    return steps


def _child_index(container: list, step: str | int, path: str) -> int:
    if isinstance(step, int):
        if not -len(container) <= step < len(container):
            raise UserInputError(f"index {step} out of range (list has {len(container)} items)",
                                 field=path)
        return step
    names = [item.get("name") for item in container if isinstance(item, dict)]
    if step not in names:
        raise UserInputError(f"no item named {step!r}; known: {', '.join(map(str, names))}",
                             field=path)
    return names.index(step)


def apply_override(data: dict, path: str, value: Any) -> None:
    """Set `value` at `path` inside `data` (in place). Missing mapping keys are created, so an
    optional section left to its defaults can be overridden; validation checks the result."""
    steps = parse_path(path)
    node: Any = data
    for depth, step in enumerate(steps):
        last = depth == len(steps) - 1
        if isinstance(node, list):
            index = _child_index(node, step, path)
            if last:
                node[index] = value
            else:
                node = node[index]
        elif isinstance(node, dict):
            if not isinstance(step, str):
                raise UserInputError(f"{'.'.join(map(str, steps[:depth])) or 'top level'} is a "
                                     "mapping, not a list", field=path)
            if last:
                node[step] = value
            else:
                node = node.setdefault(step, {})
        else:
            raise UserInputError(f"cannot descend into a {type(node).__name__} value", field=path)


def run_id_of(strategy: str, overrides: tuple[tuple[str, Any], ...]) -> str:
    """Stable id: hash of the canonical JSON of (strategy, sorted overrides); same on any host."""
    canonical = json.dumps({"strategy": strategy, "overrides": sorted(overrides)},
                           sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def scenario_hash(data: dict) -> str:
    """Fingerprint of the base scenario, so a resumed table is not mixed with another scenario."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _check_size(points: int, per_point: int, planned: float, source: str) -> None:
    """A grid's runs counted before they are listed: 10^9 points is a typo, and listing them
    (let alone validating each) never finished (workloads/limits.py)."""
    try:
        check_runs(f"the grid's {points:,} points x {per_point} strategies", points * per_point,
                   planned)
    except UserInputError as exc:
        raise UserInputError(str(exc), source=source) from None


def _override_sets(grid: dict, source: str, per_point: int = 1,
                   planned: float = 0.0) -> list[tuple[tuple[str, Any], ...]]:
    if ("parameters" in grid) == ("runs" in grid):
        raise UserInputError("a grid needs exactly one of `parameters` (cartesian product) or "
                             "`runs` (a list)", source=source)
    if "parameters" in grid:
        params = grid["parameters"]
        if not isinstance(params, dict) or not params:
            raise UserInputError("`parameters` must map paths to lists of values", source=source,
                                 field="parameters")
        for path, values in params.items():
            if not isinstance(path, str):  # `1: [a, b]` or `true: ...` parse as non-strings
                raise UserInputError(
                    f"parameter path {path!r} is not a string (a dotted path "
                    "such as workload.rate_per_s)",
                    source=source,
                    field="parameters",
                )
            if not isinstance(values, list) or not values:
                raise UserInputError("expected a non-empty list of values", source=source,
                                     field=f"parameters.{path}")
        paths = list(params)
        _check_size(math.prod(len(v) for v in params.values()), per_point, planned, source)
        return [
            tuple(zip(paths, combo, strict=True)) for combo in itertools.product(*params.values())
        ]
    runs = grid["runs"]
    if not isinstance(runs, list) or not runs or not all(isinstance(r, dict) for r in runs):
        raise UserInputError(
            "`runs` must be a non-empty list of mappings", source=source, field="runs"
        )
    for index, run in enumerate(runs):
        bad = [key for key in run if not isinstance(key, str)]
        if bad:
            raise UserInputError(f"override path {bad[0]!r} is not a string (a dotted path)",
                                 source=source, field=f"runs[{index}]")
    return [tuple(run.items()) for run in runs]


def expand_grid(grid: Any, scenario_data: dict, *, source: str = "grid") -> list[SweepRun]:
    """Every run of the grid, validated against the scenario before anything runs."""
    if not isinstance(grid, dict):
        raise UserInputError("expected a mapping at the top level", source=source)
    unknown = set(grid) - {"parameters", "runs", "strategies"}
    if unknown:
        raise UserInputError(f"unknown key(s) {', '.join(sorted(unknown))}", source=source)
    runs: list[SweepRun] = []
    chosen_names = grid.get("strategies")
    listed = scenario_data.get("strategies") if isinstance(scenario_data, dict) else None
    per_point = (len(chosen_names) if isinstance(chosen_names, list) and chosen_names
                 else len(listed) if isinstance(listed, list) and listed else 1)
    for overrides in _override_sets(grid, source, per_point, _planned(scenario_data)):
        data = copy.deepcopy(scenario_data)
        for path, value in overrides:
            try:
                apply_override(data, path, value)
            except UserInputError as exc:
                exc.args = (f"{source}: {exc.args[0]}",)
                raise
        scenario = scenario_from_dict(data, source=f"{source} (overrides {dict(overrides)})")
        known = [s.name for s in scenario.strategies]
        chosen = grid.get("strategies") or known
        if not isinstance(chosen, list) or not all(isinstance(n, str) for n in chosen):
            raise UserInputError("`strategies` must be a list of strategy names (strings)",
                                 source=source, field="strategies")
        missing = [name for name in chosen if name not in known]
        if missing:
            raise UserInputError(
                f"no strategy named {', '.join(missing)}; known: {', '.join(known)}",
                source=source,
                field="strategies",
            )
        runs += [SweepRun(run_id_of(name, overrides), name, overrides) for name in chosen]
    ids = [r.run_id for r in runs]
    if len(set(ids)) != len(ids):
        raise UserInputError("the grid repeats a run (same overrides and strategy)", source=source)
    return runs


def _planned(scenario_data: dict) -> float:
    """Requests one run of the base scenario replays, as its workload plans them (0 when
    unknown: a trace, or a scenario that does not validate, which expand_grid reports)."""
    try:
        return planned_load(scenario_from_dict(scenario_data).workload)[0]
    except UserInputError:  # a non-mapping or invalid scenario: each point reports it
        return 0.0


def param_paths(runs: list[SweepRun]) -> list[str]:
    """Every override path of the grid, in first-seen order (the table's parameter columns)."""
    seen: dict[str, None] = {}
    for run in runs:
        for path, _ in run.overrides:
            seen.setdefault(path, None)
    return list(seen)


def load_grid(path: Path) -> Any:
    from gpuscale.scenario.load import load_yaml

    return load_yaml(path)
