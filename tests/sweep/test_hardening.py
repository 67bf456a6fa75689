"""Sweeps against what goes wrong around them: a second sweep on the same table, a killed
parent, a table damaged on disk, a dead Ray address, grids with non-string keys."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gpuscale.errors import UserInputError
from gpuscale.sweep import expand_grid, run_sweep
from gpuscale.sweep.stopping import lock_table as _lock
from gpuscale.sweep.stopping import unlock_table as _unlock
from gpuscale.sweep.table import ResultTable, read_table

from ..report.scenarios import GRID, tiny
from .test_table import COLUMNS, row

SRC = Path(__file__).resolve().parents[2] / "src"


def test_a_second_sweep_on_the_same_out_is_refused_while_the_first_runs(tmp_path):
    out = tmp_path / "t.csv"
    held = _lock(out)
    try:
        with pytest.raises(UserInputError, match="another sweep is writing"):
            run_sweep(tiny(), Path("."), expand_grid({"runs": [{"seed": 1}]}, tiny()), out)
    finally:
        _unlock(*held)
    assert run_sweep(tiny(), Path("."), expand_grid({"runs": [{"seed": 1}]}, tiny()),
                     out, workers=1)[1] >= 1


@settings(max_examples=25, deadline=None)
@given(st.binary(min_size=1, max_size=40), st.booleans())
@example(b"\t", True)  # a whitespace-only line: read back as a one-cell row once, and crashed
def test_resume_keeps_every_good_row_whatever_the_last_line_is(junk, newline):
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.csv"
        table = ResultTable(path, COLUMNS, scenario_hash="h")
        for i in range(3):
            table.append(row(i))
        with path.open("ab") as handle:
            handle.write(junk.replace(b"\n", b"") + (b"\n" if newline else b""))
        dropped: list[str] = []
        again = ResultTable(path, COLUMNS, scenario_hash="h")
        dropped = again.dropped
        assert {"r0", "r1", "r2"} <= again.done
        again.append(row(3))
        rows = read_table(path)
        assert rows[:3] == [row(i) for i in range(3)] and rows[-1] == row(3)
        assert len(rows) in (4, 5)  # the junk dropped (or blank), or a row of its own
        if junk.replace(b"\n", b"").strip() and len(rows) == 4:
            assert dropped  # said, not silent


def test_non_utf8_bytes_in_a_row_drop_that_row_and_say_so(tmp_path):
    path = tmp_path / "t.csv"
    table = ResultTable(path, COLUMNS, scenario_hash="h")
    table.append(row(1))
    with path.open("ab") as handle:
        handle.write(b"r9,s,h,\xff\xfe,x,1\n")
    again = ResultTable(path, COLUMNS, scenario_hash="h")
    assert again.done == {"r1"} and again.dropped and "line 3" in again.dropped[0]


def test_a_corrupt_parquet_table_is_moved_aside_and_the_sweep_starts_over(tmp_path):
    pytest.importorskip("pyarrow")
    path = tmp_path / "t.parquet"
    path.write_bytes(b"PAR1 not really parquet")
    table = ResultTable(path, COLUMNS, scenario_hash="h")
    assert table.rows == [] and "moved to t.parquet.unreadable" in table.dropped[0]
    assert (tmp_path / "t.parquet.unreadable").read_bytes() == b"PAR1 not really parquet"


def test_a_dead_ray_address_is_refused_quickly(tmp_path):
    pytest.importorskip("ray", reason="Ray not installed (optional extra `ray`)")
    start = time.monotonic()
    with pytest.raises(UserInputError, match="no Ray cluster answers"):
        run_sweep(tiny(), Path("."), expand_grid({"runs": [{"seed": 1}]}, tiny()),
                  tmp_path / "t.csv", backend="ray", address="127.0.0.1:1")
    assert time.monotonic() - start < 20


def test_dead_address_check_without_ray():
    from gpuscale.sweep.runner import _check_reachable

    start = time.monotonic()
    with pytest.raises(UserInputError, match=r"no Ray cluster answers at 127\.0\.0\.1:1"):
        _check_reachable("127.0.0.1:1")
    assert time.monotonic() - start < 20


@pytest.mark.parametrize(("grid", "match"), [
    ({"parameters": {1: [1, 2]}}, "not a string"),
    ({"runs": [{True: 1}]}, "not a string"),
    ({"runs": [{"seed": 1}], "strategies": [1]}, "list of strategy names"),
])
def test_grids_with_non_string_keys_or_names_are_one_line(grid, match):
    with pytest.raises(UserInputError, match=match):
        expand_grid(grid, tiny())


def _children(pid: int) -> set[int]:
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.add(int(entry.name))
    return out


def _descendants(pid: int) -> set[int]:
    found, todo = set(), [pid]
    while todo:
        for child in _children(todo.pop()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc (Linux)")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_workers_die_with_a_killed_sweep(tmp_path, sig):
    """Each run here takes far longer than the 10 s allowed: a worker that finishes its run
    for nobody fails (they did, for over a minute)."""
    scenario, grid, out = tmp_path / "s.yaml", tmp_path / "g.yaml", tmp_path / "k.csv"
    long_runs = tiny(duration_s=40_000)
    long_runs["workload"] = dict(long_runs["workload"], duration_s=40_000)
    scenario.write_text(yaml.safe_dump(long_runs))
    grid.write_text(yaml.safe_dump(GRID))
    cmd = [sys.executable, "-c", "from gpuscale.cli import main; main()", "sweep", str(scenario),
           "--grid", str(grid), "--out", str(out), "--workers", "2"]
    proc = subprocess.Popen(cmd, env=dict(os.environ, PYTHONPATH=str(SRC)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    workers: set[int] = set()
    while time.monotonic() < deadline and proc.poll() is None and len(workers) < 3:
        workers = _descendants(proc.pid)  # forkserver + 2 workers
        time.sleep(0.05)
    assert workers, "no worker processes started"
    time.sleep(1.0)  # the workers are inside their first run
    proc.send_signal(sig)
    proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in workers):
        time.sleep(0.1)
    alive = [p for p in workers if Path(f"/proc/{p}").exists()
             and "Z" not in Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]]
    assert not alive, f"workers {alive} outlived the sweep"
