"""`python -m gpuscale` is the same CLI as the `gpuscale` script (docs use both)."""

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run([sys.executable, "-m", "gpuscale", *args], capture_output=True,
                          text=True, env=env, timeout=60)


def test_module_entry_runs_a_subcommand():
    result = _run("calibrate", "--row", "A4")
    assert result.returncode == 0, result.stderr
    assert "Llama-3.1-8B KV bytes/token" in result.stdout


def test_module_entry_reports_usage_errors_with_exit_2():
    result = _run("calibrate", "--no-such-flag")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
