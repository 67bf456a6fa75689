"""Golden outputs: the demo and every example scenario, summarised to compact JSON.

`python tests/golden/regen.py` (with PYTHONPATH=src) rewrites `tests/golden/*.json`;
`test_golden.py` re-runs the same cases and compares. It also rewrites
`docs/result.schema.json` from the typed summary (metrics/run_summary.py). Regenerate only
for a deliberate change of results, and say why in the commit message.

A case's JSON holds each run's public summary (what `simulate --format json` writes, less
`wall_s`), the scale/eviction markers, and per-column sums and last values of the scrape
series, so a change anywhere in a run's numbers shows up here. Slow examples run on a shorter
horizon (`HORIZON_S`) to keep the test under ~20 s.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent
EXAMPLES = ROOT / "examples"

# The 6-hour consolidation example takes ~9 s; its first 2 hours hold the trap (scale-down,
# consolidation, the next burst), so the golden runs that much.
HORIZON_S = {"consolidation-trap/scenario.yaml": 7200.0}


# Example folders that are manifest bundles (`simulate --manifests`), not scenario files; their
# own tests run them (tests/importer/test_my_cluster.py, test_keda_examples.py).
MANIFEST_BUNDLES = frozenset({"my-cluster", "keda-scaling-modifiers", "llm-d-keda", "backtest"})


def _scenario_files() -> list[Path]:
    # diagnose/ holds a kubectl snapshot (tests/cli/test_first_hour.py diagnoses it)
    return sorted(p for p in EXAMPLES.rglob("*.yaml")
                  if not {"plans", "diagnose"} & set(p.relative_to(EXAMPLES).parts)
                  and not MANIFEST_BUNDLES & set(p.parts) and p.name != "grid.yaml")


def case_names() -> list[str]:
    return ["demo"] + [str(p.relative_to(EXAMPLES)) for p in _scenario_files()]


def golden_path(name: str) -> Path:
    return GOLDEN / (name.replace("/", "__").removesuffix(".yaml") + ".json")


def _plain(value: Any) -> Any:
    """JSON-ready copy: numpy scalars to Python, tuples to lists, NaN to the string "nan"."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return value


def _series_digest(series: dict[str, np.ndarray]) -> dict[str, Any]:
    out: dict[str, Any] = {"rows": len(series["time_s"])}
    for name, column in series.items():
        out[name] = {"sum": float(np.sum(column)),
                     "last": float(column[-1]) if len(column) else None}
    return out


def _simulate(scenario, base_dir: Path) -> dict[str, Any]:
    from gpuscale.sim import simulate_scenario

    result, walls = simulate_scenario(scenario, base_dir)
    summary = result.to_json(walls)
    for run in summary["runs"]:
        run.pop("wall_s")
    summary["series"] = {run.name: _series_digest(run.series) for run in result.runs}
    summary["markers"] = {run.name: run.extra["markers"] for run in result.runs}
    return summary


def run_case(name: str) -> dict[str, Any]:
    from gpuscale.cli.demo import demo_scenario_text
    from gpuscale.scenario import load_scenario, scenario_from_dict
    from gpuscale.scenario.schedule import load_schedule_scenario
    from gpuscale.sim.schedule import run_scenario

    if name == "demo":
        scenario = scenario_from_dict(yaml.safe_load(demo_scenario_text()), source="demo.yaml")
        return _plain(_simulate(scenario, ROOT))
    path = EXAMPLES / name
    if "model" not in yaml.safe_load(path.read_text()):
        return _plain(run_scenario(load_schedule_scenario(path)))
    scenario = load_scenario(path)
    if name in HORIZON_S:
        scenario = scenario.model_copy(update={"duration_s": HORIZON_S[name]})
    return _plain(_simulate(scenario, path.parent))


SCHEMA = ROOT / "docs" / "result.schema.json"


def schema_text() -> str:
    from gpuscale.metrics.run_summary import result_schema

    return json.dumps(result_schema(), indent=2, sort_keys=True) + "\n"


def main(names: list[str]) -> None:
    SCHEMA.write_text(schema_text())
    print(f"wrote {SCHEMA.relative_to(ROOT)}")
    for name in names or case_names():
        golden_path(name).write_text(json.dumps(run_case(name), indent=1, sort_keys=True) + "\n")
        print(f"wrote {golden_path(name).relative_to(ROOT)}")


if __name__ == "__main__":
    main(sys.argv[1:])
