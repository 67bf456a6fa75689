"""`gpuscale plan` of a 1.4-million-request day, timed (issue 27: within 10 minutes on the
2-core development machine; docs/benchmarks.md).

    python bench/plan_day.py [--workers 2] [--keep DIR]

The day is built here, not committed: ServeGen day a (826,738 requests) merged with a
deterministic 70 % of day b (the same service's other day, arrival times kept), sorted:
~1.4 M requests over 24 h, written as a generic CSV into a temporary folder. The plan input
is examples/plans/acceptance/servegen-day.yaml's service without `check_traffic`, so the
plan holds out the last 20 % of the day itself. Prints the wall time and the plan's
simulation count.
"""

from __future__ import annotations

import argparse
import gzip
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
DAYS = ROOT.parent / "shared" / "traces" / "servegen_mm_image"
KEEP_OF_DAY_B = 0.7


def build_day(out: Path) -> int:
    tables = []
    for name, keep in (("mm_image_day_a.csv.gz", 1.0), ("mm_image_day_b.csv.gz", KEEP_OF_DAY_B)):
        with gzip.open(DAYS / name, "rt") as f:
            rows = np.loadtxt(f, delimiter=",", skiprows=1)
        if keep < 1.0:
            rows = rows[np.random.default_rng(27).random(len(rows)) < keep]
        tables.append(rows)
    rows = np.concatenate(tables)
    rows = rows[np.argsort(rows[:, 0], kind="stable")]
    with out.open("w") as f:
        f.write("arrival_s,prompt_tokens,output_tokens\n")
        for a, p, o in rows:
            f.write(f"{a:.6f},{int(p)},{int(o)}\n")
    return len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep", type=Path, default=None, help="write the plan here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        n = build_day(folder / "day.csv")
        data = yaml.safe_load((ROOT / "examples" / "plans" / "acceptance"
                               / "servegen-day.yaml").read_text())
        w = data["workloads"][0]
        w.pop("check_traffic")
        w["traffic"]["path"] = str(folder / "day.csv")
        source = folder / "input.yaml"
        source.write_text(yaml.safe_dump(data))
        out = args.keep or folder / "plan"
        t0 = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "gpuscale", "plan", str(source), "--out",
                               str(out), "--force", "--workers", str(args.workers)],
                              capture_output=True, text=True)
        wall_s = time.monotonic() - t0
        tail = done.stdout.strip().splitlines()[-1:] or done.stderr.strip().splitlines()[-1:]
        print(f"{n:,} requests; plan --workers {args.workers}: {wall_s:.0f} s wall, exit "
              f"{done.returncode}; {tail[0] if tail else ''}")


if __name__ == "__main__":
    main()
