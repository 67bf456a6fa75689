"""Pipeline parallelism side by side with Vidur: Llama-2-70B on A100-80GB TP2 x PP2 (issue 28).

    python bench/bench_vidur_pp.py VIDUR_OUTPUT_DIR [VIDUR_OUTPUT_DIR ...]

Each directory is one Vidur 0.0.26 run's `--metrics_config_output_dir` (its newest
`*/request_metrics.csv` is read) over the Azure 2023 conversation trace with
`meta-llama/Llama-2-70b-hf`, device a100, network a100_dgx, TP2, 2 pipeline stages, round
robin, batch cap 128, and the `sarathi` (chunk 512) or `vllm` (4,096 tokens a batch)
scheduler; the directory name says which (`*sarathi*` / `*vllm*`, `_r<replicas>`). gpuscale
replays the same arrivals and token counts (Vidur's, after its 4,096-token cut) on the same
setup: engine `sarathi`, the same batching, a token budget per micro-batch, Vidur's memory plan
with each stage holding half the layers. Prints TTFT and TPOT median and p90 and the error
against Vidur's. Goal (issue 28): TPOT within 15 %, TTFT within 25 %.

Such runs are not in ../shared/reference/vidur (PP1 CodeLlama-34B only); make them with Vidur's
profiles from microsoft/vidur (data/profiling/compute/a100/meta-llama/Llama-2-70b-hf/mlp.csv,
the A100 TP2 attention.csv of commit e2d00e9, network/a100_dgx/{all_reduce,send_recv}.csv) as
docs/calibration.md ("Pipeline parallelism against Vidur") describes.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np

from gpuscale.catalog import get_gpu, get_model
from gpuscale.catalog.specs import Precision
from gpuscale.serving.bench import replay
from gpuscale.serving.engines import get_engine_profile, with_engine
from gpuscale.serving.performance import ReplicaHardware, step_token_budget
from gpuscale.serving.replica import EngineConfig
from gpuscale.workloads.base import Requests
from gpuscale.workloads.traces import read_azure_llm_csv

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_vidur import (
    BATCH_CAP,
    BATCHING,
    BUDGET_TOKENS,
    MAX_TOKENS,
    MEMORY_MARGIN_FRAC,
    TRACE,
    stats,
    table_stats,
)

TP, PP = 2, 2
GOALS = {"tpot_median": 0.15, "ttft_median": 0.25}


def read_vidur_output(directory: Path) -> dict[str, np.ndarray]:
    """Vidur 0.0.26's request_metrics.csv: TTFT = prefill_e2e_time, TPOT =
    decode_time_execution_plus_preemption_normalized (as ../shared/reference/vidur reads)."""
    path = sorted(directory.glob("*/request_metrics.csv"))[-1]
    with path.open() as handle:
        rows = list(csv.DictReader(handle))
    key = "Request Id" if "Request Id" in rows[0] else "request_id"
    out = {"request_id": np.array([float(r[key]) for r in rows]),
           "prompt_tokens": np.array([float(r["request_num_prefill_tokens"]) for r in rows]),
           "decode_tokens": np.array([float(r["request_num_decode_tokens"]) for r in rows]),
           "ttft_s": np.array([float(r["prefill_e2e_time"]) for r in rows]),
           "tpot_s": np.array([float(r["decode_time_execution_plus_preemption_normalized"])
                               for r in rows])}
    order = np.argsort(out["request_id"], kind="stable")
    return {k: v[order] for k, v in out.items()}


def hardware() -> ReplicaHardware:
    return with_engine(ReplicaHardware(get_gpu("A100-80GB"), get_model("Llama-2-70B"),
                                       Precision.BF16, Precision.BF16, TP * PP, pp=PP),
                       get_engine_profile("sarathi"))


def vidur_kv_blocks(hw: ReplicaHardware) -> int:
    """Vidur 0.0.26's plan (vidur/utils/memory_planner.py, base_replica_scheduler.py): tokens
    per device = (80 GiB x 0.9 - BF16 parameters per device) / (BF16 KV of this stage's layers
    per token on one device); request slots = tokens // 4096; blocks = slots x 4096 / 16."""
    available = 80 * 2**30 * (1 - MEMORY_MARGIN_FRAC)
    weights = hw.model.total_params * 2 / hw.tp
    per_token = hw.model.kv_bytes_per_token(Precision.BF16) / hw.tp
    tokens = int((available - weights) // per_token)
    return tokens // MAX_TOKENS * MAX_TOKENS // 16


def simulate(scheduler: str, replicas: int, vidur: dict[str, np.ndarray]) -> dict[str, float]:
    trace = read_azure_llm_csv(TRACE)
    requests = Requests(np.asarray(trace.arrival_s, float),
                        vidur["prompt_tokens"].astype(np.int64),
                        vidur["decode_tokens"].astype(np.int64))
    hw = hardware()
    cfg = EngineConfig(BATCH_CAP, step_token_budget(BUDGET_TOKENS[scheduler], PP), 16,
                       vidur_kv_blocks(hw), MAX_TOKENS, 1e9, batching=BATCHING[scheduler])
    return table_stats(replay(hw, cfg, requests, replicas, router="round_robin"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    args = parser.parse_args()
    print(f"{'run':16} {'stat':12} {'vidur':>9} {'gpuscale':>9} {'error':>8}  goal")
    for directory in args.runs:
        name = directory.name
        scheduler = "sarathi" if "sarathi" in name else "vllm"
        replicas = int(name.rsplit("_r", 1)[1]) if "_r" in name else 1
        vidur = read_vidur_output(directory)
        want = stats(vidur["ttft_s"], vidur["tpot_s"])
        got = simulate(scheduler, replicas, vidur)
        for key in ("ttft_median", "ttft_p90", "tpot_median", "tpot_p90"):
            err = got[key] / want[key] - 1
            goal = GOALS.get(key)
            mark = "" if goal is None else ("ok" if abs(err) <= goal else f"MISS (+-{goal:.0%})")
            print(f"{name:16} {key:12} {want[key]:>9.4f} {got[key]:>9.4f} {err:>+8.1%}  {mark}")


if __name__ == "__main__":
    main()
