"""Run summary: request outcomes, latency percentiles, SLO attainment, goodput, GPU-hours, cost.

Definitions (docs/metrics.md):
- TTFT = first token time - arrival; TPOT = (finish - first token) / (output tokens - 1), for
  completed requests with more than one output token.
- SLO attainment = requests that completed with TTFT <= slo.ttft_s and TPOT <= slo.tpot_s,
  divided by all requests that arrived (dropped and unfinished ones count as misses).
- goodput_rps = those requests / the arrival window (duration_s).
- gpu_hours = GPUs of every node x its billed time (launch request to deletion or run end).
- idle_gpu_minutes = billed GPU-minutes during which the GPU executed no engine step.
"""

from __future__ import annotations

import math

import numpy as np

from gpuscale.serving.requests_table import COMPLETED, DROPPED, IN_FLIGHT, RequestColumns


def _percentiles(values: np.ndarray) -> dict[str, float | None]:
    if len(values) == 0:
        return {"p50": None, "p90": None, "p99": None}
    p50, p90, p99 = np.percentile(values, [50, 90, 99])
    return {"p50": round(float(p50), 6), "p90": round(float(p90), 6), "p99": round(float(p99), 6)}


def latency_columns(cols: RequestColumns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ttft_s of requests with a first token, tpot_s of completed multi-token ones, mask)."""
    has_first = ~np.isnan(cols.first_token_s)
    ttft = cols.first_token_s[has_first] - cols.arrival_s[has_first]
    done = (cols.status == COMPLETED) & (cols.output_tokens > 1)
    tpot = (cols.finish_s[done] - cols.first_token_s[done]) / (cols.output_tokens[done] - 1)
    return ttft, tpot, done


def slo_met_mask(cols: RequestColumns, ttft_slo_s: float, tpot_slo_s: float) -> np.ndarray:
    completed = cols.status == COMPLETED
    ttft = cols.first_token_s - cols.arrival_s
    span = cols.finish_s - cols.first_token_s
    tpot = np.where(cols.output_tokens > 1, span / np.maximum(cols.output_tokens - 1, 1), 0.0)
    with np.errstate(invalid="ignore"):
        return completed & (ttft <= ttft_slo_s) & (tpot <= tpot_slo_s)


def request_summary(cols: RequestColumns, *, ttft_slo_s: float, tpot_slo_s: float,
                    window_s: float) -> dict:
    arrived = cols.num_arrived
    status = cols.status[:arrived]
    ttft, tpot, _ = latency_columns(cols)
    met = int(slo_met_mask(cols, ttft_slo_s, tpot_slo_s).sum())
    return {
        "requests": {
            "total": int(arrived),
            "completed": int((status == COMPLETED).sum()),
            "dropped": int((status == DROPPED).sum()),
            "in_flight": int((status == IN_FLIGHT).sum()),
        },
        "ttft_s": _percentiles(ttft),
        "tpot_s": _percentiles(tpot),
        "slo_attainment": round(met / arrived, 6) if arrived else 1.0,
        "goodput_rps": round(met / window_s, 6) if window_s > 0 else 0.0,
    }


def time_weighted_mean(times_s: np.ndarray, values: np.ndarray, end_s: float) -> float:
    """Mean of a step function that holds values[i] from times_s[i] to times_s[i+1] (or end_s)."""
    if len(times_s) == 0:
        return 0.0
    edges = np.append(times_s, end_s)
    widths = np.diff(edges)
    total = widths.sum()
    return float((values * widths).sum() / total) if total > 0 else float(values[-1])


def round_or_none(value: float, digits: int = 6) -> float | None:
    return None if value is None or math.isnan(value) else round(float(value), digits)
