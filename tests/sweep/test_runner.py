"""Sweeps give the same rows whatever runs them, and resume without repeating or losing a run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from gpuscale.errors import Interrupted
from gpuscale.sweep import expand_grid, read_table, run_sweep

from ..report.scenarios import GRID, tiny

SRC = Path(__file__).resolve().parents[2] / "src"


def by_id(rows: list[dict]) -> dict[str, dict]:
    out = {r["run_id"]: r for r in rows}
    assert len(out) == len(rows), "a run appears twice"
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict[str, dict]:
    """The 16-run sweep, in-process, one run after another."""
    out = tmp_path_factory.mktemp("ref") / "ref.csv"
    runs = expand_grid(GRID, tiny())
    assert run_sweep(tiny(), Path("."), runs, out, workers=1) == (0, 16)
    return by_id(read_table(out))


def test_two_worker_processes_give_the_same_rows(reference, tmp_path):
    out = tmp_path / "two.csv"
    run_sweep(tiny(), Path("."), expand_grid(GRID, tiny()), out, workers=2)
    assert by_id(read_table(out)) == reference
    # Different settings did give different results (the grid is not a no-op).
    assert len({r["cost_usd"] for r in reference.values()}) > 2


def test_an_interrupted_sweep_resumes_without_repeats_or_losses(reference, tmp_path):
    out = tmp_path / "int.csv"
    runs = expand_grid(GRID, tiny())

    def stop_after_five(row, done, total):
        if done == 5:
            raise KeyboardInterrupt

    # Ctrl-C reaches run_sweep as one Interrupted (exit 2 on the CLI), the table kept.
    with pytest.raises(Interrupted, match="after 5 new run"):
        run_sweep(tiny(), Path("."), runs, out, workers=2, on_row=stop_after_five)
    assert len(read_table(out)) == 5
    seen = []
    skipped, ran = run_sweep(tiny(), Path("."), runs, out, workers=2,
                             on_row=lambda row, done, total: seen.append(row["run_id"]))
    assert (skipped, ran) == (5, 11) and len(set(seen)) == 11
    assert by_id(read_table(out)) == reference


@pytest.mark.slow
def test_a_killed_sweep_process_resumes(reference, tmp_path):
    """SIGKILL the CLI mid-sweep (no clean-up runs), then run the same command again."""
    scenario, grid, out = tmp_path / "s.yaml", tmp_path / "g.yaml", tmp_path / "k.csv"
    scenario.write_text(yaml.safe_dump(tiny()))
    grid.write_text(yaml.safe_dump(GRID))
    cmd = [sys.executable, "-c", "from gpuscale.cli import main; main()", "sweep", str(scenario),
           "--grid", str(grid), "--out", str(out), "--workers", "1"]
    env = dict(os.environ, PYTHONPATH=str(SRC))
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and out.read_text().count("\n") >= 1 + 3:  # header + 3 rows
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = len(read_table(out))
    assert 3 <= done_before < 16, "the sweep was not killed halfway"
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert f"{done_before} already in" in result.stdout
    assert by_id(read_table(out)) == reference


@pytest.mark.slow
def test_ray_backend_gives_the_same_rows(reference, tmp_path):
    ray = pytest.importorskip("ray", reason="Ray not installed (optional extra `ray`)")
    os.environ.setdefault("RAY_DISABLE_IMPORT_WARNING", "1")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(SRC)}})
    try:
        out = tmp_path / "ray.csv"
        assert run_sweep(tiny(), Path("."), expand_grid(GRID, tiny()), out, backend="ray") == (
            0,
            16,
        )
        assert by_id(read_table(out)) == reference
    finally:
        ray.shutdown()


def test_ray_backend_without_ray_is_a_clear_error(monkeypatch, tmp_path):
    from gpuscale.errors import UserInputError

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(UserInputError, match=r"gpuscale\[ray\]"):
        run_sweep(tiny(), Path("."), expand_grid({"runs": [{"seed": 1}]}, tiny()),
                  tmp_path / "t.csv", backend="ray")
