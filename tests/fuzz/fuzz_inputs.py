"""Fuzz every command that reads a file with mutated examples and generated hostile shapes.

    PYTHONPATH=src python tests/fuzz/fuzz_inputs.py --cases 2000 --seed 1 [--commands audit,plan]

Commands: audit, plan, simulate (scenario files); manifests (`simulate --manifests DIR --trace
FILE --catalog FILE`, one of the bundle's files mutated: a manifest, the trace, the catalog or a
model's config.json); rows (`calibrate --rows FILE`); fit (`calibrate --fit FILE`, bench-serve
JSON lines or a Prometheus query_range export).

Each case writes one mutated input and runs the command in-process (click's CliRunner) under
an alarm. A case passes when it ends in time with a result or exactly one `gpuscale: error:`
line and exit code 2 (audit: 0, 1 or 2). Failures are printed with the seed and case number
and the input is kept under --keep, so a maintainer can replay it. Deterministic per seed.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
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


HOSTILE_JSON: list[object] = [
    math.nan, math.inf, -math.inf, 1e308, -1, 0, -1e-12, 2**70, "", "x", "nan", "inf", None,
    True, [], {}, [1, 2], {"a": 1}, "9" * 5000, [[[[[[[[[[]]]]]]]]]],
]


def _json_nodes(node, path=()):
    yield path, node
    items = node.items() if isinstance(node, dict) else (
        enumerate(node) if isinstance(node, list) else ())
    for key, child in items:
        yield from _json_nodes(child, (*path, key))


def mutate_json(text: str, rng: random.Random) -> str:
    """One mutation of a JSON (or JSON lines) text: a value replaced, deleted or retyped, or the
    text itself broken (truncated, spliced, deeply nested)."""
    choice = rng.randrange(8)
    if choice == 6:
        return text[: rng.randrange(max(1, len(text)))]
    if choice == 7:
        depth = rng.choice([150, 1_500, 10_000])
        at = rng.randrange(max(1, len(text)))
        return text[:at] + "[" * depth + "]" * depth + text[at:]
    try:
        docs, lines_format = [json.loads(text)], False
    except ValueError:  # JSON lines (bench-serve appends one object a run)
        docs, lines_format = [json.loads(ln) for ln in text.splitlines() if ln.strip()], True
    k = rng.randrange(len(docs))
    nodes = [(path, node) for path, node in _json_nodes(docs[k]) if path]
    if nodes:
        # Leaves and containers alike; weight toward the keys that carry numbers.
        path, _ = rng.choice(nodes)
        parent = docs[k]
        for key in path[:-1]:
            parent = parent[key]
        if choice <= 3:
            parent[path[-1]] = rng.choice(HOSTILE_JSON)
        elif choice == 4:
            del parent[path[-1]]
        elif isinstance(parent, dict):  # a duplicate key with another value, written by hand
            dumped = json.dumps(docs[k])
            key = json.dumps(path[-1])
            docs[k] = None
            dup = dumped[:-1] + f", {key}: {json.dumps(rng.choice(HOSTILE_JSON))}}}"
            out = [dup if d is None else json.dumps(d) for d in docs]
            return "\n".join(out) + "\n" if lines_format else out[0]
        else:
            parent[path[-1]] = [parent[path[-1]]] * rng.choice([2, 1_000])
    else:
        docs[k] = rng.choice(HOSTILE_JSON)
    out = [json.dumps(d) for d in docs]
    return "\n".join(out) + "\n" if lines_format else out[0]


def mutate_csv(text: str, rng: random.Random) -> str:
    """One mutation of a trace CSV: a cell replaced, a header renamed, a row torn or reordered."""
    lines = text.splitlines()
    choice = rng.randrange(6)
    i = rng.randrange(1, len(lines)) if len(lines) > 1 else 0
    cells = lines[i].split(",")
    if choice <= 2:
        j = rng.randrange(len(cells))
        cells[j] = rng.choice(["nan", "inf", "-inf", "-1", "1e400", "", "x", "0", "1e12",
                               "-0", "9" * 400, '"1,2"'])
        lines[i] = ",".join(cells)
    elif choice == 3:
        lines[0] = lines[0].replace(rng.choice(lines[0].split(",")), rng.choice(["", "x", "ts"]))
    elif choice == 4:
        lines[i] = ",".join(cells[: rng.randrange(len(cells))])
    else:
        rng.shuffle(lines)
    return "\n".join(lines) + "\n"


KIND_SWAPS = ["Bogus", "", "Deployment", "StatefulSet", "LeaderWorkerSet",
              "HorizontalPodAutoscaler", "ScaledObject", "NodePool", "EC2NodeClass",
              "CapacityBuffer", "PodDisruptionBudget", "Queue", "PodGroup", "ConfigMap", "List"]


def mutate_manifest(text: str, rng: random.Random) -> str:
    """A YAML mutation, or a manifest's kind or apiVersion swapped for another's."""
    lines = text.splitlines()
    kinds = [i for i, line in enumerate(lines) if line.startswith(("kind:", "apiVersion:"))]
    if kinds and rng.random() < 0.25:
        i = rng.choice(kinds)
        if lines[i].startswith("kind:"):
            lines[i] = f"kind: {rng.choice(KIND_SWAPS) or '~'}"
        else:
            lines[i] = "apiVersion: " + rng.choice(["v9", "x/y/z", "~", "keda.sh/v1alpha1"])
        return "\n".join(lines) + "\n"
    return mutate(text, rng)


def bundles() -> list[tuple[Path, Path, Path]]:
    """(manifests dir or file, trace, catalog) for `simulate --manifests`."""
    mine = ROOT / "examples" / "my-cluster"
    trace = mine / "trace.csv"
    found = [(mine / "manifests", trace, mine / "catalog.yaml")]
    importer = ROOT / "tests" / "importer" / "bundles"
    found += [(b, trace, importer / "catalog.yaml") for b in sorted(importer.glob("b*"))]
    return found


def fit_seeds(tmp: Path) -> list[Path]:
    """A bench-serve result and a Prometheus export, written by the tests' generators."""
    sys.path.insert(0, str(ROOT))
    from tests.calibration.test_fit import synthetic_bench, synthetic_export

    out = tmp / "fit-seeds"
    out.mkdir(exist_ok=True)
    synthetic_bench(out / "bench.jsonl", n=60)
    synthetic_export(out / "prom.json")
    return [out / "bench.jsonl", out / "prom.json"]


def rows_seeds(tmp: Path) -> list[Path]:
    """Small rows (each runs in well under a second) covering the workload kinds."""
    out = tmp / "rows-seeds"
    out.mkdir(exist_ok=True)
    row = """rows:
  - id: my-h100-point
    source: free text
    gpu: H100-SXM
    model: Llama-3.3-70B
    weights: fp8
    kv_cache: fp8
    tp: 2
    replicas: 1
    engine: {kind: trtllm, max_num_seqs: 256, max_num_batched_tokens: 8192, cuda_graphs: true}
    workload:
      kind: closed_loop
      concurrency: 4
      requests: 16
      prompt_tokens: {kind: fixed, value: 500}
      output_tokens: {kind: fixed, value: 50}
    checks:
      - {statistic: itl_mean_s, measured: 0.0597, tolerance: 0.30}
"""
    offline = row.replace("kind: closed_loop\n      concurrency: 4", "kind: offline").replace(
        "itl_mean_s", "output_tokens_per_s")
    (out / "closed.yaml").write_text(row)
    (out / "offline.yaml").write_text(offline)
    return [out / "closed.yaml", out / "offline.yaml"]


def seeds() -> dict[str, list[Path]]:
    examples = ROOT / "examples"
    return {
        "simulate": sorted(examples.glob("*/scenario.yaml")),
        "plan": sorted((examples / "plans").glob("*.yaml")),
        "audit": sorted((ROOT / "tests" / "audit" / "fixtures").glob("*/*.yaml"))[:200],
    }


def manifests_case(bundle: tuple[Path, Path, Path], rng: random.Random,
                   tmp: Path) -> tuple[str, list[str], dict[str, str]]:
    """Copy a bundle (manifests, trace, catalog, config.json files) into tmp, mutate one file.
    Returns (what was mutated, the command's arguments, {name: text} of the mutated file)."""
    manifests, trace, catalog = bundle
    case = tmp / "bundle"
    shutil.rmtree(case, ignore_errors=True)
    (case / "manifests").mkdir(parents=True)
    for f in ([manifests] if manifests.is_file() else sorted(manifests.iterdir())):
        if f.is_file():
            shutil.copy(f, case / "manifests" / f.name)
    shutil.copy(trace, case / "trace.csv")
    shutil.copy(catalog, case / "catalog.yaml")
    for config in catalog.parent.glob("*.config.json"):
        shutil.copy(config, case / config.name)
    targets = sorted(p for p in case.rglob("*") if p.is_file())
    target = rng.choice(targets)
    text = target.read_text()
    if target.suffix == ".json":
        text = mutate_json(text, rng)
    elif target.suffix == ".csv":
        text = mutate_csv(text, rng)
    elif target.parent.name == "manifests":
        text = mutate_manifest(text, rng)
    else:
        text = mutate(text, rng)
    target.write_text(text, encoding="utf-8", errors="surrogatepass")
    args = ["simulate", "--manifests", str(case / "manifests"), "--trace", str(case / "trace.csv"),
            "--catalog", str(case / "catalog.yaml"), "--format", "json"]
    return str(target.relative_to(case)), args, {target.name: text}


def args_for(command: str, path: Path, tmp: Path) -> list[str]:
    if command == "rows":
        return ["calibrate", "--rows", str(path), "--format", "json"]
    if command == "fit":
        return ["calibrate", "--fit", str(path), "--gpu", "H100-SXM", "--model", "Llama-3.1-8B",
                "--format", "json"]
    if command == "simulate":
        return ["simulate", str(path), "--format", "json"]
    if command == "plan":
        return ["plan", str(path), "--no-simulate", "--format", "json"]
    return ["audit", str(path)]


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def run_case(command: str, text: str | None, tmp: Path, limit_s: int,
             args: list[str] | None = None, suffix: str = ".yaml") -> str | None:
    """None when the case ends acceptably, else what went wrong. `args` given: the files are
    already written (a manifests bundle)."""
    from click.testing import CliRunner

    from gpuscale.catalog.specs import set_user_engine_overrides, set_user_entries
    from gpuscale.cli import cli

    if args is None:
        path = tmp / f"input{suffix}"
        path.write_text(text or "", encoding="utf-8", errors="surrogatepass")
        args = args_for(command, path, tmp)
    # --catalog entries live in module state: clear them so one case cannot leak into the next.
    set_user_entries({}, {}, {})
    set_user_engine_overrides({})
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(limit_s)
    start = time.perf_counter()
    try:
        result = CliRunner().invoke(cli, args)
    except _Timeout:
        return f"no answer within {limit_s} s"
    finally:
        signal.alarm(0)
    if isinstance(result.exception, _Timeout):
        return f"no answer within {limit_s} s"
    # audit exits 1 on findings; calibrate exits 1 when a row misses its tolerance.
    ok_codes = {0, 1, 2} if command in ("audit", "rows") else {0, 2}
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
    parser.add_argument("--commands", default="audit,plan,simulate,manifests,rows,fit")
    parser.add_argument("--limit-s", type=int, default=20)
    parser.add_argument("--keep", type=Path, default=None, help="Keep failing inputs here.")
    options = parser.parse_args(argv)
    rng = random.Random(options.seed)
    failures = 0
    wanted = options.commands.split(",")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        pools: dict[str, list] = {c: p for c, p in seeds().items() if c in wanted and p}
        if "manifests" in wanted:
            pools["manifests"] = bundles()
        if "rows" in wanted:
            pools["rows"] = rows_seeds(tmp)
        if "fit" in wanted:
            pools["fit"] = fit_seeds(tmp)
        for case in range(options.cases):
            command = rng.choice(sorted(pools))
            source = rng.choice(pools[command])
            if command == "manifests":
                what, args, kept = manifests_case(source, rng, tmp)
                problem = run_case(command, None, tmp, options.limit_s, args=args)
                label = f"{source[0].name}/{what}"
            else:
                mutator = mutate_json if command == "fit" else mutate
                text = mutator(source.read_text(), rng)
                problem = run_case(command, text, tmp, options.limit_s, suffix=source.suffix)
                label, kept = source.name, {source.name: text}
            if problem:
                failures += 1
                print(f"seed {options.seed} case {case}: {command} {label}: {problem}",
                      flush=True)
                if options.keep:
                    options.keep.mkdir(parents=True, exist_ok=True)
                    for name, body in kept.items():
                        (options.keep / f"{options.seed}-{case}-{command}-{name}").write_text(
                            body, errors="surrogatepass")
    print(f"{options.cases} cases, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    assert yaml  # the fixtures are YAML; imported here so a missing PyYAML fails early
    sys.exit(main())
