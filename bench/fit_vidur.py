"""`calibrate --fit` on Vidur's six runs: what a Prometheus scrape of each would have held.

    python bench/fit_vidur.py [--runs sarathi-r4,vllm-r4] [--step 15] [--write DIR]

../shared/reference/vidur/ holds Vidur 0.0.26's per-request outputs for CodeLlama-34B on
A100-80GB TP2 over the Azure 2023 conversation trace (README there). Each run becomes the
query_range export a 15 s scrape of its replicas would hold (calibration/prometheus_export.py:
running = scheduled (arrival + sched_delay) to finish, waiting = arrival to scheduled, ITL
spread over each request's decode), and is fitted as a user's export is
(calibration/fit_prometheus.py: only windows without a queue). Engine profile `sarathi`
(NCCL all-reduce, as Vidur profiles), token budget per step as Vidur's scheduler (sarathi 512,
vllm 4096). Vidur models no host time and its kernels are its A100 profiles, from which the
catalog's A100 factors come (docs/calibration.md rows A1-A3): a fit that means what it says
lands near host 0 and the catalog's hbm 0.78 / compute 0.75.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_vidur import RUNS, TRACE, read_vidur

from gpuscale.calibration.fit import fit
from gpuscale.calibration.fit_prometheus import read_export
from gpuscale.calibration.prometheus_export import export_from_requests
from gpuscale.workloads.traces import read_azure_llm_csv

BUDGET_TOKENS = {"sarathi": 512, "vllm": 4096}


def export_of(run: str, step_s: float) -> dict:
    vidur = read_vidur(run)
    replicas = int(run.split("-r")[1])
    arrival = np.asarray(read_azure_llm_csv(TRACE).arrival_s, float)[
        vidur["request_id"].astype(int)]
    return export_from_requests(
        arrival_s=arrival, scheduled_s=arrival + vidur["sched_delay_s"],
        first_token_s=arrival + vidur["ttft_s"], finish_s=arrival + vidur["e2e_s"],
        prompt_tokens=vidur["prompt_tokens"], output_tokens=vidur["decode_tokens"],
        replica=vidur["request_id"].astype(int) % replicas, step_s=step_s,
        model_name="codellama/CodeLlama-34b-Instruct-hf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default=",".join(RUNS))
    parser.add_argument("--step", type=float, default=15.0, help="scrape interval, s")
    parser.add_argument("--write", type=Path, default=None,
                        help="also write each export here (<run>.json) for the CLI")
    args = parser.parse_args()
    print(f"{'run':12} {'windows':>7} {'hbm':>6} {'compute':>7} {'host ms':>8} "
          f"{'rms err':>7}  kept")
    for run in args.runs.split(","):
        export = export_of(run, args.step)
        if args.write:
            args.write.mkdir(parents=True, exist_ok=True)
            (args.write / f"{run}.json").write_text(json.dumps(export))
        budget = BUDGET_TOKENS[run.split("-r")[0]]
        windows = read_export(export, run, budget)
        result = fit(windows.points, "A100-80GB", "CodeLlama-34B", 2, engine="sarathi",
                     input_format="prometheus", notes=windows.notes)
        errors = [e for p in result.points for e in p["error_frac"].values()]
        rms = float(np.sqrt(np.mean(np.square(errors))))
        print(f"{run:12} {len(windows.points):>7} {result.hbm_efficiency:>6.3f} "
              f"{result.compute_efficiency:>7.3f} {result.host_step_s * 1e3:>8.3f} "
              f"{rms:>7.1%}  {', '.join(result.kept) or '-'}")
        for note in windows.notes:
            print(f"    {note}")


if __name__ == "__main__":
    main()
