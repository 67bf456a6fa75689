"""`gpuscale plan` on synthetic days of other shapes (bench/day_shapes.py): planned on one day
of a service, replayed over its other day, both ways (issue 27: >= 99 % SLO at <= 0.8x the
GPU-hours of the cheapest always-on fleet that meets it there).

    python bench/plan_shapes.py [--shape NAME ...] [--workers 2] [--keep DIR]
        [--headroom FRAC] [--direction 1|2]

For each shape and direction it writes the plan input, runs `gpuscale plan --out`, and prints
the replay's rows (what `gpuscale compare DIR/scenarios/svc.yaml` re-runs): the plan, the
cheapest always-on fleet meeting the SLO on the replayed day (fixed-best) and the baseline
(KEDA on queue depth from 1 replica), with the plan's GPU-hours over fixed-best's.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent


def _shapes():
    spec = importlib.util.spec_from_file_location("day_shapes", HERE / "day_shapes.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["day_shapes"] = module
    spec.loader.exec_module(module)
    return module


def plan_direction(days, shape, fit: Path, check: Path, out: Path, workers: int,
                   headroom: float | None = None) -> dict:
    source = out.with_suffix(".yaml")
    data = days.plan_input(shape, fit, check)
    if headroom is not None:
        data["simulation"] = {"headroom_frac": headroom}
    source.write_text(yaml.safe_dump(data))
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "gpuscale", "plan", str(source), "--out",
                           str(out), "--force", "--workers", str(workers), "-o", "json"],
                          capture_output=True, text=True)
    wall_s = time.monotonic() - t0
    if done.returncode not in (0, 2):
        raise SystemExit(f"{shape.name}: plan failed ({done.returncode}): {done.stderr[-2000:]}")
    plan = json.loads(done.stdout)
    rows = {r["config"].split(" (")[0]: r for r in plan["warm_pools"]["svc"]["replay"]}
    fixed = rows.get("fixed-best")
    if fixed is not None:  # "fixed-best (always on N)": the replay row's own size
        fixed["replicas"] = int(fixed["config"].rsplit(" ", 1)[1].rstrip(")"))
    role = plan["roles"][0]
    return {"rows": rows, "wall_s": wall_s, "floor": role["min_replicas"],
            "max": role["max_replicas"], "windows": len(role["schedule"]),
            "prepulled": role["prepulled_image"], "tolerance": role["scale_up_tolerance"],
            "method": plan["warm_pools"]["svc"]["method"]}


def _fmt(name: str, direction: str, found: dict, goodput: float) -> str:
    rows = found["rows"]
    plan, fixed = rows.get("plan"), rows.get("fixed-best")
    base = rows.get("baseline-queue-depth")
    ratio = plan["gpu_hours"] / fixed["gpu_hours"] if plan and fixed else float("nan")
    met = "met" if plan and plan["slo_attainment"] >= goodput and ratio <= 0.8 else "missed"

    def cell(r):
        return "-" if r is None else f"{r['slo_attainment']:.1%} / {r['gpu_hours']:.1f}"
    return (f"| {name} | {direction} | {cell(plan)} (floor {found['floor']}, "
            f"{found['windows']} windows{', pre-pulled' if found['prepulled'] else ''}) | "
            f"{cell(fixed)} ({fixed['replicas'] if fixed else '-'}) | {cell(base)} | "
            f"{ratio:.2f}x ({met}) | {found['wall_s']:.0f} s |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", action="append")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep", type=Path, default=None)
    parser.add_argument("--headroom", type=float, default=None,
                        help="simulation.headroom_frac (default: the plan's own)")
    parser.add_argument("--direction", choices=("1", "2"), action="append",
                        help="plan on day 1 (1) or day 2 (2); default both")
    args = parser.parse_args()
    days = _shapes()
    names = args.shape or sorted(days.SHAPES)
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        print("| shape | planned on -> replayed on | plan: SLO / GPU-h | fixed-best: SLO / "
              "GPU-h (replicas) | baseline: SLO / GPU-h | plan / fixed-best | plan wall |")
        print("|---|---|---|---|---|---|---|")
        for name in names:
            shape = days.SHAPES[name]
            one, two = days.write_days(shape, folder)
            for fit, check, direction in ((one, two, "day 1 -> day 2"),
                                          (two, one, "day 2 -> day 1")):
                if args.direction and direction[4] not in args.direction:
                    continue
                out = folder / f"{name}-{fit.stem.rsplit('_', 1)[1]}"
                found = plan_direction(days, shape, fit, check, out, args.workers,
                                       args.headroom)
                print(_fmt(name, direction, found, shape.slo["goodput_frac"]), flush=True)


if __name__ == "__main__":
    main()
