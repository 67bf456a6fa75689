"""Fuzz the command line itself, beside fuzz_inputs.py's file mutations (issue 30):

    PYTHONPATH=src python tests/fuzz/fuzz_cli.py --cases 300 --seed 1 [--classes env,numbers]

Case classes:
- `env`: a GPUSCALE_<COMMAND>_<OPTION> variable (by parameter name, by long option name, or a
  near miss) set to an odd value (nan, inf, 10^30, -1, empty, spaces, non-ASCII, a list, `true`).
- `numbers`: every numeric option of every command given a huge, negative, non-finite or
  fractional value.
- `files`: every input argument and output option given an unusual file kind: a directory, a
  FIFO (with a reader for outputs), /dev/null, /dev/zero, a symlink to /dev/zero, a dangling
  symlink, a missing parent, a trailing slash, a 300-byte name.
- `signals`: a run stopped by SIGINT or SIGTERM at a random moment while it writes --out.

A case passes when it ends in time with a result or exactly one `gpuscale: error:` line (exit
2; audit may exit 1 on findings), writes nothing but the requested output, leaves no temporary
or lock file, and replaces no device or FIFO. Failures print with seed and case number.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repository's root, for `tests.`
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.poisson_scenario import poisson_scenario

ROOT = Path(__file__).resolve().parents[2]

ONE = """  - name: one
    autoscaler: {kind: fixed, replicas: 1}
"""
TINY = poisson_scenario("tiny", duration_s=60, rate_per_s=0.5, prompt_tokens=200,
                        output_tokens=20, strategies=ONE)
GRID = 'parameters:\n  "strategies[one].autoscaler.replicas": [1, 2]\n'
ODD_VALUES = ["nan", "inf", "-inf", "1e400", str(10**30), "-1", "0", "", "   ", "1.5", "true",
              "[1, 2]", "{a: 1}", "ünïcødé", "\x1b[2J", "9" * 300, "-0", "0x10", "1_000"]
HUGE_NUMBERS = [str(10**30), str(2**63), str(2**64), "1e308", "1e400", "nan", "inf", "-1",
                "0", "0.5", "-inf", str(-(2**63) - 1), "99999999999"]


def _commands():
    import importlib

    import click

    from gpuscale.cli import SUBCOMMANDS

    for name, (module, _) in sorted(SUBCOMMANDS.items()):
        command = importlib.import_module(module).command
        yield name, command, [p for p in command.params if isinstance(p, click.Option)]


def _base_args(command: str, tmp: Path) -> list[str]:
    """Arguments that make `command` do real but small work from the case's files."""
    scenario, grid = tmp / "s.yaml", tmp / "g.yaml"
    return {
        "simulate": ["simulate", str(scenario)], "compare": ["compare", str(scenario)],
        "demo": ["demo", "--out", str(tmp / "demo.json"), "--force", "-o", "json"],
        "audit": ["audit", str(ROOT / "examples" / "my-cluster" / "manifests")],
        "diagnose": ["diagnose", str(ROOT / "examples" / "diagnose" / "snapshot.yaml")],
        "plan": ["plan", str(ROOT / "examples" / "plans" / "llama70b-fp8-h100-chat.yaml"),
                 "--no-simulate"],
        "schedule": ["schedule", str(ROOT / "examples" / "gang-partial-launch" /
                                     "karpenter.yaml")],
        "report": ["report", str(scenario), "--out", str(tmp / "r.html"), "--force"],
        "sweep": ["sweep", str(scenario), "--grid", str(grid), "--out", str(tmp / "t.csv"),
                  "--workers", "1"],
        "calibrate": ["calibrate", "--row", "A1"],
    }[command]


def _run(args: list[str], tmp: Path, env: dict | None = None, limit_s: int = 60,
         stdin: int | None = subprocess.DEVNULL) -> tuple[int | None, str, str]:
    full_env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), **(env or {}))
    try:
        done = subprocess.run([sys.executable, "-m", "gpuscale", *args], cwd=tmp, env=full_env,
                              capture_output=True, text=True, errors="backslashreplace",
                              timeout=limit_s, stdin=stdin)
    except subprocess.TimeoutExpired:
        return None, "", ""
    return done.returncode, done.stdout, done.stderr


def _verdict(command: str, code: int | None, stderr: str) -> str | None:
    if code is None:
        return "no answer in time"
    if "Traceback" in stderr:
        return "traceback: " + stderr.strip().splitlines()[-1][:160]
    ok = {0, 1, 2} if command in ("audit", "calibrate") else {0, 2}
    if code not in ok:
        return f"exit code {code}"
    errors = [ln for ln in stderr.splitlines() if ln.startswith("gpuscale: error:")]
    if code == 2 and len(errors) != 1:
        return f"exit 2 without exactly one error line: {stderr[-200:]!r}"
    return None


def _leftovers(tmp: Path, before: set[str]) -> list[str]:
    found = []
    for path in tmp.rglob("*"):
        name = path.name
        if name.endswith((".tmp", ".lock")) and str(path) not in before:
            found.append(str(path.relative_to(tmp)))
    return found


def _case_env(rng: random.Random, tmp: Path) -> tuple[str, list[str], dict, str]:
    name, _, options = rng.choice(list(_commands()))
    option = rng.choice(options)
    spelled = rng.choice([option.name or "x", *(o.lstrip("-") for o in option.opts
                                                 if o.startswith("--")), "bogus_option"])
    variable = f"GPUSCALE_{name.upper()}_{spelled.replace('-', '_').upper()}"
    value = rng.choice(ODD_VALUES)
    return name, _base_args(name, tmp), {variable: value}, f"{variable}={value!r}"


def _case_numbers(rng: random.Random, tmp: Path) -> tuple[str, list[str], dict, str]:
    import click

    numeric = [(n, c, o) for n, c, opts in _commands() for o in opts
               if isinstance(o.type, (click.types.IntParamType, click.types.FloatParamType))
               or type(o.type).__name__ == "SloFraction"]
    name, _, option = rng.choice(numeric)
    value = rng.choice(HUGE_NUMBERS)
    flag = next(o for o in option.opts if o.startswith("--"))
    args = _base_args(name, tmp)
    if name == "calibrate" and option.name != "tp":
        args = ["calibrate", "--fit", str(tmp / "missing.json"), "--gpu", "H100-SXM",
                "--model", "Llama-3.1-8B"]
    return name, [*args, flag, value], {}, f"{flag} {value}"


def _special(kind: str, tmp: Path) -> Path:
    """A path of `kind` under tmp (made fresh for each case)."""
    special = tmp / "special"
    special.mkdir(exist_ok=True)
    path = special / f"{kind}.yaml"
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-null":
        return Path("/dev/null")
    elif kind == "dev-zero":
        return Path("/dev/zero")
    elif kind == "link-to-dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "dangling-link":
        path.symlink_to(special / "nothing-here")
    elif kind == "missing-parent":
        return special / "no-such-dir" / "x.yaml"
    elif kind == "long-name":
        return special / ("n" * 300 + ".json")
    return path


FILE_KINDS = ["directory", "fifo", "dev-null", "dev-zero", "link-to-dev-zero", "dangling-link",
              "missing-parent", "long-name"]
INPUT_SLOTS = {"simulate": 1, "compare": 1, "audit": 1, "diagnose": 1, "plan": 1,
               "schedule": 1, "report": 1, "sweep": 1}
OUTPUT_OPTIONS = [("simulate", "--out"), ("simulate", "--report"), ("simulate", "--decisions"),
                  ("compare", "--out"), ("schedule", "--out"), ("report", "--out"),
                  ("sweep", "--out"), ("plan", "--out"), ("report", "--charts-dir")]


def _drain(path: Path) -> None:
    """A reader for a FIFO output (a writer with no reader blocks, as a shell's does)."""
    def read() -> None:
        with open(path, "rb") as handle:
            while handle.read(65536):
                pass
    threading.Thread(target=read, daemon=True).start()


def _case_files(rng: random.Random, tmp: Path) -> tuple[str, list[str], dict, str]:
    kind = rng.choice(FILE_KINDS)
    if rng.random() < 0.5:
        name = rng.choice(sorted(INPUT_SLOTS))
        args = _base_args(name, tmp)
        path = _special(kind, tmp)
        args[1] = str(path)
        if kind == "fifo":  # an input FIFO with no writer: refused, never opened
            pass
        return name, args, {}, f"input {kind}"
    name, flag = rng.choice(OUTPUT_OPTIONS)
    args = _base_args(name, tmp)
    path = _special(kind, tmp)
    if kind == "fifo":
        _drain(path)
    value = str(path) + ("/" if kind == "directory" and rng.random() < 0.5 else "")
    if flag in args:
        args[args.index(flag) + 1] = value
    else:
        args += [flag, value]
    return name, args, {}, f"{flag} {kind}"


def _check_specials(tmp: Path) -> str | None:
    """A FIFO or the system's devices still what they were (nothing renamed over them)."""
    fifo = tmp / "special" / "fifo.yaml"
    if fifo.exists() and not stat.S_ISFIFO(os.lstat(fifo).st_mode):
        return "the FIFO was replaced"
    for device in ("/dev/null", "/dev/zero"):
        if not stat.S_ISCHR(os.stat(device).st_mode):
            return f"{device} is no longer a device"
    return None


def _signal_case(rng: random.Random, tmp: Path) -> str | None:
    """A run stopped at a random moment while it works towards --out."""
    slow = poisson_scenario("slow", duration_s=40000, rate_per_s=10, prompt_tokens=200,
                            output_tokens=20, strategies=ONE)
    (tmp / "slow.yaml").write_text(slow)
    sweep = rng.random() < 0.4
    args = (["sweep", "slow.yaml", "--grid", "g.yaml", "--out", "t.csv", "--workers", "2"]
            if sweep else ["simulate", "slow.yaml", "--out", "r.json"])
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.Popen([sys.executable, "-m", "gpuscale", *args], cwd=tmp, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    time.sleep(rng.uniform(0.5, 6.0))
    signum = rng.choice([signal.SIGINT, signal.SIGTERM])
    if sweep and signum == signal.SIGINT and rng.random() < 0.5:
        os.killpg(proc.pid, signum)  # Ctrl-C: the whole process group
    else:
        proc.send_signal(signum)
    try:
        _, stderr = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return f"{args[0]} ignored {signal.Signals(signum).name}"
    if "Traceback" in stderr or "leaked" in stderr:
        return f"{args[0]} {signal.Signals(signum).name}: {stderr.strip()[-200:]!r}"
    if proc.returncode not in (0, 2):
        return f"{args[0]} {signal.Signals(signum).name}: exit {proc.returncode}"
    return None


CLASSES = {"env": _case_env, "numbers": _case_numbers, "files": _case_files}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--classes", default="env,numbers,files,signals")
    parser.add_argument("--limit-s", type=int, default=60)
    options = parser.parse_args(argv)
    rng = random.Random(options.seed)
    wanted = options.classes.split(",")
    failures = 0
    for case in range(options.cases):
        kind = rng.choice(wanted)
        with tempfile.TemporaryDirectory() as name:
            tmp = Path(name)
            (tmp / "s.yaml").write_text(TINY)
            (tmp / "g.yaml").write_text(GRID)
            if kind == "signals":
                problem, label = _signal_case(rng, tmp), "signal"
                problem = problem or (f"leftovers {_leftovers(tmp, set())}"
                                      if _leftovers(tmp, set()) else None)
            else:
                command, args, env, label = CLASSES[kind](rng, tmp)
                before = {str(p) for p in tmp.rglob("*")}
                code, _, stderr = _run(args, tmp, env, options.limit_s)
                problem = (_verdict(command, code, stderr) or _check_specials(tmp)
                           or (f"leftovers {left}" if (left := _leftovers(tmp, before))
                               else None))
                label = f"{command} {label}"
            shutil.rmtree(tmp / "special", ignore_errors=True)
        if problem:
            failures += 1
            print(f"seed {options.seed} case {case}: {kind}: {label}: {problem}", flush=True)
    print(f"{options.cases} cases, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
