"""A/B two (or more) source trees on one scenario by the CPU time of `gpuscale simulate`.

    python bench/ab_cpu.py SCENARIO.yaml ROUNDS TREE [TREE ...]

Each round runs `python -m gpuscale simulate SCENARIO --format json --out ...` once per tree,
alternating, with PYTHONPATH=TREE/src, and prints the user + system seconds of the subprocess
(`getrusage(RUSAGE_CHILDREN)`) and its wall seconds; at the end the best of each. On a host
shared with other work, CPU seconds move far less than wall seconds. `bench_e2e.py --keep
FILE.yaml` writes the issue 16 scenario to use here.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _env(tree: str) -> dict[str, str]:
    # With the bytecode cache, as an installed package runs (the first round writes it).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(Path(tree) / "src")
    return env


def main() -> int:
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    scenario, rounds, trees = Path(sys.argv[1]).resolve(), int(sys.argv[2]), sys.argv[3:]
    runs: dict[str, list[tuple[float, float]]] = {t: [] for t in trees}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(rounds):
            for i, tree in enumerate(trees):
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.perf_counter()
                subprocess.run([sys.executable, "-m", "gpuscale", "simulate", str(scenario),
                                "--format", "json", "--out", f"{tmp}/out{i}.json", "--force"],
                               check=True, cwd=tree, stdout=subprocess.DEVNULL,
                               env=_env(tree))
                wall = time.perf_counter() - start
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
                runs[tree].append((cpu, wall))
                print(f"{tree}: cpu {cpu:.2f} s, wall {wall:.2f} s", flush=True)
    for tree, values in runs.items():
        print(f"{tree}: best cpu {min(c for c, _ in values):.2f} s, "
              f"best wall {min(w for _, w in values):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
