"""Run several strategies of one scenario on the same workload and gather the JSON summary."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gpuscale.errors import UserInputError
from gpuscale.metrics.run_summary import ResultFile
from gpuscale.scenario.clock import DEFAULT, on_trace_clock
from gpuscale.scenario.models import Scenario
from gpuscale.sim.run import RunResult, run_strategy, scenario_requests

# Called with (strategy index, number of strategies, fraction of that run done).
ProgressFn = Callable[[int, int, float], None]


@dataclass
class ScenarioResult:
    scenario: Scenario  # as it ran: on a trace's own clock when it took one
    runs: list[RunResult]
    clock_source: str = DEFAULT  # what t = 0 is on the wall clock (scenario/clock.py)

    def typed(self, wall_s: list[float]) -> ResultFile:
        """The public summary as types (metrics/run_summary.py)."""
        runs = [run.summary.model_copy(update={"wall_s": round(wall, 4)})
                for run, wall in zip(self.runs, wall_s, strict=True)]
        return ResultFile(scenario=self.scenario.name, seed=self.scenario.seed, runs=runs)

    def to_json(self, wall_s: list[float]) -> dict:
        """The public summary: {"version", "scenario", "seed", "runs": [...]}
        (docs/metrics.md, docs/result.schema.json)."""
        return self.typed(wall_s).to_json()


def simulate_scenario(scenario: Scenario, base_dir: Path, *, strategies: list[str] | None = None,
                      progress: ProgressFn | None = None,
                      clock: Callable[[], float] | None = None,
                      decisions: bool = False, export_series: bool = False,
                      source: str = "<scenario>") -> tuple[ScenarioResult, list[float]]:
    """Run the chosen strategies (all by default); `clock` (wall time) is only for `wall_s`;
    `decisions` keeps each run's decision log (`RunResult.decisions`); `export_series` each
    run's every series (`RunResult.prometheus`). Without its own `start_time` a scenario runs
    on its trace's clock when the trace records one; `source` names the scenario's file if
    its cron windows then never open."""
    chosen = scenario.strategies
    if strategies:
        known = {s.name: s for s in scenario.strategies}
        missing = [name for name in strategies if name not in known]
        if missing:
            raise UserInputError(f"no strategy named {', '.join(missing)}; "
                                 f"known: {', '.join(known)}", field="strategies")
        chosen = [known[name] for name in strategies]
    requests = scenario_requests(scenario, base_dir)
    scenario, clock_source = on_trace_clock(scenario, requests.start_time, source=source)
    runs, walls = [], []
    for index, strategy in enumerate(chosen):
        start = clock() if clock else 0.0
        callback = (lambda frac, i=index: progress(i, len(chosen), frac)) if progress else None
        runs.append(run_strategy(scenario, strategy, requests, callback, decisions,
                                 export_series))
        walls.append((clock() - start) if clock else 0.0)
    return ScenarioResult(scenario, runs, clock_source), walls
