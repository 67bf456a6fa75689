"""Fuzz every command that reads a file with mutated examples and generated hostile shapes.

    PYTHONPATH=src python tests/fuzz/fuzz_inputs.py --cases 2000 --seed 1 [--commands audit,plan]

Each case writes one mutated input and runs the command in-process (click's CliRunner) under
an alarm. A case passes when it ends in time with a result or exactly one `gpuscale: error:`
line and exit code 2 (audit: 0, 1 or 2). Failures are printed with the seed and case number
and the input is kept under --keep, so a maintainer can replay it. Deterministic per seed.
"""

from __future__ import annotations

import argparse
import random
import signal
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]

HOSTILE_SCALARS = [
    ".nan", ".inf", "-.inf", "1.0e+400", "'1e400'", "'nan'", "9" * 5000, "-9223372036854775809",
    "!!bool maybe", "!!int abc", "!!timestamp notatime", "!!float x", "!!set {a}", "!Ref x",
    "!!python/object:os.system x", "'[/] [bold]x'", "\"\\e[2J\\e]8;;http://x\\a\"", "{<<: 5}",
    "{<<: [1, 2]}", "'" + "x" * 100_000 + "'", "0", "-1", "1e-12", "1e9", "'" + "a" * 300 + "'",
    "'prod\"} or vector(1000)'", "'not a cron'", "'*/0 * * * *'", "'0 0 99 * *'", "~", "[]", "{}",
]


def _bomb(levels: int = 9, width: int = 10) -> str:
    lines = ["b0: &b0 [" + ", ".join(["lol"] * width) + "]"]
    lines += [f"b{i}: &b{i} [" + ", ".join([f"*b{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def _scalar_lines(text: str) -> list[int]:
    return [i for i, line in enumerate(text.splitlines()) if ":" in line
            and not line.rstrip().endswith(":") and not line.lstrip().startswith("#")]


def mutate(text: str, rng: random.Random) -> str:
    """One mutation of a YAML text, chosen by `rng`."""
    lines = text.splitlines()
    choice = rng.randrange(9)
    candidates = _scalar_lines(text)
    if choice <= 2 and candidates:  # a value replaced by a hostile one
        i = rng.choice(candidates)
        key = lines[i].split(":", 1)[0]
        lines[i] = f"{key}: {rng.choice(HOSTILE_SCALARS)}"
    elif choice == 3 and candidates:  # a duplicate key
        i = rng.choice(candidates)
        lines.insert(i + 1, lines[i])
    elif choice == 4:  # an alias bomb, used somewhere
        i = rng.choice(candidates) if candidates else 0
        if candidates:
            lines[i] = lines[i].split(":", 1)[0] + ": *b8"
        return _bomb() + "\n".join(lines) + "\n"
    elif choice == 5:  # deep nesting
        depth = rng.choice([150, 1_500, 10_000])
        return text + "\nzz: " + "[" * depth + "]" * depth + "\n"
    elif choice == 6:  # truncated
        return text[: rng.randrange(max(1, len(text)))]
    elif choice == 7:  # random bytes spliced in
        at = rng.randrange(max(1, len(text)))
        junk = "".join(chr(rng.randrange(1, 0x2FF)) for _ in range(rng.randrange(1, 8)))
        return text[:at] + junk + text[at:]
    else:  # a whole value's type swapped
        if candidates:
            i = rng.choice(candidates)
            lines[i] = (
                lines[i].split(":", 1)[0] + ": " + rng.choice(["[1, 2]", "{a: 1}", "'x'", "true"])
            )
    return "\n".join(lines) + "\n"


def seeds() -> dict[str, list[Path]]:
    examples = ROOT / "examples"
    return {
        "simulate": sorted(examples.glob("*/scenario.yaml")),
        "plan": sorted((examples / "plans").glob("*.yaml")),
        "audit": sorted((ROOT / "tests" / "audit" / "fixtures").glob("*/*.yaml"))[:200],
    }


def args_for(command: str, path: Path, tmp: Path) -> list[str]:
    if command == "simulate":
        return ["simulate", str(path), "--format", "json"]
    if command == "plan":
        return ["plan", str(path), "--no-simulate", "--format", "json"]
    return ["audit", str(path)]


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def run_case(command: str, text: str, tmp: Path, limit_s: int) -> str | None:
    """None when the case ends acceptably, else what went wrong."""
    from click.testing import CliRunner

    from gpuscale.cli import cli

    path = tmp / "input.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(limit_s)
    start = time.perf_counter()
    try:
        result = CliRunner().invoke(cli, args_for(command, path, tmp))
    except _Timeout:
        return f"no answer within {limit_s} s"
    finally:
        signal.alarm(0)
    if isinstance(result.exception, _Timeout):
        return f"no answer within {limit_s} s"
    ok_codes = {0, 1, 2} if command == "audit" else {0, 2}
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return f"{type(result.exception).__name__}: {str(result.exception)[:200]}"
    if result.exit_code not in ok_codes:
        return f"exit code {result.exit_code}"
    errors = [line for line in result.output.splitlines() if line.startswith("gpuscale: error:")]
    if result.exit_code == 2 and (len(errors) != 1 or "\x1b" in result.output):
        return f"exit 2 without exactly one clean error line: {result.output[:200]!r}"
    del start
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--commands", default="audit,plan,simulate")
    parser.add_argument("--limit-s", type=int, default=20)
    parser.add_argument("--keep", type=Path, default=None, help="Keep failing inputs here.")
    options = parser.parse_args(argv)
    rng = random.Random(options.seed)
    pools = {c: p for c, p in seeds().items() if c in options.commands.split(",") and p}
    failures = 0
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for case in range(options.cases):
            command = rng.choice(sorted(pools))
            source = rng.choice(pools[command])
            text = mutate(source.read_text(), rng)
            problem = run_case(command, text, tmp, options.limit_s)
            if problem:
                failures += 1
                print(f"seed {options.seed} case {case}: {command} {source.name}: {problem}")
                if options.keep:
                    options.keep.mkdir(parents=True, exist_ok=True)
                    (options.keep / f"{options.seed}-{case}-{command}.yaml").write_text(
                        text, errors="surrogatepass")
    print(f"{options.cases} cases, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    assert yaml  # the fixtures are YAML; imported here so a missing PyYAML fails early
    sys.exit(main())
