"""The process entry ends without the interpreter's teardown, and nothing a user sees is lost.

`cli.entry` (the console script, `python -m gpuscale`) runs atexit handlers, flushes stdout and
stderr, then `os._exit`s with the command's status (cli/process_exit.py); `cli.main(argv)`
returns as before. Each case runs a probe subcommand in a fresh interpreter: an object's
`__del__` prints "teardown" only when the interpreter's shutdown runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuscale.cli import process_exit

ROOT = Path(__file__).resolve().parents[2]

_PROBE_COMMAND = """
import atexit, builtins, os, sys, threading, time
import click


class Teardown:
    def __del__(self, write=os.write):  # late in a shutdown, module globals are None
        write(2, b"teardown\\n")


# Freed only by the interpreter's shutdown, near its end, when it clears the builtins (a module
# global would not do: the entry freezes it on the way out and the dict is in a cycle).
builtins.gpuscale_probe_kept = Teardown()


@click.command("probe")
@click.argument("how")
def command(how):
    atexit.register(lambda: print("atexit ran", file=sys.stderr))
    # Unflushed on purpose: stdout is a pipe here, so block-buffered until the exit flushes.
    sys.stdout.write("x" * 100_000 + "\\nend\\n")
    if how == "trace":
        sys.settrace(lambda *args: None)
    if how == "thread":
        threading.Thread(target=time.sleep, args=(0.2,)).start()
    if how == "fail":
        raise SystemExit(3)
    if how == "message":
        raise SystemExit("probe: a message")
    if how == "error":
        from gpuscale.errors import UserInputError

        raise UserInputError("probe: bad input")
"""

_ENTRY = """
import runpy, sys
import gpuscale.cli as cli_package

sys.path.insert(0, sys.argv.pop(1))
cli_package.SUBCOMMANDS["probe"] = ("probe_command", "probe")
sys.argv = ["gpuscale", *sys.argv[1:]]
runpy.run_module("gpuscale", run_name="__main__")
"""


def _run(tmp_path: Path, how: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "probe_command.py").write_text(_PROBE_COMMAND)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-c", _ENTRY, str(tmp_path), "probe", how],
                          capture_output=True, text=True, env=env, timeout=60)


def test_the_entry_skips_the_teardown_and_keeps_output_and_atexit(tmp_path):
    result = _run(tmp_path, "ok")
    assert result.returncode == 0
    assert result.stdout == "x" * 100_000 + "\nend\n"  # the buffered output, whole
    assert "atexit ran" in result.stderr
    assert "teardown" not in result.stderr


@pytest.mark.parametrize(("how", "status", "stderr"), [
    ("fail", 3, None),
    ("error", 2, "gpuscale: error: probe: bad input"),
    ("message", 1, "probe: a message"),  # not a number: the interpreter prints it
])
def test_the_exit_status_is_the_commands(tmp_path, how, status, stderr):
    result = _run(tmp_path, how)
    assert result.returncode == status
    assert result.stdout.endswith("end\n")
    assert "atexit ran" in result.stderr
    if stderr is not None:
        assert stderr in result.stderr


@pytest.mark.parametrize("how", ["trace", "thread"])
def test_a_tracer_or_a_live_thread_keeps_the_normal_exit(tmp_path, how):
    # A profiler prints after the command returns; a non-daemon thread is joined first.
    result = _run(tmp_path, how)
    assert result.returncode == 0
    assert result.stdout.endswith("end\n")
    assert "atexit ran" in result.stderr
    assert "teardown" in result.stderr


def test_the_non_number_status_keeps_the_normal_exit(tmp_path):
    assert "teardown" in _run(tmp_path, "message").stderr


class _Exited(Exception):
    pass


@pytest.fixture
def exits(monkeypatch):
    """os._exit and atexit recorded instead of run; the teardown deemed skippable."""
    calls: list[object] = []

    def fake_exit(code):
        calls.append(("exit", code))
        raise _Exited

    monkeypatch.setattr(process_exit, "can_skip_teardown", lambda: True)
    monkeypatch.setattr(process_exit.os, "_exit", fake_exit)
    import atexit

    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: calls.append("atexit"))
    return calls


def test_atexit_runs_before_the_exit_and_none_is_status_0(exits):
    with pytest.raises(_Exited):
        process_exit.exit_process(None)
    assert exits == ["atexit", ("exit", 0)]


def test_a_failing_flush_falls_back_to_the_normal_exit(exits, monkeypatch):
    class Broken:
        def flush(self):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", Broken())
    with pytest.raises(SystemExit) as info:
        process_exit.exit_process(0)
    assert info.value.code == 0
    assert exits == ["atexit"]  # run once; the interpreter's exit reports the pipe


@pytest.mark.parametrize("code", [256, -1, "message"])
def test_a_status_outside_0_255_takes_the_normal_exit(exits, code):
    with pytest.raises(SystemExit) as info:
        process_exit.exit_process(code)
    assert info.value.code == code
    assert exits == []


def test_main_with_argv_still_returns(capsys):
    # Callers passing argv (tests, bench/) go on after the command.
    from gpuscale.cli import main

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert "gpuscale" in capsys.readouterr().out


def test_the_console_script_and_python_m_use_the_entry():
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"gpuscale": "gpuscale.__main__:run"}  # run(): signals, then entry()
    main_text = (ROOT / "src" / "gpuscale" / "__main__.py").read_text()
    assert "    entry()\n" in main_text and "    run()\n" in main_text
