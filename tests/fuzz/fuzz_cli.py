"""Fuzz the command line itself, beside fuzz_inputs.py's file mutations (issue 30):

    PYTHONPATH=src python tests/fuzz/fuzz_cli.py --cases 300 --seed 1 [--classes env,numbers]

Case classes:
- `env`: a GPUSCALE_<COMMAND>_<OPTION> variable (by parameter name, by long option name, or a
  near miss) set to an odd value (nan, inf, 10^30, -1, empty, spaces, non-ASCII, a list, `true`).
- `numbers`: every numeric option of every command given a huge, negative, non-finite or
  fractional value.
- `files`: every input argument and output option given an unusual file kind: a directory, a
  FIFO (with a reader for outputs), /dev/null, /dev/zero, a symlink to /dev/zero, a dangling
  symlink, a symlink to a file that must stay as it was, a missing parent, a trailing slash, a
  300-byte name.
- `signals`: a run stopped by SIGINT or SIGTERM at a random moment while it writes --out.

Beyond the classes issue 30 listed:
- `names`: input and output paths with odd names (spaces, a newline, a tab, a leading dash,
  non-ASCII, bytes that are not UTF-8, shell metacharacters, quotes): a valid input under any
  of them runs (or a leading dash is one line), an output lands under exactly that name; an
  output naming the input (`--force` or not) or two outputs naming one file are refused before
  anything is written.
- `config`: a `.gpuscale.yaml` (or `$GPUSCALE_CONFIG`) of random sections, keys and YAML
  values (aliases, tags, NaN, huge, nested), or no mapping at all, binary, a directory, a FIFO,
  `/dev/zero`.
- `stdin`: `-` read from odd standard inputs: binary, NUL bytes, UTF-16, `/dev/zero`, empty,
  several documents, a million-item list.
- `argv`: the command line itself mutated: an option repeated with another value, a near-miss
  option, `--`, an empty argument, a 100,000-character one, bytes that are not UTF-8, `-o` with
  an unknown format.
- `traces`: a generic CSV trace of a few rows replayed through the example bundle, some
  fields extreme (1e15 s, 1e300, NaN, hex, underscores, 25 digits, denormals, full-width
  digits, a quoted comma).
- `race`: two processes writing the same `--out` at once (the file ends whole, from one of
  them, no temporary file left), and two sweeps on one table (one refused in one line).
- `determinism`: the same case twice under different PYTHONHASHSEED values, once on the
  pure-Python hot path: the same bytes out (`wall_s`, the run's own wall time, aside).

A case passes when it ends in time with a result or exactly one `gpuscale: error:` line (exit
2; audit may exit 1 on findings), writes nothing but the requested output, leaves no temporary
or lock file, and replaces no device or FIFO. Failures print with seed and case number.
"""

from __future__ import annotations

import argparse
import os
import random
import re
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


def _tiny_history() -> str:
    """A minute of the backtest example's vLLM series (OpenMetrics): 2 requests a scrape, 5
    scrapes; what `gpuscale backtest` needs to rebuild traffic and replay a bundle."""
    labels = 'namespace="chat",model_name="meta-llama/Llama-3.1-8B-Instruct"'
    families = {"vllm:time_to_first_token_seconds": ((0.1, 1.0), 0.05),
                "vllm:e2e_request_latency_seconds": ((1.0, 10.0), 2.0),
                "vllm:request_prompt_tokens": ((100.0, 1000.0), 300.0),
                "vllm:request_generation_tokens": ((100.0, 1000.0), 80.0)}
    lines = []
    for name, (bounds, mean) in families.items():
        lines.append(f"# TYPE {name} histogram")
        for k in range(5):
            t, count = 1_767_225_600 + 15 * k, 2.0 * k
            below = count if mean <= bounds[0] else 0.0
            for le in (*bounds, "+Inf"):
                value = below if le == bounds[0] else count
                lines.append(f'{name}_bucket{{{labels},le="{le}"}} {value} {t}')
            lines.append(f"{name}_sum{{{labels}}} {count * mean} {t}")
            lines.append(f"{name}_count{{{labels}}} {count} {t}")
    return "\n".join(lines) + "\n# EOF\n"


TINY_HISTORY = _tiny_history()


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
        "backtest": ["backtest", "--history", str(tmp / "h.om"), "--manifests",
                     str(ROOT / "examples" / "backtest" / "manifests")],
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
    elif kind == "link-to-victim":  # an output replaces the link; the file it names is kept
        (special / "victim.txt").write_text("victim\n")
        path.symlink_to(special / "victim.txt")
    elif kind == "missing-parent":
        return special / "no-such-dir" / "x.yaml"
    elif kind == "long-name":
        return special / ("n" * 300 + ".json")
    return path


FILE_KINDS = ["directory", "fifo", "dev-null", "dev-zero", "link-to-dev-zero", "dangling-link",
              "missing-parent", "long-name", "link-to-victim"]
INPUT_SLOTS = {"simulate": 1, "compare": 1, "audit": 1, "diagnose": 1, "plan": 1,
               "schedule": 1, "report": 1, "sweep": 1}
OUTPUT_OPTIONS = [("simulate", "--out"), ("simulate", "--report"), ("simulate", "--decisions"),
                  ("simulate", "--metrics-out"), ("compare", "--metrics-out"),
                  ("backtest", "--out"), ("backtest", "--emit-trace"),
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
    victim = tmp / "special" / "victim.txt"
    if victim.exists() and victim.read_text() != "victim\n":
        return "a file was written through a link to it"
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
                            start_new_session=True,  # SIGINT as at a terminal, not inherited
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
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


# ---------------------------------------------------------------- classes beyond issue 30's
ODD_NAMES = ["with space", "new\nline", "tab\there", "ünïcødé-日本", "-leading-dash",
             "bad-\udcff-utf8", "$(touch PWNED)", "quote'and\"double", "*", "semi;colon",
             "back\\slash", ".hidden", "trailing-dot."]


def _odd_name(rng: random.Random, suffix: str) -> str:
    return rng.choice(ODD_NAMES) + suffix


def _output_of(name: str, path: Path) -> str | None:
    """A problem with the JSON `name` wrote at `path` (None: whole JSON with runs)."""
    import json

    try:
        runs = json.loads(path.read_bytes()).get("runs")
    except (OSError, ValueError) as exc:
        return f"{name}: the output is not whole JSON ({exc.__class__.__name__})"
    return None if runs else f"{name}: the output has no runs"


def _files_in(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def _check_names(rng: random.Random, tmp: Path) -> tuple[str, str | None]:
    """Odd file names as input, as output, and an output naming the input."""
    mode = rng.choice(["input", "output", "input-as-output", "one-file-twice"])
    if mode in ("input-as-output", "one-file-twice"):
        # --out over the input (--force or not), or two outputs naming one file: refused
        # before any work, the input as it was, nothing written.
        flag = rng.choice(["--out", "--report", "--decisions"])
        args = (["simulate", "s.yaml", flag, rng.choice(["s.yaml", "./s.yaml"])]
                + (["--force"] if rng.random() < 0.5 else []) if mode == "input-as-output"
                else ["simulate", "s.yaml", "--out", "r.json", flag if flag != "--out"
                      else "--report", rng.choice(["r.json", "./r.json"])])
        before = _files_in(tmp)
        code, _, stderr = _run(args, tmp)
        label = " ".join(args[2:])
        if _files_in(tmp) != before:
            return label, "a file was written or replaced"
        return label, _verdict("simulate", code, stderr) or (
            None if code == 2 else f"exit {code}, not refused")
    name = _odd_name(rng, ".yaml" if mode == "input" else ".json")
    if mode == "input":
        os.rename(tmp / "s.yaml", tmp / name)
        code, _, stderr = _run(["simulate", name, "-o", "json"], tmp)
        label = f"input {name!r}"
        if code != 0 and not (name.startswith("-") and code == 2):
            return label, _verdict("simulate", code, stderr) or f"a valid input failed: {stderr}"
    else:
        code, _, stderr = _run(["simulate", "s.yaml", "--out", name], tmp)
        label = f"--out {name!r}"
        if code == 0:
            problem = _output_of(label, tmp / name)
            if problem:
                return label, problem
    if (tmp / "PWNED").exists():
        return label, "a name was run by a shell"
    return label, _verdict("simulate", code, stderr)


YAML_VALUES = [".nan", "-.inf", "1e400", str(10**30), "[1, 2]", "{a: 1}", "null", "~", "''",
               "!!binary aGk=", "!!python/object:os.system x", "*nowhere", "&a [*a]", "true",
               "-1", "0", "'x' ", "\"\\x1b[2J\"", "[[[[[[[[[[1]]]]]]]]]]", "2026-01-01", "0o17",
               "1_000", "'" + "y" * 5000 + "'", "{<<: {seeds: 2}}"]
CONFIG_FILES = ["[]\n", "just text\n", "", "---\nsimulate: {}\n---\ncompare: {}\n",
                "simulate:\n  seeds: 2\n  seeds: 3\n", "\ufeffsimulate: {seeds: 2}\n",
                "simulate: &x {seeds: 2}\ncompare: *x\n", "null\n", "simulate: []\n"]


def _config_case(rng: random.Random, tmp: Path) -> tuple[str, list[str], dict, str]:
    name, _, options = rng.choice(list(_commands()))
    args, env = _base_args(name, tmp), {}
    choice = rng.random()
    config = tmp / ".gpuscale.yaml"
    if choice < 0.6:
        section = rng.choice([name, name, name.upper(), "bogus", "0", "'simulate '"])
        key = rng.choice([*(o.name or "x" for o in options), "bogus-option", "-o", "--out"])
        value = rng.choice(YAML_VALUES)
        config.write_text(f"{section}:\n  {key}: {value}\n")
        label = f"{section}: {{{key}: {value[:40]}}}"
    elif choice < 0.8:
        text = rng.choice(CONFIG_FILES)
        config.write_text(text)
        label = f"file {text[:40]!r}"
    else:
        kind = rng.choice(["directory", "fifo", "binary", "dev-zero", "missing"])
        target = tmp / "special" / "config"
        target.parent.mkdir(exist_ok=True)
        if kind == "directory":
            config.mkdir()
            target = config
        elif kind == "fifo":
            os.mkfifo(target)
        elif kind == "binary":
            target.write_bytes(bytes(rng.randrange(256) for _ in range(200)))
        elif kind == "dev-zero":
            target = Path("/dev/zero")
        env = {"GPUSCALE_CONFIG": str(target)} if kind != "directory" else {}
        label = f"config {kind}"
    return name, args, env, label


STDIN_BODIES = {
    "binary": lambda rng: bytes(rng.randrange(256) for _ in range(4096)),
    "nul": lambda rng: b"name: x\n\x00\x00duration_s: 1\n",
    "utf-16": lambda rng: TINY.encode("utf-16"),
    "empty": lambda rng: b"",
    "two-documents": lambda rng: (TINY + "---\n" + TINY).encode(),
    "million-items": lambda rng: b"[" + b"1," * 1_000_000 + b"1]\n",
    "truncated": lambda rng: TINY.encode()[: rng.randrange(1, len(TINY))],
    "crlf": lambda rng: TINY.replace("\n", "\r\n").encode(),
}


def _check_stdin(rng: random.Random, tmp: Path) -> tuple[str, str | None]:
    name = rng.choice(["simulate", "compare", "audit", "schedule"])
    kind = rng.choice([*STDIN_BODIES, "dev-zero", "directory"])
    label = f"{name} - < {kind}"
    if kind in ("dev-zero", "directory"):
        path = "/dev/zero" if kind == "dev-zero" else str(tmp)
        flags = os.O_RDONLY | (os.O_DIRECTORY if kind == "directory" else 0)
        fd = os.open(path, flags)
        try:
            code, _, stderr = _run([name, "-"], tmp, stdin=fd)
        finally:
            os.close(fd)
        return label, _verdict(name, code, stderr)
    body = tmp / "stdin.bin"
    body.write_bytes(STDIN_BODIES[kind](rng))
    with open(body, "rb") as handle:
        code, _, stderr = _run([name, "-"], tmp, stdin=handle.fileno())
    if kind == "crlf" and name in ("simulate", "compare") and code != 0:
        return label, f"a CRLF scenario failed: {stderr.strip()[-200:]!r}"
    return label, _verdict(name, code, stderr)


def _argv_case(rng: random.Random, tmp: Path) -> tuple[str, list, dict, str]:
    name = rng.choice(["simulate", "compare", "sweep", "report", "plan", "audit", "schedule"])
    args: list = _base_args(name, tmp)
    mutation = rng.choice(["repeat", "near-miss", "dashdash", "empty", "long", "bytes",
                           "format", "equals-empty", "help-and-junk"])
    if mutation == "repeat":
        args += rng.choice([["-o", "json", "-o", "yaml"], ["--seed", "1", "--seed", "2"],
                            ["--out", "a.json", "--out", "b.json"]])
    elif mutation == "near-miss":
        args.append(rng.choice(["--seedz", "--ou", "--out=", "---out", "-oo", "--Out"]))
    elif mutation == "dashdash":
        args = [args[0], "--", *args[1:]]
    elif mutation == "empty":
        args.insert(rng.randrange(1, len(args) + 1), "")
    elif mutation == "long":
        args.append("x" * 100_000)
    elif mutation == "bytes":
        args.append(b"--out=\xff\xfe.json" if rng.random() < 0.5 else b"\xff\xfe.yaml")
    elif mutation == "format":
        args += ["-o", rng.choice(["xml", "JSON", "", "json,yaml"])]
    elif mutation == "equals-empty":
        args.append(rng.choice(["--seed=", "--out=", "--format="]))
    else:
        args += ["--help", "--bogus", "x" * 50]
    return name, args, {}, mutation


def _check_race(rng: random.Random, tmp: Path) -> tuple[str, str | None]:
    """Two processes on one output at once."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    sweep = rng.random() < 0.4
    args = (["sweep", "s.yaml", "--grid", "g.yaml", "--out", "t.csv", "--workers", "1"]
            if sweep else ["simulate", "s.yaml", "--out", "r.json", "--force"])
    procs = [subprocess.Popen([sys.executable, "-m", "gpuscale", *args], cwd=tmp, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = []
    for proc in procs:
        _, stderr = proc.communicate(timeout=300)
        results.append((proc.returncode, stderr))
    label = "two sweeps on one table" if sweep else "two simulates on one --out"
    for code, stderr in results:
        if (problem := _verdict(args[0], code, stderr)) is not None:
            return label, problem
    if sweep:
        import csv

        with open(tmp / "t.csv", newline="") as table:
            rows = list(csv.DictReader(table))
        if len(rows) != 2:  # two grid points, whichever sweep ran them
            return label, f"{len(rows)} rows in the table, not 2"
        return label, None
    return label, _output_of(label, tmp / "r.json")


def _check_determinism(rng: random.Random, tmp: Path) -> tuple[str, str | None]:
    name = rng.choice(["simulate", "compare", "schedule"])
    seed = str(rng.randrange(0, 2**32))
    args = _base_args(name, tmp) + ["-o", "json"]
    if name != "schedule":
        args += ["--seed", seed]
    outputs = []
    for hash_seed, pure in ((rng.randrange(1, 10**6), "0"), (rng.randrange(1, 10**6), "1")):
        code, stdout, stderr = _run(args, tmp, {"PYTHONHASHSEED": str(hash_seed),
                                                "GPUSCALE_PURE": pure})
        if code != 0:
            return f"{name} --seed {seed}", _verdict(name, code, stderr) or f"exit {code}"
        # `wall_s` is the run's own wall-clock time, the one field that is no result
        outputs.append(re.sub(r'"wall_s": [0-9.e+-]+', '"wall_s": ?', stdout))
    same = outputs[0] == outputs[1]
    return f"{name} --seed {seed}", None if same else "different bytes across hash seeds/paths"


TRACE_VALUES = ["1e15", "1e300", "-1", "nan", "inf", "0", "1_0", "0x10", "1e-320", "", " ",
                "9" * 25, "1.5", "+5", "\uff11\uff10", "-0", "1e5", "2147483648", "1,5"]


def _traces_case(rng: random.Random, tmp: Path) -> tuple[str, list[str], dict, str]:
    """A generic CSV trace of a few rows, some fields extreme, replayed through the example
    bundle (a trace's span, counts and token sizes past what a run can hold)."""
    rows, odd = [], []
    for i in range(rng.randrange(1, 40)):
        row = [f"{i * rng.choice([0.1, 1.0, 30.0]):g}", str(rng.randrange(1, 4000)),
               str(rng.randrange(1, 1000))]
        if rng.random() < 0.15:
            column = rng.randrange(3)
            row[column] = rng.choice(TRACE_VALUES)
            odd.append(f"{'apo'[column]}={row[column]!r}")
        rows.append(",".join(row))
    (tmp / "t.csv").write_text("arrival_s,prompt_tokens,output_tokens\n" + "\n".join(rows)
                               + "\n")
    example = ROOT / "examples" / "my-cluster"
    args = ["simulate", "--manifests", str(example / "manifests"), "--catalog",
            str(example / "catalog.yaml"), "--trace", "t.csv", "-o", "json"]
    return "simulate", args, {}, f"{len(rows)} rows {' '.join(odd) or 'plain'}"


CLASSES = {"env": _case_env, "numbers": _case_numbers, "files": _case_files,
           "config": _config_case, "argv": _argv_case, "traces": _traces_case}
# Classes that run and judge their own cases: (label, problem or None).
CHECKS = {"names": _check_names, "stdin": _check_stdin, "race": _check_race,
          "determinism": _check_determinism}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--classes", default=",".join([*CLASSES, "signals", *CHECKS]))
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
            (tmp / "h.om").write_text(TINY_HISTORY)
            if kind == "signals":
                problem, label = _signal_case(rng, tmp), "signal"
                problem = problem or (f"leftovers {_leftovers(tmp, set())}"
                                      if _leftovers(tmp, set()) else None)
            elif kind in CHECKS:
                label, problem = CHECKS[kind](rng, tmp)
                problem = problem or _check_specials(tmp) or (
                    f"leftovers {left}" if (left := _leftovers(tmp, set())) else None)
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
