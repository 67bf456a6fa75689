"""What a Prometheus scrape of vLLM would have recorded for a per-request log, as the
`/api/v1/query_range` JSON `calibrate --fit` reads (calibration/fit_prometheus.py).

Used to check the fit on runs whose per-request timings are known but which never ran a
Prometheus: gpuscale's own replays (tests/calibration/test_fit.py) and Vidur's per-request
outputs (bench/fit_vidur.py). Per replica, sampled every `step_s`:
- `vllm:num_requests_running`: requests scheduled (prefill started) and not finished;
  `vllm:num_requests_waiting`: arrived and not scheduled;
- `vllm:time_to_first_token_seconds` observed when the first token is out;
- `vllm:inter_token_latency_seconds`: a request's later tokens spread evenly over its decode
  (its ITL observations sum to finish - first token), as vLLM observes one per token;
- `vllm:request_prompt_tokens` / `vllm:request_generation_tokens` observed at the finish;
- `vllm:prompt_tokens_total` at the first token, `vllm:generation_tokens_total` as decoded.
Histograms are written as `_sum` / `_count` (and `_bucket` with vLLM's TTFT bounds when
`buckets` is set), which is what a scrape of the real server holds for these series.
"""

from __future__ import annotations

import numpy as np

# vLLM's TTFT histogram bounds (serving-engine-metrics.md, histogram buckets table).
TTFT_BUCKETS_S = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                  5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)


def _series(name: str, labels: dict, times: np.ndarray, values: np.ndarray, **extra) -> dict:
    return {"metric": {"__name__": name, **labels, **extra},
            "values": [[round(float(t), 3), repr(float(v))] for t, v in
                       zip(times, values, strict=True)]}


def _done_frac(times: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """(samples, requests): share of [start, end] behind each sample time."""
    span = np.maximum(end - start, 1e-12)
    return np.clip((times[:, None] - start[None, :]) / span[None, :], 0.0, 1.0)


def export_from_requests(*, arrival_s, scheduled_s, first_token_s, finish_s, prompt_tokens,
                         output_tokens, replica, step_s: float = 15.0,
                         model_name: str = "model", buckets: bool = False) -> dict:
    """One query_range response holding every series of every replica (`replica` ids)."""
    cols = [np.asarray(c, float) for c in (arrival_s, scheduled_s, first_token_s, finish_s,
                                           prompt_tokens, output_tokens)]
    arrival, scheduled, first, finish, prompt, output = cols
    replica = np.asarray(replica)
    ok = np.isfinite(finish) & np.isfinite(first)
    times = np.arange(np.floor(arrival.min()), np.nanmax(finish[ok]) + 2 * step_s, step_s)
    result = []
    for rep in sorted(set(replica[ok].tolist())):
        m = ok & (replica == rep)
        a, s, f, e, p, o = arrival[m], scheduled[m], first[m], finish[m], prompt[m], output[m]
        labels = {"model_name": model_name, "pod": f"replica-{rep}"}
        t = times[:, None]
        running = ((s[None, :] <= t) & (t < e[None, :])).sum(axis=1)
        waiting = ((a[None, :] <= t) & (t < s[None, :])).sum(axis=1)
        has_first = (f[None, :] <= t)
        done = (e[None, :] <= t)
        decoded = _done_frac(times, f, e)
        ttft = f - a
        series = {
            "vllm:num_requests_running": running,
            "vllm:num_requests_waiting": waiting,
            "vllm:time_to_first_token_seconds_sum": has_first @ ttft,
            "vllm:time_to_first_token_seconds_count": has_first.sum(axis=1),
            "vllm:inter_token_latency_seconds_sum": decoded @ (e - f),
            "vllm:inter_token_latency_seconds_count": decoded @ np.maximum(o - 1, 0),
            "vllm:request_prompt_tokens_sum": done @ p,
            "vllm:request_prompt_tokens_count": done.sum(axis=1),
            "vllm:request_generation_tokens_sum": done @ o,
            "vllm:request_generation_tokens_count": done.sum(axis=1),
            "vllm:prompt_tokens_total": has_first @ p,
            "vllm:generation_tokens_total": has_first.sum(axis=1)
            + decoded @ np.maximum(o - 1, 0),
        }
        result += [_series(n, labels, times, v) for n, v in series.items()]
        if buckets:
            for bound in (*TTFT_BUCKETS_S, float("inf")):
                le = "+Inf" if bound == float("inf") else repr(bound)
                counts = has_first @ (ttft <= bound).astype(float)
                result.append(_series("vllm:time_to_first_token_seconds_bucket", labels, times,
                                      counts, le=le))
    return {"status": "success", "data": {"resultType": "matrix", "result": result}}
