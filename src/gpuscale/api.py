"""The Python API for notebooks and scripts: `gpuscale.simulate(...)`.

    import gpuscale
    result = gpuscale.simulate("examples/pd-split/scenario.yaml")   # or a dict, or a Scenario
    result.to_dict()      # the JSON summary `gpuscale simulate -o json` prints
    result.to_pandas()    # one row per run (pandas is optional: pip install pandas)

Imported lazily from `gpuscale/__init__.py`, so `import gpuscale` stays cheap. It runs the
same engine call as the CLI; nothing here writes files.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Columns of `to_pandas()`: (column, path into a run summary). TTFT percentiles that fall
# among requests without a first token are +inf (JSON writes them as null).
ROW_COLUMNS = (
    ("strategy", ("name",)),
    ("slo_attainment", ("slo_attainment",)),
    ("goodput_rps", ("goodput_rps",)),
    ("ttft_p50_s", ("ttft_s", "p50")), ("ttft_p90_s", ("ttft_s", "p90")),
    ("ttft_p99_s", ("ttft_s", "p99")),
    ("tpot_p50_s", ("tpot_s", "p50")), ("tpot_p99_s", ("tpot_s", "p99")),
    ("requests_total", ("requests", "total")), ("requests_dropped", ("requests", "dropped")),
    ("replicas_mean", ("replicas", "mean")), ("replicas_peak", ("replicas", "peak")),
    ("scale_events", ("scale_events",)), ("gpu_hours", ("gpu_hours",)),
    ("cost_usd", ("cost_usd",)), ("idle_gpu_minutes", ("idle_gpu_minutes",)),
    ("slo_breach_minutes", ("slo_breach_minutes",)),
)


def _get(run: dict, path: tuple[str, ...]) -> Any:
    value: Any = run
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


@dataclass(frozen=True)
class SimulationResult:
    """One scenario's runs. `summary` is the in-memory summary (infinite TTFTs as inf)."""

    summary: dict
    slo: dict

    @property
    def runs(self) -> list[dict]:
        return self.summary["runs"]

    def to_dict(self) -> dict:
        """The JSON summary, exactly as `gpuscale simulate -o json` prints it."""
        from gpuscale.report.timeline import result_json_text

        return json.loads(result_json_text(copy.deepcopy(self.summary)))

    def rows(self) -> list[dict]:
        """One flat dict per run (the columns of `to_pandas()`)."""
        out = []
        for run in self.runs:
            row = {name: _get(run, path) for name, path in ROW_COLUMNS}
            for key in ("ttft_p50_s", "ttft_p90_s", "ttft_p99_s"):
                if row[key] is None and (row["requests_total"] or 0) > 0:
                    row[key] = math.inf
            out.append(row)
        return out

    def to_pandas(self):
        """A pandas DataFrame, one row per run, indexed by strategy."""
        try:
            import pandas
        except ImportError:
            raise ImportError("to_pandas() needs pandas, which gpuscale does not install: "
                              "`pip install pandas` (or use to_dict())") from None
        return pandas.DataFrame(self.rows()).set_index("strategy")

    def verdict(self, target_frac: float | None = None) -> str:
        """The line `gpuscale compare` ends with."""
        from gpuscale.metrics.oracle import SLO_ATTAINMENT_TARGET
        from gpuscale.report.verdict import verdict

        return verdict([self.summary], self.slo, target_frac or SLO_ATTAINMENT_TARGET)


def simulate(scenario: str | Path | dict | Any, *, seed: int | None = None,
             strategies: list[str] | None = None,
             base_dir: str | Path | None = None) -> SimulationResult:
    """Run every strategy of `scenario` (a YAML path, a dict as the YAML would load, or a
    `Scenario`), or only `strategies`. Relative trace paths resolve from the file's directory,
    else from `base_dir` (default: the working directory). Bad input raises
    `gpuscale.errors.UserInputError` with the same message the CLI prints."""
    from gpuscale.scenario import load_scenario, scenario_from_dict
    from gpuscale.scenario.models import Scenario
    from gpuscale.sim import simulate_scenario

    if isinstance(scenario, (str, Path)):
        path = Path(scenario)
        model = load_scenario(path)
        root = Path(base_dir) if base_dir is not None else path.parent
    elif isinstance(scenario, dict):
        model = scenario_from_dict(scenario, source="<dict>")
        root = Path(base_dir) if base_dir is not None else Path(".")
    elif isinstance(scenario, Scenario):
        model, root = scenario, Path(base_dir) if base_dir is not None else Path(".")
    else:
        raise TypeError(f"simulate() takes a path, a dict or a Scenario, not "
                        f"{type(scenario).__name__}")
    if seed is not None:
        model = model.model_copy(update={"seed": seed})
    from gpuscale.importer.resolved import attach_resolved

    result, walls = simulate_scenario(model, root, strategies=strategies)
    # The same JSON the CLI prints, `resolved` (what was simulated) included.
    return SimulationResult(attach_resolved(result.to_json(walls), result.scenario,
                                            result.clock_source),
                            {"ttft_s": model.slo.ttft_s, "tpot_s": model.slo.tpot_s})
