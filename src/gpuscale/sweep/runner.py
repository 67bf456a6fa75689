"""Run a sweep: each run in a worker (local processes or Ray tasks), rows written as they finish.

A run is a pure function of (scenario YAML data, base dir, overrides, strategy), so the same
run gives the same row in any process or on any Ray node; the row holds no wall time.
Runs already in the table are skipped, which is what makes a killed sweep resumable.
"""

from __future__ import annotations

import contextlib
import copy
import multiprocessing
import os
from collections.abc import Callable, Generator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuscale.errors import Interrupted, UserInputError
from gpuscale.sweep.grid import PARAM_PREFIX, SweepRun, apply_override, param_paths, scenario_hash
from gpuscale.sweep.stopping import (
    Stopped,
    lock_table,
    start_forkserver_quietly,
    stop_on_signals,
    stops_deferred,
    unlock_table,
)
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
    # The user catalog entries (`--catalog`) of the parent process: workers start without them.
    user_catalog: tuple = ({}, {}, {})


def table_columns(runs: list[SweepRun]) -> list[str]:
    return [*KEY_COLUMNS, *(PARAM_PREFIX + p for p in param_paths(runs)), *METRIC_COLUMNS]


def run_one(job: SweepJob, run: SweepRun) -> dict:
    """Simulate one run and return its table row (without missing override columns)."""
    from gpuscale.catalog.specs import set_user_entries
    from gpuscale.scenario import scenario_from_dict
    from gpuscale.sim import simulate_scenario

    set_user_entries(*job.user_catalog)
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


def _die_with_parent(parent_pid: int) -> None:
    """Worker initializer: end this worker when the sweep process is gone (SIGKILL, SIGTERM,
    a crash), instead of finishing its run for nobody. Linux: the kernel sends SIGKILL when
    the forkserver (our parent, which exits with the sweep) dies; everywhere: a thread that
    polls the sweep's pid once a second. Ctrl-C reaches the whole process group: workers
    ignore SIGINT and leave the stop to the sweep, which kills them (one message, not one
    KeyboardInterrupt traceback per worker)."""
    import signal
    import threading
    import time

    signal.signal(signal.SIGINT, signal.SIG_IGN)

    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        pass

    def watch() -> None:
        while True:
            time.sleep(1.0)
            try:
                os.kill(parent_pid, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:  # a recycled pid of another user: the sweep is gone
                os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _local(job: SweepJob, runs: list[SweepRun], workers: int) -> Generator[dict, None, None]:
    if workers <= 1:  # in-process: no pickling, and a debugger or profiler sees the run
        for run in runs:
            yield run_one(job, run)
        return
    # forkserver, not fork: forking a process that has threads (Ray, a GUI, a test runner's
    # helpers) can deadlock; the server is a clean single-threaded process that has already
    # imported the simulator, so each worker starts in milliseconds.
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["gpuscale.sweep.runner", "gpuscale.sim"])
    pool: ProcessPoolExecutor | None = None
    finished = False
    try:
        # A stop signal while workers are being started would leave one half-started (it
        # printed a traceback reading its closed pipe): the signal waits until all are
        # registered, and is raised inside this `try`, so the pool it leaves is killed too.
        with stops_deferred():
            start_forkserver_quietly()
            pool = ProcessPoolExecutor(max_workers=workers, mp_context=context,
                                       initializer=_die_with_parent, initargs=(os.getpid(),))
            pending = {pool.submit(run_one, job, run) for run in runs}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            # Stable order among runs finishing together: by run id.
            for future in sorted(done, key=lambda f: f.result()["run_id"]):
                yield future.result()
        finished = True
    finally:
        if pool is not None:
            if not finished:
                # Interrupted (Ctrl-C, SIGTERM, an error): runs in progress are stopped, not
                # waited for; they are not in the table, so a resume runs them again.
                for process in list((getattr(pool, "_processes", None) or {}).values()):
                    process.kill()
            # Waited for either way: with its workers killed the pool's management thread ends
            # at once, and one left running into interpreter exit wrote "Exception ignored ...
            # Bad file descriptor" to stderr under load (seen once in the full suite).
            pool.shutdown(wait=True, cancel_futures=True)


def _ray(
    job: SweepJob, runs: list[SweepRun], address: str | None, workers: int | None
) -> Generator[dict, None, None]:
    try:
        import ray
    except ImportError:
        raise UserInputError("--backend ray needs Ray: pip install 'gpuscale[ray]'") from None
    if not ray.is_initialized():
        # An explicit address joins a running cluster; none starts a local one for this sweep.
        if address:
            _check_reachable(address)
        kwargs = {"address": address} if address else {"num_cpus": workers} if workers else {}
        ray.init(include_dashboard=False, log_to_driver=False, **kwargs)
    remote = ray.remote(num_cpus=1)(run_one)
    job_ref = ray.put(job)
    pending = [remote.remote(job_ref, run) for run in runs]
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        for ref in done:
            yield ray.get(ref)


RAY_CONNECT_TIMEOUT_S = 10.0


def _check_reachable(address: str) -> None:
    """Refuse a Ray address nothing listens on within RAY_CONNECT_TIMEOUT_S: `ray.init` to a
    dead address retries for minutes and ignores SIGINT/SIGTERM while it does."""
    import socket

    hostport = address.removeprefix("ray://")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        return  # "auto" or a form Ray resolves itself
    try:
        with socket.create_connection((host, int(port)), timeout=RAY_CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        raise UserInputError(f"no Ray cluster answers at {address} within "
                             f"{RAY_CONNECT_TIMEOUT_S:.0f} s ({exc.strerror or exc}); start one "
                             "(`ray start --head`) or drop --address to run Ray locally",
                             field="--address") from None


def run_sweep(scenario_data: dict, base_dir: Path, runs: list[SweepRun], out: Path, *,
              backend: str = "local", workers: int | None = None, address: str | None = None,
              on_row: OnRow | None = None,
              on_dropped: Callable[[list[str]], None] | None = None) -> tuple[int, int]:
    """Run what `out` does not hold yet; returns (runs skipped as done, runs executed).
    `on_dropped` hears what resuming could not keep of the table (those runs run again)."""
    if backend not in BACKENDS:
        raise UserInputError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
    from gpuscale.catalog.specs import user_entries

    job = SweepJob(scenario_data, str(base_dir.resolve()), scenario_hash(scenario_data),
                   user_entries())
    if not out.parent.exists():
        raise UserInputError(f"directory {out.parent} does not exist")
    progress = _Progress(on_row, len(runs))
    with stop_on_signals():
        lock = lock_table(out)
        try:
            return _run_locked(job, runs, out, backend, workers, address, progress.row,
                               on_dropped)
        except (KeyboardInterrupt, Stopped) as exc:
            what = exc.signal_name if isinstance(exc, Stopped) else "SIGINT (Ctrl-C)"
            raise Interrupted(f"sweep stopped by {what} after {progress.done} new run(s) of "
                              f"the grid's {progress.grid_runs}; the finished rows are in {out}, "
                              "and the same command resumes it") from None
        finally:
            unlock_table(*lock)


class _Progress:
    """Counts the rows written (what an interrupted sweep reports) and passes each on."""

    def __init__(self, on_row: OnRow | None, grid_runs: int) -> None:
        self.on_row, self.done, self.grid_runs = on_row, 0, grid_runs

    def row(self, row: dict, done: int, total: int) -> None:
        self.done = done
        if self.on_row is not None:
            self.on_row(row, done, total)


def _run_locked(job: SweepJob, runs: list[SweepRun], out: Path, backend: str,
                workers: int | None, address: str | None, on_row: OnRow | None,
                on_dropped: Callable[[list[str]], None] | None) -> tuple[int, int]:
    table = ResultTable(out, table_columns(runs), scenario_hash=job.scenario_hash)
    if table.dropped and on_dropped is not None:
        on_dropped(table.dropped)
    todo = [run for run in runs if run.run_id not in table.done]
    skipped = len(runs) - len(todo)
    if not todo:
        return skipped, 0
    if backend == "local":
        count = min(workers or os.cpu_count() or 1, len(todo))  # no idle worker processes
        rows = _local(job, todo, count)
    else:
        rows = _ray(job, todo, address, workers)
    columns = table.columns
    done = 0
    # closing(): an interrupt here closes the generator at once, so its `finally` kills the
    # workers now, not whenever the suspended generator is collected (they ran on, and their
    # semaphores leaked).
    with contextlib.closing(rows):
        for row in rows:
            # a row in the table is a row counted and shown: a stop waits for all three
            with stops_deferred():
                table.append({c: row.get(c) for c in columns})
                done += 1
                if on_row is not None:
                    on_row(row, done, len(todo))
    return skipped, done
