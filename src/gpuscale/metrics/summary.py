"""Run summary: request outcomes, latency percentiles, SLO attainment, goodput, GPU-hours, cost.

Definitions (docs/metrics.md):
- TTFT = first token time - arrival, for every request that arrived; one that never got a first
  token (dropped, timed out, still queued at the end) has an infinite TTFT, so it lands at the
  top of every percentile instead of vanishing from them (a strategy that drops 97 % of its
  requests must not show a small TTFT p99). TPOT = (finish - first token) / (output tokens - 1),
  for completed requests with more than one output token.
- SLO attainment = requests that completed with TTFT <= slo.ttft_s and TPOT <= slo.tpot_s,
  divided by all requests that arrived (dropped and unfinished ones count as misses).
- goodput_rps = those requests / the arrival window (duration_s).
- gpu_hours = GPUs of every node x its billed time (launch request to deletion or run end).
- idle_gpu_minutes = billed GPU-minutes during which the GPU executed no engine step.
- slo_breach_minutes = scrape slices whose sliding-window P99 TTFT exceeded the SLO, counting a
  request without a first token as infinite from the moment it breached (arrival + TTFT SLO, or
  its drop if earlier).
"""

from __future__ import annotations

import math

import numpy as np

from gpuscale.serving.requests_table import COMPLETED, DROPPED, IN_FLIGHT, RequestColumns


def percentile_with_inf(sorted_values: np.ndarray, q: float) -> float:
    """numpy's linear percentile of sorted values that may end in +inf: inf as soon as the
    interpolation touches an infinite value (numpy itself gives NaN for 0 * inf)."""
    n = len(sorted_values)
    position = (n - 1) * q / 100.0
    low = int(position)
    high = min(low + 1, n - 1)
    lo_value, hi_value = float(sorted_values[low]), float(sorted_values[high])
    if math.isinf(lo_value) or (math.isinf(hi_value) and position > low):
        return math.inf
    return lo_value + (hi_value - lo_value) * (position - low)


def _rank_positions(n: int, qs: tuple[float, ...]) -> list[int]:
    """The sorted positions `percentile_with_inf` reads for each of `qs` among n values."""
    positions: set[int] = set()
    for q in qs:
        low = int((n - 1) * q / 100.0)
        positions.update((low, min(low + 1, n - 1)))
    return sorted(positions)


def partially_sorted(values: np.ndarray, qs: tuple[float, ...]) -> np.ndarray:
    """`values` with the entries `percentile_with_inf` reads for `qs` where np.sort would put
    them (np.partition: the same order statistics, so the same percentiles bit for bit, in
    linear time instead of a full sort of every request)."""
    return np.partition(values, _rank_positions(len(values), qs))


def _percentiles(values: np.ndarray) -> dict[str, float | None]:
    """p50/p90/p99; +inf where the percentile falls among requests without a first token."""
    if len(values) == 0:
        return {"p50": None, "p90": None, "p99": None}
    ordered = partially_sorted(values, (50, 90, 99))
    return {f"p{q}": round(percentile_with_inf(ordered, q), 6) for q in (50, 90, 99)}


def ttft_all_arrived(cols: RequestColumns) -> np.ndarray:
    """TTFT of every arrived request, +inf for one that never got a first token."""
    n = cols.num_arrived
    ttft = cols.first_token_s[:n] - cols.arrival_s[:n]
    return np.where(np.isnan(ttft), np.inf, ttft)


def slo_breach_minutes(cols: RequestColumns, ttft_slo_s: float, scrape_times_s: np.ndarray,
                       interval_s: float, window_s: float = 60.0) -> float:
    """Minutes (one scrape interval per slice) whose P99 TTFT over the trailing `window_s`
    exceeded the SLO. A request enters the window when its first token came, or, without one,
    when it breached (arrival + TTFT SLO) or was dropped, whichever came first; 60 s is the
    metrics store's sliding window (metrics/store.py)."""
    ttft = ttft_all_arrived(cols)
    n = cols.num_arrived
    breached_at = np.fmin(cols.arrival_s[:n] + ttft_slo_s, cols.finish_s[:n])
    known_s = np.where(np.isinf(ttft), breached_at, cols.first_token_s[:n])
    order = np.argsort(known_s, kind="stable")
    known_sorted, ttft_sorted = known_s[order], ttft[order]
    lo = np.searchsorted(known_sorted, np.asarray(scrape_times_s) - window_s, side="right")
    hi = np.searchsorted(known_sorted, np.asarray(scrape_times_s), side="right")
    # Most windows are decided by counting (`_decided`); only the others have their P99
    # computed: a partition per scrape was most of this function on a long run.
    decided, above = _decided(ttft_sorted, lo, hi, ttft_slo_s)
    breached = int((decided & above).sum())
    for start, stop in zip(lo[~decided], hi[~decided], strict=True):
        if stop > start and percentile_with_inf(partially_sorted(ttft_sorted[start:stop],
                                                                 (99.0,)), 99.0) > ttft_slo_s:
            breached += 1
    return breached * interval_s / 60.0


def _window_stats(values: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                  slo_s: float) -> tuple[np.ndarray, ...]:
    """Per window values[lo:hi]: its size, P99's two order-statistic ranks (as
    `percentile_with_inf` reads them), whether it interpolates between them, and how many
    values are > the SLO, >= the SLO and infinite (the positions where each holds, searched
    once per window bound: cheaper than a prefix sum over every request)."""
    def count(mask: np.ndarray) -> np.ndarray:
        where = np.flatnonzero(mask)
        return np.searchsorted(where, hi) - np.searchsorted(where, lo)

    n = (hi - lo).astype(np.int64)
    position = (n - 1) * 99.0 / 100.0  # the same floats as percentile_with_inf's
    low = position.astype(np.int64)
    high = np.minimum(low + 1, n - 1)
    return (n, low, high, position > low, count(values > slo_s), count(values >= slo_s),
            count(np.isinf(values)))


def _decided(values: np.ndarray, lo: np.ndarray, hi: np.ndarray,
             slo_s: float) -> tuple[np.ndarray, np.ndarray]:
    """(decided, above): which windows' P99 is known to exceed the SLO or not from counts
    alone, and for those whether it does. The k-th smallest of n values exceeds t exactly
    when at least n - k values do. With both order statistics finite, the interpolated P99
    is >= the lower one (rounding is monotone), and <= the next float above the upper one
    (their difference rounds by at most half an ulp of the upper), so it is above the SLO
    when the lower one is, and not when the upper one is below it. With the upper one
    infinite `percentile_with_inf` gives inf, or NaN (never above) when it does not
    interpolate. Every other window is left to the exact computation."""
    if not math.isfinite(slo_s):  # inf > inf is False: leave every window to the exact path
        return np.zeros(len(lo), dtype=bool), np.zeros(len(lo), dtype=bool)
    n, low, high, interpolates, above_slo, at_least_slo, infinite = \
        _window_stats(values, lo, hi, slo_s)
    nonempty = n > 0
    low_inf, high_inf = infinite >= n - low, infinite >= n - high
    inf_result = low_inf | (high_inf & interpolates)
    nan_result = high_inf & ~inf_result
    low_above = above_slo >= n - low
    high_below = at_least_slo < n - high
    above = nonempty & (inf_result | (~high_inf & low_above))
    decided = ~nonempty | inf_result | nan_result | low_above | high_below
    return decided, above


def latency_columns(cols: RequestColumns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ttft_s of requests with a first token, tpot_s of completed multi-token ones, mask)."""
    has_first = ~np.isnan(cols.first_token_s)
    ttft = cols.first_token_s[has_first] - cols.arrival_s[has_first]
    tpot, done = _tpot_columns(cols)
    return ttft, tpot, done


def _tpot_columns(cols: RequestColumns) -> tuple[np.ndarray, np.ndarray]:
    """(tpot_s of completed multi-token requests, their mask): `latency_columns` without the
    TTFT gathers, which the run summary does not read (it takes every arrival's TTFT)."""
    done = (cols.status == COMPLETED) & (cols.output_tokens > 1)
    tpot = (cols.finish_s[done] - cols.first_token_s[done]) / (cols.output_tokens[done] - 1)
    return tpot, done


def slo_met_mask(cols: RequestColumns, ttft_slo_s: float, tpot_slo_s: float) -> np.ndarray:
    completed = cols.status == COMPLETED
    ttft = cols.first_token_s - cols.arrival_s
    span = cols.finish_s - cols.first_token_s
    tpot = np.where(cols.output_tokens > 1, span / np.maximum(cols.output_tokens - 1, 1), 0.0)
    with np.errstate(invalid="ignore"):
        return completed & (ttft <= ttft_slo_s) & (tpot <= tpot_slo_s)


def slo_met_count(completed: np.ndarray, ttft_s: np.ndarray, tpot_s: np.ndarray,
                  multi: np.ndarray, ttft_slo_s: float, tpot_slo_s: float) -> int:
    """`int(slo_met_mask(cols, ttft_slo_s, tpot_slo_s).sum())` from the arrays the run
    summary has already (the mask's five full-length passes were most of it): `completed`,
    `ttft_s` (`ttft_all_arrived`) and `multi` (completed with more than one output token) over
    the arrived rows, `tpot_s` the TPOT of the `multi` rows in row order (`_tpot_columns`).
    A completed request's TTFT is finite and its TPOT the same float as the mask's; one of a
    single output token has TPOT 0, as the mask gives it."""
    ttft_ok = ttft_s <= ttft_slo_s
    met = int((completed & ttft_ok & ~multi).sum()) if tpot_slo_s >= 0.0 else 0
    return met + int((ttft_ok[multi] & (tpot_s <= tpot_slo_s)).sum())


def request_summary(cols: RequestColumns, *, ttft_slo_s: float, tpot_slo_s: float,
                    window_s: float) -> dict:
    arrived = cols.num_arrived
    status = cols.status[:arrived]
    tpot, multi = _tpot_columns(cols)
    ttft = ttft_all_arrived(cols)
    completed = status == COMPLETED
    met = slo_met_count(completed, ttft, tpot, multi[:arrived], ttft_slo_s, tpot_slo_s)
    return {
        "requests": {
            "total": int(arrived),
            "completed": int(completed.sum()),
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
