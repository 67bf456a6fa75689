"""A sweep stopped by Ctrl-C (SIGINT to the process group), by SIGINT to the sweep process
alone, or by SIGTERM ends in one line and exit 2: no KeyboardInterrupt traceback per worker,
no worker left running, no leaked-semaphore warning, and no `OUT.lock` left behind (issue 30).
A finished sweep leaves no lock file either, and the rows written before the stop resume."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuscale.cli import cli

from ..poisson_scenario import KEDA_QUEUE, poisson_scenario

# Runs of a few seconds each, so the signal lands while workers are busy.
SLOW = poisson_scenario("slow", duration_s=3000, rate_per_s=8, strategies=KEDA_QUEUE,
                        drain_s=60)
GRID = 'parameters:\n  "strategies[keda].autoscaler.triggers[0].threshold": [2, 3, 4, 5, 6, 7]\n'
# 240 runs: still running, whatever the machine's speed, when the signal lands after 5 s.
LONG_GRID = GRID + "  seed: [" + ", ".join(map(str, range(1, 41))) + "]\n"


def _files(tmp_path: Path, grid_text: str = GRID) -> tuple[Path, Path]:
    scenario, grid = tmp_path / "s.yaml", tmp_path / "g.yaml"
    scenario.write_text(SLOW)
    grid.write_text(grid_text)
    return scenario, grid


@pytest.mark.parametrize("how", ["ctrl-c", "sigint-to-parent", "sigterm"])
def test_a_stopped_sweep_ends_in_one_line_and_leaves_nothing(tmp_path, how):
    scenario, grid = _files(tmp_path, LONG_GRID)
    out = tmp_path / "t.csv"
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpuscale", "sweep", str(scenario), "--grid", str(grid),
         "--out", str(out), "--workers", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    time.sleep(5)  # workers are started and simulating
    if how == "ctrl-c":  # the terminal sends SIGINT to the whole foreground process group
        os.killpg(proc.pid, signal.SIGINT)
    else:
        os.kill(proc.pid, signal.SIGINT if how == "sigint-to-parent" else signal.SIGTERM)
    stderr = _stderr_within_a_minute(proc)
    assert proc.returncode == 2, stderr
    lines = stderr.splitlines()
    progress = [ln for ln in lines if ln.startswith("[")]  # one line per finished run
    assert lines == [*progress, lines[-1]] and lines[-1].startswith(
        "gpuscale: error: sweep stopped by"), stderr
    assert "Traceback" not in stderr and "leaked" not in stderr
    assert f"after {len(progress)} new run(s)" in lines[-1]
    assert len(out.read_text().splitlines()) == 1 + len(progress)  # header + finished rows
    assert _group_gone(proc.pid), "worker processes survived the sweep"
    assert not (tmp_path / "t.csv.lock").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.yaml", "s.yaml", "t.csv"]


def _stderr_within_a_minute(proc: subprocess.Popen) -> str:
    """The sweep's stderr once it exits; its whole process group killed if it has not."""
    try:
        return proc.communicate(timeout=60)[1]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def _group_gone(pgid: int, within_s: float = 15.0) -> bool:
    """Whether every process of the sweep's group has exited (multiprocessing's forkserver
    and resource tracker follow the sweep out within a moment)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        alive = subprocess.run(["pgrep", "-g", str(pgid)], capture_output=True, text=True)
        if not alive.stdout.split():
            return True
        time.sleep(0.2)
    return False


def test_a_finished_sweep_leaves_no_lock_file(tmp_path):
    scenario, grid = _files(tmp_path)
    scenario.write_text(SLOW.replace("3000", "120").replace("rate_per_s: 8", "rate_per_s: 1"))
    out = tmp_path / "t.csv"
    result = CliRunner().invoke(cli, ["sweep", str(scenario), "--grid", str(grid), "--out",
                                      str(out), "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.yaml", "s.yaml", "t.csv"]
    assert len(out.read_text().splitlines()) == 7


def test_a_refused_sweep_leaves_no_lock_file(tmp_path):
    scenario, grid = _files(tmp_path)
    os.mkfifo(tmp_path / "t.csv")  # a FIFO as the table: refused, never read (it blocked)
    result = CliRunner().invoke(cli, ["sweep", str(scenario), "--grid", str(grid), "--out",
                                      str(tmp_path / "t.csv")])
    assert result.exit_code == 2 and "not a regular file" in result.output
    assert not (tmp_path / "t.csv.lock").exists()


# The sweep's entry with SIGTERM sent to itself right after the first run is submitted, while
# the stop is still held back for the workers being started (sweep/stopping.stops_deferred).
_STOP_WHILE_STARTING = """
import os, runpy, signal, sys
from concurrent.futures import ProcessPoolExecutor

submit = ProcessPoolExecutor.submit

def submit_then_stop(self, *args, **kwargs):
    future = submit(self, *args, **kwargs)
    if not getattr(submit_then_stop, "sent", False):
        submit_then_stop.sent = True
        os.kill(os.getpid(), signal.SIGTERM)
    return future

ProcessPoolExecutor.submit = submit_then_stop
sys.argv = ["gpuscale", *sys.argv[1:]]
runpy.run_module("gpuscale", run_name="__main__")
"""


def _patched_sweep(script: str, tmp_path: Path, workers: int, grid_text: str = GRID
                   ) -> tuple[subprocess.Popen, str, Path]:
    """A sweep run by `script` (gpuscale with a stop patched in): the process, its stderr
    and the table it wrote to."""
    scenario, grid = _files(tmp_path, grid_text)
    out = tmp_path / "t.csv"
    proc = subprocess.Popen(
        [sys.executable, "-c", script, "sweep", str(scenario), "--grid", str(grid), "--out",
         str(out), "--workers", str(workers)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    return proc, _stderr_within_a_minute(proc), out


def test_a_stop_while_the_workers_start_stops_them_too(tmp_path):
    # The held-back stop was raised after the pool was made but before the block that kills
    # it on a stop: the line was printed, then the process waited at exit for the pool to
    # run all 240 runs (found by the interrupt test under load).
    proc, stderr, out = _patched_sweep(_STOP_WHILE_STARTING, tmp_path, 2, LONG_GRID)
    assert proc.returncode == 2, stderr
    assert stderr.splitlines() == [
        f"gpuscale: error: sweep stopped by SIGTERM after 0 new run(s) of the grid's 240; the "
        f"finished rows are in {out}, and the same command resumes it"], stderr
    assert _group_gone(proc.pid), "worker processes survived the sweep"
    assert not (tmp_path / "t.csv.lock").exists()


# SIGTERM sent to itself while the first finished row is being appended to the table.
_STOP_WHILE_APPENDING = """
import os, runpy, signal, sys
from gpuscale.sweep.table import ResultTable

append = ResultTable.append

def append_then_stop(self, row):
    append(self, row)
    os.kill(os.getpid(), signal.SIGTERM)

ResultTable.append = append_then_stop
sys.argv = ["gpuscale", *sys.argv[1:]]
runpy.run_module("gpuscale", run_name="__main__")
"""


def test_a_row_in_the_table_is_a_row_counted_and_shown(tmp_path):
    # A stop landing between a row's append and its progress line left the row in the table
    # but out of the count ("after 4 new run(s)" over 5 rows: the full suite under load).
    proc, stderr, out = _patched_sweep(_STOP_WHILE_APPENDING, tmp_path, 1)
    assert proc.returncode == 2, stderr
    lines = stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("[1/6] "), stderr
    assert "after 1 new run(s)" in lines[1]
    assert len(out.read_text().splitlines()) == 2  # the header and that row
