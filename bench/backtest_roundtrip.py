"""Round trips of `gpuscale backtest` (issue 31): per bundle, runs on random traffic shapes
and seeds whose own `--metrics-out` export is then backtested (OpenMetrics and the
query_range JSON made from it), with the acceptance's three figures per run and the share
of runs that meet all three. docs/benchmarks.md records its output.

    python bench/backtest_roundtrip.py [RUNS_PER_BUNDLE]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.backtest import roundtrip as rt  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "backtest"
BUNDLES = {
    "examples/backtest/manifests": (EXAMPLE / "manifests", 0.5, 5.0),
    "examples/backtest/proposal": (EXAMPLE / "proposal", 1.0, 9.0),
    "b02_kserve_style": (rt.BUNDLES / "b02_kserve_style", 0.1, 0.8),
    "b01_prodstack_helm": (rt.BUNDLES / "b01_prodstack_helm", 0.2, 2.0),
}


def _meets(f: dict) -> bool:
    return f["within_one"] >= 0.9 and abs(f["slo_points"]) <= 0.03 and \
        abs(f["gpu_hours_frac"]) <= 0.10


def main(runs: int) -> None:
    rng = np.random.default_rng(31)
    print(f"{'bundle':30} {'form':5} {'met':>7} {'within1 min/med':>16} "
          f"{'|SLO pts| med/max':>18} {'|GPU-h| med/max':>16}")
    for label, (bundle, base, peak) in BUNDLES.items():
        cases = [(rt.SHAPES[int(rng.integers(len(rt.SHAPES)))], int(rng.integers(2**16)))
                 for _ in range(runs)]
        rows: dict[str, list[dict]] = {"om": [], "json": []}
        with tempfile.TemporaryDirectory() as tmp:
            for shape, seed in cases:
                folder = Path(tempfile.mkdtemp(dir=tmp))
                trace = rt.write_trace(folder / "t.csv", shape, seed, base, peak, 20)
                history = folder / "h.om"
                run = rt.simulate(bundle, trace, history, seed)["runs"][0]
                rows["om"].append(rt.figures(run, rt.backtest([bundle], history, seed)))
                as_json = rt.as_query_range(history, folder / "h.json")
                rows["json"].append(rt.figures(run, rt.backtest([bundle], as_json, seed)))
        for form, figures in rows.items():
            within = np.array([f["within_one"] for f in figures])
            slo = np.abs([f["slo_points"] for f in figures]) * 100
            gpu = np.abs([f["gpu_hours_frac"] for f in figures]) * 100
            met = sum(_meets(f) for f in figures)
            print(f"{label:30} {form:5} {met:>3}/{len(figures):<3} "
                  f"{100 * within.min():7.1f}/{100 * np.median(within):5.1f}% "
                  f"{np.median(slo):8.1f}/{slo.max():5.1f} pts "
                  f"{np.median(gpu):7.1f}/{gpu.max():5.1f}%")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
