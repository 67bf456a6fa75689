"""Ctrl-C or SIGTERM while gpuscale starts (issue 30, found by tests/fuzz/fuzz_cli.py): while
click and the command are imported, a signal ended in a traceback from whichever import it hit
(`RuntimeError: Error calling __set_name__` when it landed while pydantic built a model), not
in the one line, exit 2, that a signal during the command gives."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]

# The process's entry as `python -m gpuscale` runs it, with a signal raised at the moment the
# named module is imported (an import hook), so the timing is the test's, not the machine's.
_STOP_AT_IMPORT = """
import os, runpy, signal, sys

MODULE, SIGNAL = sys.argv[1:3]

class StopAt:
    def find_spec(self, name, path=None, target=None):
        if name == MODULE:
            sys.meta_path.remove(self)
            if SIGNAL == "SIGTERM":
                os.kill(os.getpid(), signal.SIGTERM)
            else:
                raise KeyboardInterrupt
        return None

sys.meta_path.insert(0, StopAt())
sys.argv = ["gpuscale", *sys.argv[3:]]
runpy.run_module("gpuscale", run_name="__main__")
"""


def _stopped_at(module: str, signal_name: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-c", _STOP_AT_IMPORT, module, signal_name, *args],
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("module", ["click", "gpuscale.cli.pydantic_plugins",
                                    "gpuscale.cli.simulate", "pydantic"])
@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
def test_a_signal_while_the_command_is_imported_is_one_line(module, signal_name, tmp_path):
    result = _stopped_at(module, signal_name, "simulate", str(tmp_path / "s.yaml"),
                         "--out", str(tmp_path / "r.json"))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuscale: error: stopped by "), lines
    assert ("SIGTERM" in lines[0]) == (signal_name == "SIGTERM")
    assert list(tmp_path.iterdir()) == []


def test_an_interrupt_wrapped_by_python_while_a_class_is_built_is_one_line(tmp_path,
                                                                           monkeypatch):
    # Python 3.11 wraps an exception raised in `__set_name__` (pydantic's, while a command's
    # models are built) in a RuntimeError: it must still read as the interrupt it was.
    (tmp_path / "slow_command.py").write_text(textwrap.dedent("""
        import click

        class Field:
            def __set_name__(self, owner, name):
                raise KeyboardInterrupt

        class Model:
            value = Field()

        command = click.Command("slow", callback=lambda: None)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    from gpuscale import cli as cli_module

    monkeypatch.setitem(cli_module.SUBCOMMANDS, "slow", ("slow_command", "a test command"))
    result = CliRunner().invoke(cli_module.cli, ["slow"])
    assert result.exit_code == 2
    assert result.output.strip() == ("gpuscale: error: stopped by SIGINT (Ctrl-C); outputs are "
                                     "whole or not written")


def test_an_ordinary_error_with_no_interrupt_behind_it_is_not_read_as_one():
    from gpuscale.errors import Terminated, stopped_by

    try:
        try:
            raise KeyError("x")
        except KeyError as inner:
            raise RuntimeError("y") from inner
    except RuntimeError as exc:
        assert stopped_by(exc) is None
    assert stopped_by(RuntimeError("z").with_traceback(None)) is None
    wrapped = RuntimeError("built")
    wrapped.__cause__ = Terminated()
    assert stopped_by(wrapped) == "SIGTERM"
