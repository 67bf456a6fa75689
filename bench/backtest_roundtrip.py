"""Round trips of `gpuscale backtest` (issue 31): per bundle, runs on random traffic shapes
and seeds whose own `--metrics-out` export is then backtested (OpenMetrics and the
query_range JSON the page's queries make of it), with the acceptance's three figures per run
and the share of runs that meet all three. Beside them, the noise floor: the same run on its
trace redrawn within each step (`roundtrip.redrawn_within_steps`: true counts and lengths,
only what the export cannot carry drawn anew), whose SLO points and GPU-hours error no
rebuild can be expected to beat. docs/benchmarks.md records its output.

    python bench/backtest_roundtrip.py [RUNS_PER_BUNDLE] [BUNDLE_LABEL ...]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.backtest import roundtrip as rt

FORMS = ("om", "json", "floor")


def _case_figures(bundle: Path, base: float, peak: float, shape: str, seed: int,
                  folder: Path) -> tuple[float, dict[str, dict]]:
    """(the run's SLO attainment, {form: figures}) of one case."""
    trace = rt.write_trace(folder / "t.csv", shape, seed, base, peak, rt.MINUTES)
    history = folder / "h.om"
    run = rt.simulate(bundle, trace, history, seed)["runs"][0]
    as_json = rt.as_query_range(history, folder / "h.json", bundle)
    redrawn = rt.redrawn_within_steps(trace, folder / "r.csv", seed + 1)
    return run["slo_attainment"], {
        "om": rt.figures(run, rt.backtest([bundle], history, seed)),
        "json": rt.figures(run, rt.backtest([bundle], as_json, seed)),
        "floor": rt.run_figures(run, rt.simulate(bundle, redrawn, folder / "r.om",
                                                 seed)["runs"][0])}


def _line(label: str, form: str, slo: list[float], figures: list[dict]) -> str:
    within = np.array([f.get("within_one", np.nan) for f in figures])
    points = np.array([f["slo_points"] for f in figures]) * 100
    gpu = np.abs([f["gpu_hours_frac"] for f in figures]) * 100
    met = sum(rt.meets(f) for f in figures)
    within_text = ("n/a" if np.isnan(within).all() else
                   f"{100 * np.nanmin(within):.1f}/{100 * np.nanmedian(within):.1f}%")
    return (f"{label:30} {form:5} {100 * min(slo):5.1f}-{100 * max(slo):5.1f}% "
            f"{met:>3}/{len(figures):<3} {within_text:>12} {np.median(points):+6.1f}/"
            f"{np.abs(points).max():4.1f} pts {np.median(gpu):5.1f}/{gpu.max():5.1f}%")


def main(runs: int, labels: list[str]) -> None:
    rng = np.random.default_rng(31)
    print(f"{'bundle (base-peak req/s)':30} {'form':5} {'run SLO':>12} {'met':>7} "
          f"{'within1 min/med':>12} {'SLO pts med/|max|':>17} {'|GPU-h| med/max':>13}")
    for label in labels or list(rt.BENCH_CASES):
        bundle, base, peak = rt.BENCH_CASES[label]
        cases = [(rt.SHAPES[int(rng.integers(len(rt.SHAPES)))], int(rng.integers(2**16)))
                 for _ in range(runs)]
        slo: list[float] = []
        rows: dict[str, list[dict]] = {form: [] for form in FORMS}
        with tempfile.TemporaryDirectory() as tmp:
            for shape, seed in cases:
                attained, by_form = _case_figures(bundle, base, peak, shape, seed,
                                                  Path(tempfile.mkdtemp(dir=tmp)))
                slo.append(attained)
                for form, figures in by_form.items():
                    rows[form].append(figures)
                if not rt.meets(by_form["om"]) or not rt.meets(by_form["json"]):
                    print(f"  missed: {label} {shape} seed {seed}: run SLO {attained:.3f}, "
                          + ", ".join(f"{form} {rt.rounded(f)}" for form, f in by_form.items()),
                          flush=True)
        for form, figures in rows.items():
            print(_line(f"{label} ({base:g}-{peak:g})", form, slo, figures), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20, sys.argv[2:])
