"""Side by side with Vidur: replay its six runs with gpuscale on the same configuration.

    python bench/bench_vidur.py [--runs sarathi-r1,vllm-r2] [--no-host]

../shared/reference/vidur/ holds Vidur 0.0.26's per-request outputs for CodeLlama-34B on
A100-80GB TP2 over the whole Azure 2023 conversation trace (README there). Each run is replayed
with the same arrivals (seconds since the first TIMESTAMP), the same token counts (Vidur's
prompts after its 4096-token cut), round-robin routing over the same replica count, batch cap
128, 16-token blocks, 10 % memory margin, and the same scheduler: `sarathi` = chunked prefill
with 512-token steps (decodes included), `vllm` = vLLM V0's prefill-first batches of whole
prompts up to 4096 tokens. Engine profile `sarathi`: NCCL all-reduce (Vidur profiles NCCL),
host time as vLLM's (Vidur models none; `--no-host` sets it to zero to show its share).
Prints TTFT and TPOT median and p90 per run and gpuscale's error against Vidur's. Goal
(issue 14): TPOT medians within 15 % and TTFT medians within 25 % on the Sarathi runs.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import lzma
import sys
import time
from pathlib import Path

import numpy as np

from gpuscale.catalog import get_gpu, get_model
from gpuscale.catalog.specs import Precision
from gpuscale.serving.bench import replay
from gpuscale.serving.engines import get_engine_profile, with_engine
from gpuscale.serving.performance import ReplicaHardware
from gpuscale.serving.replica import EngineConfig
from gpuscale.serving.requests_table import COMPLETED, RequestTable
from gpuscale.workloads.base import Requests
from gpuscale.workloads.traces import read_azure_llm_csv

ROOT = Path(__file__).resolve().parents[1] / ".." / "shared"
VIDUR_DIR = ROOT / "reference" / "vidur"
TRACE = ROOT / "traces" / "azure_llm_2023" / "AzureLLMInferenceTrace_conv.csv"
RUNS = [f"{s}-r{r}" for s in ("sarathi", "vllm") for r in (1, 2, 4)]
# Vidur's setups (README): batch cap 128; sarathi chunk 512; vllm max_tokens_in_batch 4096.
BATCH_CAP = 128
BUDGET_TOKENS = {"sarathi": 512, "vllm": 4096}
BATCHING = {"sarathi": "chunked", "vllm": "prefill_first"}
MEMORY_MARGIN_FRAC = 0.1
MAX_TOKENS = 4096  # Vidur's max_tokens (Llama-2 context)
GOALS = {"tpot_median": 0.15, "ttft_median": 0.25}


def read_vidur(run: str) -> dict[str, np.ndarray]:
    path = VIDUR_DIR / f"a100-codellama34b-tp2-conv-{run}.csv.xz"
    with lzma.open(path, "rt") as handle:
        rows = list(csv.DictReader(handle))
    cols = {k: np.array([float(r[k]) for r in rows]) for k in rows[0]}
    order = np.argsort(cols["request_id"], kind="stable")
    return {k: v[order] for k, v in cols.items()}


def stats(ttft: np.ndarray, tpot: np.ndarray) -> dict[str, float]:
    return {"ttft_median": float(np.median(ttft)), "ttft_p90": float(np.percentile(ttft, 90)),
            "tpot_median": float(np.median(tpot)), "tpot_p90": float(np.percentile(tpot, 90))}


def vidur_memory_plan(hw: ReplicaHardware) -> tuple[int, int]:
    """Vidur's request slots and KV blocks (vidur/scheduler/utils/memory_planner.py and
    replica_scheduler/base_replica_scheduler.py @7d47513): slots = (80 GiB x (1 - margin) -
    BF16 weights per GPU) // (BF16 KV of one 4096-token request per GPU); the pool is slots x
    4096 / 16 blocks, paged within. The slots do not cap the batch (`vidur_engine_config`)."""
    available = 80 * 2**30 * (1 - MEMORY_MARGIN_FRAC)
    weights = hw.model.total_params * 2 / hw.tp
    per_request = hw.model.kv_bytes_per_token(Precision.BF16) / hw.tp * MAX_TOKENS
    slots = int((available - weights) // per_request)
    return slots, slots * MAX_TOKENS // 16


def vidur_engine_config(hw: ReplicaHardware, scheduler: str) -> EngineConfig:
    """Vidur's `sarathi` and `vllm` replica schedulers admit while their allocation map holds
    fewer than `batch_size_cap` (128) requests and the paged blocks allow; the base scheduler's
    min(slots, cap) (`_max_batch_size`) is computed but neither scheduler reads it (@7d47513)."""
    _slots, blocks = vidur_memory_plan(hw)
    return EngineConfig(BATCH_CAP, BUDGET_TOKENS[scheduler], 16, blocks, MAX_TOKENS, 1e9,
                        batching=BATCHING[scheduler])


def simulate(run: str, vidur: dict[str, np.ndarray], no_host: bool,
             step_scale: float = 1.0) -> dict[str, float]:
    scheduler, replicas = run.split("-r")[0], int(run.split("-r")[1])
    trace = read_azure_llm_csv(TRACE)
    n = len(trace.arrival_s)
    if n != len(vidur["request_id"]):
        sys.exit(f"{run}: trace has {n} requests, Vidur's run {len(vidur['request_id'])}")
    requests = Requests(np.asarray(trace.arrival_s, float),
                        vidur["prompt_tokens"].astype(np.int64),
                        vidur["decode_tokens"].astype(np.int64))
    hw = with_engine(ReplicaHardware(get_gpu("A100-80GB"), get_model("CodeLlama-34B"),
                                     Precision.BF16, Precision.BF16, 2),
                     get_engine_profile("sarathi"))
    if no_host:
        hw = dataclasses.replace(hw, host_step_s=0.0, host_seq_s=0.0)
    if step_scale != 1.0:
        hw = dataclasses.replace(hw, step_time_factor=hw.step_time_factor * step_scale)
    table = replay(hw, vidur_engine_config(hw, scheduler), requests, replicas,
                   router="round_robin")
    return table_stats(table)


def table_stats(table: RequestTable) -> dict[str, float]:
    """`stats` of a replay, read as Vidur reads its own: TTFT = arrival to first token, TPOT =
    (completion - first token) / decode tokens."""
    cols = table.columns()
    done = cols.status == COMPLETED
    ttft = (cols.first_token_s - cols.arrival_s)[done]
    tpot = ((cols.finish_s - cols.first_token_s) / np.maximum(cols.output_tokens, 1))[done]
    return stats(ttft, tpot)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default=",".join(RUNS))
    parser.add_argument("--no-host", action="store_true", help="host time 0, as Vidur")
    parser.add_argument("--step-scale", type=float, default=1.0,
                        help="sensitivity probe only: multiply every step (not a model setting)")
    args = parser.parse_args()
    print(f"{'run':12} {'stat':12} {'vidur':>9} {'gpuscale':>9} {'error':>8}  goal")
    for run in args.runs.split(","):
        vidur = read_vidur(run)
        want = stats(vidur["ttft_s"], vidur["tpot_s"])
        start = time.perf_counter()
        got = simulate(run, vidur, args.no_host, args.step_scale)
        wall = time.perf_counter() - start
        for key in ("ttft_median", "ttft_p90", "tpot_median", "tpot_p90"):
            err = got[key] / want[key] - 1
            goal = GOALS.get(key) if run.startswith("sarathi") else None
            mark = "" if goal is None else ("ok" if abs(err) <= goal else f"MISS (+-{goal:.0%})")
            print(f"{run:12} {key:12} {want[key]:>9.4f} {got[key]:>9.4f} {err:>+8.1%}  {mark}")
        print(f"{run:12} ({wall:.1f} s wall)")


if __name__ == "__main__":
    main()
