"""The request stream a history implies: per window of the export's step, how many requests
arrived and how long their prompts and outputs were.

- **Arrivals.** The count per window is the increase of vLLM's first-token counter
  (`vllm:time_to_first_token_seconds_count`: one per request, at its first token); each
  request's arrival is its first token less a TTFT from that window's own TTFT buckets (the
  same requests), so a queue in the history moves arrivals back by the wait it caused; the
  longer waits go to the first tokens where the windows' mean wait rises (a queue served in
  turn). Without the TTFT histogram, completions (`vllm:request_success_total`) less an
  end-to-end latency from `vllm:e2e_request_latency_seconds` (unshifted without it, said).
  Within a window the events are a Poisson process given its count (uniform times): the
  burstiness inside one step is not in the export. Fractional counts (a gap's increase
  spread over its windows) are rounded on the running total, so no request is lost or added.
- **Lengths.** `vllm:request_prompt_tokens` and `vllm:request_generation_tokens` are
  observed when a request finishes, a decode later than its first token: the output
  histogram is moved back bucket by bucket by that bucket's own decode time, the prompts by
  the mean decode (the export's mean e2e less mean TTFT), each window pooled with its
  neighbours until it holds as many requests as it needs. Drawn from the buckets with the
  histogram's own mean (buckets.py); prompt and output drawn independently (the export
  holds no pairing).
Deterministic by seed (streams `backtest.arrivals`, `backtest.delays`, `backtest.lengths`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuscale.backtest import buckets
from gpuscale.backtest.history import (
    E2E,
    OUTPUT,
    PROMPT,
    SUCCESS,
    TTFT,
    History,
    Selector,
)
from gpuscale.backtest.windows import (
    HistogramWindows,
    Irregularities,
    counter_windows,
    engine_matchers,
    histogram_windows,
    mean_observation,
)
from gpuscale.core.random_streams import RandomStreams
from gpuscale.promql.parse import Matcher

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


def _trend(hist: HistogramWindows, events_s: np.ndarray, step_s: float) -> np.ndarray:
    """The latency each event's moment implies: the windows' mean latencies, linear between
    the windows' middles (windows without observations left out)."""
    seen = hist.totals > 0
    if not seen.any() or not np.isfinite(hist.sums[seen]).all():
        return np.zeros(len(events_s))
    middles_s = (np.flatnonzero(seen) + 0.5) * step_s
    return np.interp(events_s, middles_s, hist.sums[seen] / hist.totals[seen])


def first_token_delays(hist: HistogramWindows | None, counts: np.ndarray, events_s: np.ndarray,
            step_s: float, rng: np.random.Generator) -> np.ndarray:
    """A latency per event (`events_s` sorted, window by window), from its own window's
    buckets (zeros without the histogram). Within a window the longer latencies go to the
    events where the windows' mean latency is higher: a queue served in turn gives requests
    later in a climb longer waits, so a burst that built a queue is rebuilt as a burst (drawn
    in random order, arrivals rebuilt from first tokens would come at the rate they were
    served); where the mean is flat the order is random."""
    if hist is None:
        return np.zeros(int(counts.sum()))
    trend = _trend(hist, events_s, step_s)
    out = np.zeros(len(events_s))
    start = 0
    for k in np.flatnonzero(counts):
        pool, mean = _mean(hist, *_pool_bounds(hist.totals, int(k), 1))
        drawn = np.sort(buckets.draw(pool, hist.upper, mean, int(counts[k]), rng,
                                     spread=False))
        stop = start + int(counts[k])
        order = np.lexsort((rng.random(stop - start), trend[start:stop]))
        out[start + order] = drawn
        start = stop
    return out


def _lengths(hist: HistogramWindows, counts: np.ndarray, lag_windows: int,
             rng: np.random.Generator) -> np.ndarray:
    parts = []
    for k in np.flatnonzero(counts):
        need = max(MIN_POOL_REQUESTS, int(counts[k]))
        pool, mean = _mean(hist, *_pool_bounds(hist.totals, int(k) + lag_windows, need))
        parts.append(buckets.draw_tokens(pool, hist.upper, mean, int(counts[k]), rng))
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def at_first_token(output: HistogramWindows, decode_s: float,
                   step_s: float) -> HistogramWindows:
    """The output-length histogram moved from the completions back to the first tokens: a
    request of L tokens completes L - 1 decode steps after its first token, so each bucket
    moves back by its own decode time (its tokens at its mean point, times the mean time per
    token: the export's mean decode `decode_s` over its mean tokens after the first). One
    lag for every length would hand a climb's first windows the short outputs that finished
    early and move its long ones to later windows. (A pace per window, from the inter-token
    latency, moved the replays no closer to their runs: docs/backtest.md.)"""
    counts = output.counts.sum(axis=0)
    if decode_s <= 0 or counts.sum() <= 0:
        return output
    low, high = buckets.bucket_edges(output.upper)
    total_sum, total = float(np.nansum(output.sums)), float(output.totals.sum())
    mean = total_sum / total if total > 0 and np.isfinite(output.sums).all() else None
    points = low + buckets.mean_share(counts, low, high, mean) * (high - low)
    steps_after_first = np.maximum(points - 1.0, 0.0)
    mean_steps = float((counts * steps_after_first).sum() / counts.sum())
    if mean_steps <= 0:
        return output
    return output.shifted_back(steps_after_first * (decode_s / mean_steps) / step_s)


@dataclass(frozen=True)
class _Counted:
    """Requests per window, the histogram their arrivals are moved back by, and the mean
    decode that separates their first tokens from the lengths' observation."""

    counts: np.ndarray
    delays: HistogramWindows | None
    arrivals: str  # how, for `resolved`
    decode_s: float
    decode_from: str


def _counted(history: History, match: tuple[Matcher, ...], seen: Irregularities) -> _Counted:
    """First tokens per window moved back by their TTFT; else completions moved back by
    their e2e latency (the lengths then observed in the same window)."""
    grid, step, scrapes = history.grid_ms, history.step_ms, history.scrapes_ms
    ttft = histogram_windows(history.store, TTFT, match, grid, step, seen, scrapes)
    if ttft is not None:
        # The token histograms count at completion, one decode after the first token (the
        # means need only each histogram's _sum and _count).
        e2e_s, ttft_s = (mean_observation(history.store, name, match, grid, step, scrapes)
                         for name in (E2E, TTFT))
        if e2e_s is None or ttft_s is None:
            decode_s, decode_from = 0.0, f"none: no {E2E}_sum and _count in the export"
        else:
            decode_s = max(0.0, e2e_s - ttft_s)
            decode_from = f"mean {E2E} less mean {TTFT} (_sum / _count)"
        return _Counted(
            whole_counts(ttft.totals), ttft, f"per window from {TTFT}_count (first tokens), "
            f"each moved back by a latency from that window's {TTFT}_bucket", decode_s,
            decode_from)
    done = counter_windows(history.store, SUCCESS, match, grid, step, seen,
                           scrapes_ms=scrapes).get("")
    e2e = histogram_windows(history.store, E2E, match, grid, step, Irregularities(), scrapes)
    return _Counted(
        whole_counts(done if done is not None else np.zeros(len(grid) - 1)), e2e,
        f"per window from {SUCCESS} (completions), " + (
            f"each moved back by a latency from that window's {E2E}_bucket"
            if e2e is not None else "not moved back (no latency histogram)"),
        0.0, "none: arrivals counted at completion, as the lengths are")


def reconstruct(history: History, selector: Selector, seed: int) -> Traffic:
    """The requests the history implies for the selected deployment."""
    step_s = history.step_ms / 1000.0
    seen = Irregularities()
    match = engine_matchers(selector.namespace, selector.model_name)
    counted = _counted(history, match, seen)
    prompt, output = (histogram_windows(history.store, name, match, history.grid_ms,
                                        history.step_ms, Irregularities(), history.scrapes_ms)
                      for name in (PROMPT, OUTPUT))
    assert prompt is not None and output is not None  # history.check_required
    streams = RandomStreams(seed)
    events = _events(history, counted.counts, streams.get("backtest.arrivals"))
    delays = first_token_delays(counted.delays, counted.counts, events, step_s,
                                streams.get("backtest.delays"))
    arrival = np.clip(events - delays, 0.0, None)
    lengths = streams.get("backtest.lengths")
    prompt_tokens = _lengths(prompt, counted.counts, round(counted.decode_s / step_s), lengths)
    output_tokens = _lengths(at_first_token(output, counted.decode_s, step_s), counted.counts,
                             0, lengths)
    order = np.argsort(arrival, kind="stable")
    resolved = {
        "group": {"namespace": selector.namespace, "model_name": selector.model_name},
        "step_s": step_s,
        "windows": len(history.grid_ms) - 1,
        "requests": int(counted.counts.sum()),
        "arrivals": counted.arrivals + "; uniform within the window (Poisson given the "
                                       "count), the longer waits where the mean wait rises",
        "prompt_tokens": f"{PROMPT}_bucket of the completions one mean decode later",
        "output_tokens": f"{OUTPUT}_bucket, each bucket moved back by its own decode",
        "within_buckets": "log-log density from the neighbouring buckets, tilted to the "
                          "_sum's mean",
        "length_lag_s": round(counted.decode_s, 3),
        "length_lag_from": counted.decode_from,
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
