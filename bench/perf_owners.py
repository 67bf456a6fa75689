"""Where the compiled hot path's time goes: `perf` samples charged to the compiled function
that owns them.

cProfile cannot see inside the mypyc-compiled modules (setup.py): `Simulation.run` shows as one
opaque call. Linux `perf` samples native stacks; this script charges each sample to the
innermost compiled function on its stack (`CPyDef_<module>___<Class>___<method>`, C helpers
and libpython calls included: a compiled function's dict lookups and allocations are its own
cost), or to "[interpreted]" when the interpreter's frame loop comes first (the pure-Python
modules), and prints the shares with each owner's hottest leaf symbols.

    perf record -F 1000 --call-graph dwarf,16384 -o perf.data \\
        python -m gpuscale simulate e2e.yaml --format json --out /tmp/out.json --force
    perf script -i perf.data -F ip,sym > perf.txt
    python bench/perf_owners.py perf.txt [TOP]

(`bench_e2e.py --keep e2e.yaml` writes issue 16's scenario.)
"""

from __future__ import annotations

import collections
import sys


def owners(text: str) -> tuple[int, collections.Counter[str], dict[str, collections.Counter[str]]]:
    total = 0
    shares: collections.Counter[str] = collections.Counter()
    leaves: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for sample in text.split("\n\n"):
        frames = [parts[1].strip() for line in sample.strip().splitlines()
                  if len(parts := line.split(None, 1)) == 2]
        if not frames:
            continue
        total += 1
        owner = "[other: GC, BLAS threads, start-up]"
        for frame in frames:
            if frame.startswith(("CPyDef_", "CPyPy_")):
                owner = frame.replace("CPyPy_", "CPyDef_", 1)
                break
            if frame == "_PyEval_EvalFrameDefault":
                owner = "[interpreted]"
                break
        shares[owner] += 1
        leaves[owner][frames[0]] += 1
    return total, shares, leaves


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
        total, shares, leaves = owners(f.read())
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    print(f"{total} samples")
    for owner, count in shares.most_common(top):
        hottest = ", ".join(f"{sym} {n}" for sym, n in leaves[owner].most_common(4))
        print(f"{100 * count / max(total, 1):5.1f}%  {owner}   ({hottest})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
