"""The request stream a history implies: per window of the export's step, how many requests
arrived and how long their prompts and outputs were.

- **Arrivals.** The count per window is the increase of vLLM's first-token counter
  (`vllm:time_to_first_token_seconds_count`: one per request, at its first token); each
  request's arrival is its first token less a TTFT drawn from that window's own TTFT buckets
  (the same requests), so a queue in the history moves arrivals back by the wait it caused.
  Without the TTFT histogram, completions (`vllm:request_success_total`) less an end-to-end
  latency from `vllm:e2e_request_latency_seconds` (unshifted without it, said). Within a
  window the events are a Poisson process given its count (uniform times): the burstiness
  inside one step is not in the export. Fractional counts (a gap's increase spread over its
  windows) are rounded on the running total, so no request is lost or added.
- **Lengths.** `vllm:request_prompt_tokens` and `vllm:request_generation_tokens` are
  observed when a request finishes, a decode later than its first token: the windows read are
  those of the completions (first token + the export's mean e2e less mean TTFT), pooled with
  their neighbours until they hold as many requests as the window needs. Drawn from the
  buckets with the histogram's own mean (buckets.py); prompt and output drawn independently
  (the export holds no pairing).
Deterministic by seed (streams `backtest.arrivals`, `backtest.delays`, `backtest.lengths`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuscale.backtest import buckets
from gpuscale.backtest.history import E2E, OUTPUT, PROMPT, SUCCESS, TTFT, History, Selector
from gpuscale.backtest.windows import (
    HistogramWindows,
    Irregularities,
    counter_windows,
    engine_matchers,
    histogram_windows,
)
from gpuscale.core.random_streams import RandomStreams

# A window's lengths are drawn from at least this many observed requests (its own and its
# neighbours'), so a window with 2 completions does not set the lengths of 40 arrivals.
MIN_POOL_REQUESTS = 50
MAX_POOL_WINDOWS = 40  # each side: 10 minutes at a 15 s step


@dataclass
class Traffic:
    """Reconstructed requests (arrival seconds since the history's first step) and what they
    were read from."""

    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    resolved: dict
    seen: Irregularities

    def __len__(self) -> int:
        return len(self.arrival_s)


def whole_counts(increase: np.ndarray) -> np.ndarray:
    """Per-window whole counts whose running total is the rounded running total of
    `increase` (a spread-out gap's fractions add up instead of vanishing)."""
    running = np.rint(np.cumsum(np.clip(increase, 0.0, None)))
    return np.diff(np.concatenate(([0.0], running))).astype(np.int64)


def _mean(hist: HistogramWindows, lo: int, hi: int) -> tuple[np.ndarray, float | None]:
    counts, total_sum, total = hist.pooled(lo, hi)
    mean = total_sum / total if total > 0 and np.isfinite(total_sum) else None
    return counts, mean


def _pool_bounds(totals: np.ndarray, centre: int, need: float) -> tuple[int, int]:
    """Windows [lo, hi) around `centre` holding at least `need` observations (or the widest
    allowed span)."""
    windows = len(totals)
    centre = min(max(centre, 0), windows - 1)
    lo, hi = centre, centre + 1
    for _ in range(MAX_POOL_WINDOWS):
        if totals[lo:hi].sum() >= need:
            break
        lo, hi = max(0, lo - 1), min(windows, hi + 1)
    return lo, hi


def _events(history: History, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Event times (s since the first step): each window's count, uniform within it."""
    step_s = history.step_ms / 1000.0
    window = np.repeat(np.arange(len(counts)), counts)
    return np.sort((window + rng.random(len(window))) * step_s)


def _delays(hist: HistogramWindows | None, counts: np.ndarray,
            rng: np.random.Generator) -> np.ndarray:
    """A latency per event, from its own window's buckets (zeros without the histogram)."""
    if hist is None:
        return np.zeros(int(counts.sum()))
    parts = []
    for k in np.flatnonzero(counts):
        pool, mean = _mean(hist, *_pool_bounds(hist.totals, int(k), 1))
        parts.append(buckets.draw(pool, hist.upper, mean, int(counts[k]), rng, spread=False))
    return np.concatenate(parts) if parts else np.zeros(0)


def _mean_latency(hist: HistogramWindows | None) -> float | None:
    if hist is None:
        return None
    total = float(hist.totals.sum())
    value = float(np.nansum(hist.sums)) / total if total > 0 else None
    return value if value is not None and np.isfinite(value) else None


def _lengths(hist: HistogramWindows, counts: np.ndarray, lag_windows: int,
             rng: np.random.Generator) -> np.ndarray:
    parts = []
    for k in np.flatnonzero(counts):
        need = max(MIN_POOL_REQUESTS, int(counts[k]))
        pool, mean = _mean(hist, *_pool_bounds(hist.totals, int(k) + lag_windows, need))
        parts.append(buckets.draw_tokens(pool, hist.upper, mean, int(counts[k]), rng))
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def reconstruct(history: History, selector: Selector, seed: int) -> Traffic:
    """The requests the history implies for the selected deployment."""
    grid = history.grid_ms
    step = history.step_ms
    seen = Irregularities()
    match = engine_matchers(selector.namespace, selector.model_name)
    scrapes = history.scrapes_ms
    ttft = histogram_windows(history.store, TTFT, match, grid, step, seen, scrapes)
    e2e, prompt, output = (histogram_windows(history.store, name, match, grid, step,
                                             Irregularities(), scrapes)
                           for name in (E2E, PROMPT, OUTPUT))
    assert prompt is not None and output is not None  # history.check_required
    if ttft is not None:
        counts = whole_counts(ttft.totals)
        delay_hist, counter = ttft, f"{TTFT}_count (first tokens)"
        # The token histograms count at completion: one mean decode after the first token.
        lag_s = max(0.0, (_mean_latency(e2e) or 0.0) - (_mean_latency(ttft) or 0.0))
    else:
        done = counter_windows(history.store, SUCCESS, match, grid, step, seen,
                               scrapes_ms=scrapes).get("")
        counts = whole_counts(done if done is not None else np.zeros(len(grid) - 1))
        delay_hist, counter, lag_s = e2e, f"{SUCCESS} (completions)", 0.0
    streams = RandomStreams(seed)
    events = _events(history, counts, streams.get("backtest.arrivals"))
    delays = _delays(delay_hist, counts, streams.get("backtest.delays"))
    arrival = np.clip(events - delays, 0.0, None)
    lag_windows = int(round(lag_s * 1000.0 / step))
    lengths = streams.get("backtest.lengths")
    prompt_tokens = _lengths(prompt, counts, lag_windows, lengths)
    output_tokens = _lengths(output, counts, lag_windows, lengths)
    order = np.argsort(arrival, kind="stable")
    resolved = {
        "group": {"namespace": selector.namespace, "model_name": selector.model_name},
        "step_s": step / 1000.0,
        "windows": len(grid) - 1,
        "requests": int(counts.sum()),
        "arrivals": f"per window from {counter}, "
                    + (f"each moved back by a latency drawn from that window's "
                       f"{(TTFT if ttft is not None else E2E)}_bucket"
                       if delay_hist is not None else "not moved back (no latency histogram)")
                    + "; uniform within the window (Poisson given the count)",
        "prompt_tokens": f"{PROMPT}_bucket, interpolated to the _sum's mean",
        "output_tokens": f"{OUTPUT}_bucket, interpolated to the _sum's mean",
        "length_lag_s": round(lag_s, 3),
        "pairing": "prompt and output drawn independently (the export holds no pairing)",
        "seed": seed,
    }
    return Traffic(arrival[order], prompt_tokens[order], output_tokens[order], resolved, seen)


def fit_model_len(traffic: Traffic, max_model_len: int) -> int:
    """Fit every request in the served context (in place); returns how many were changed.
    The history holds served requests only (vLLM refuses one that cannot fit), so a longer
    one is an artefact of the draws: a prompt from the +Inf bucket (vLLM's token buckets end
    at the largest 1-2-5 bound under max_model_len) is cut to leave room for one token, an
    output drawn apart from its prompt is shortened to what the prompt leaves."""
    prompt = np.minimum(traffic.prompt_tokens, max_model_len - 1)
    room = np.maximum(1, max_model_len - prompt)
    output = np.minimum(traffic.output_tokens, room)
    changed = int(((prompt != traffic.prompt_tokens) | (output != traffic.output_tokens)).sum())
    traffic.prompt_tokens, traffic.output_tokens = prompt, output
    traffic.resolved["fitted_to_model_len"] = changed
    return changed
