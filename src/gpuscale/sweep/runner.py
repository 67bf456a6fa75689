"""Run a sweep: each run in a worker (local processes or Ray tasks), rows written as they finish.

A run is a pure function of (scenario YAML data, base dir, overrides, strategy), so the same
run gives the same row in any process or on any Ray node; the row holds no wall time.
Runs already in the table are skipped, which is what makes a killed sweep resumable.
"""

from __future__ import annotations

import copy
import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuscale.errors import UserInputError
from gpuscale.sweep.grid import PARAM_PREFIX, SweepRun, apply_override, param_paths, scenario_hash
from gpuscale.sweep.table import KEY_COLUMNS, METRIC_COLUMNS, ResultTable, metrics_of

BACKENDS = ("local", "ray")
# Called after each finished run with (row, runs done so far, runs in this invocation).
OnRow = Callable[[dict, int, int], None]


@dataclass(frozen=True)
class SweepJob:
    """Everything a worker needs, picklable: the scenario as plain data, not a model."""

    scenario_data: dict
    base_dir: str
    scenario_hash: str


def table_columns(runs: list[SweepRun]) -> list[str]:
    return [*KEY_COLUMNS, *(PARAM_PREFIX + p for p in param_paths(runs)), *METRIC_COLUMNS]


def run_one(job: SweepJob, run: SweepRun) -> dict:
    """Simulate one run and return its table row (without missing override columns)."""
    from gpuscale.engine import simulate_scenario
    from gpuscale.scenario import scenario_from_dict

    data = copy.deepcopy(job.scenario_data)
    for path, value in run.overrides:
        apply_override(data, path, value)
    scenario = scenario_from_dict(data, source=f"sweep run {run.run_id}")
    result, _ = simulate_scenario(scenario, Path(job.base_dir), strategies=[run.strategy])
    row: dict[str, Any] = {"run_id": run.run_id, "strategy": run.strategy,
                           "scenario_hash": job.scenario_hash}
    row.update({PARAM_PREFIX + path: value for path, value in run.overrides})
    row.update(metrics_of(result.runs[0].summary))
    return row


def _local(job: SweepJob, runs: list[SweepRun], workers: int) -> Iterator[dict]:
    if workers <= 1:  # in-process: no pickling, and a debugger or profiler sees the run
        for run in runs:
            yield run_one(job, run)
        return
    # forkserver, not fork: forking a process that has threads (Ray, a GUI, a test runner's
    # helpers) can deadlock; the server is a clean single-threaded process that has already
    # imported the simulator, so each worker starts in milliseconds.
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["gpuscale.sweep.runner", "gpuscale.engine"])
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)
    try:
        pending = {pool.submit(run_one, job, run) for run in runs}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            # Stable order among runs finishing together: by run id.
            for future in sorted(done, key=lambda f: f.result()["run_id"]):
                yield future.result()
    finally:
        # Interrupted (Ctrl-C, an error): runs not started are dropped, not waited for.
        pool.shutdown(wait=True, cancel_futures=True)


def _ray(
    job: SweepJob, runs: list[SweepRun], address: str | None, workers: int | None
) -> Iterator[dict]:
    try:
        import ray
    except ImportError:
        raise UserInputError("--backend ray needs Ray: pip install 'gpuscale[ray]'") from None
    if not ray.is_initialized():
        # An explicit address joins a running cluster; none starts a local one for this sweep.
        kwargs = {"address": address} if address else {"num_cpus": workers} if workers else {}
        ray.init(include_dashboard=False, log_to_driver=False, **kwargs)
    remote = ray.remote(num_cpus=1)(run_one)
    job_ref = ray.put(job)
    pending = [remote.remote(job_ref, run) for run in runs]
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        for ref in done:
            yield ray.get(ref)


def run_sweep(scenario_data: dict, base_dir: Path, runs: list[SweepRun], out: Path, *,
              backend: str = "local", workers: int | None = None, address: str | None = None,
              on_row: OnRow | None = None) -> tuple[int, int]:
    """Run what `out` does not hold yet; returns (runs skipped as done, runs executed)."""
    if backend not in BACKENDS:
        raise UserInputError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
    job = SweepJob(scenario_data, str(base_dir.resolve()), scenario_hash(scenario_data))
    table = ResultTable(out, table_columns(runs), scenario_hash=job.scenario_hash)
    todo = [run for run in runs if run.run_id not in table.done]
    skipped = len(runs) - len(todo)
    if not todo:
        return skipped, 0
    if backend == "local":
        count = workers or min(os.cpu_count() or 1, len(todo))
        rows = _local(job, todo, count)
    else:
        rows = _ray(job, todo, address, workers)
    columns = table.columns
    done = 0
    for row in rows:
        table.append({c: row.get(c) for c in columns})
        done += 1
        if on_row is not None:
            on_row(row, done, len(todo))
    return skipped, done
