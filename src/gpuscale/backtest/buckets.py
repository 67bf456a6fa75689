"""Values drawn from a Prometheus histogram's buckets, interpolated within each bucket so that
their mean is the histogram's own (`_sum / _count`).

A bucket (lo, hi] says how many observations fell in it, not where. Drawn uniformly, a
bucket's mean is its midpoint, and vLLM's token buckets grow 1-2-5 (a 2,000-5,000 bucket's
midpoint is 3,500 whatever the prompts were): the window's token total could be off by a
third. The `_sum` fixes it: every bucket is drawn as `lo + (hi - lo) * u ** a` (u uniform),
one `a` for the whole histogram, chosen so the expected mean equals `_sum / _count` (its
closed form: E[u ** a] = 1 / (a + 1)). Draws stay inside their buckets, so the quantiles the
buckets show are kept; the within-bucket shape is the approximation (docs/backtest.md).
"""

from __future__ import annotations

import math

import numpy as np

# The share of a bucket's width the mean may sit at, at most (and 1 - it at least): a = 49 or
# 1/49 already puts nearly every draw at one end of its buckets; further is a mean the
# buckets cannot hold (a `_sum` from another scrape), read as that end.
MAX_TILT = 0.98
# An observation above the last finite bound (+Inf bucket) is drawn up to this many times
# that bound: the buckets say nothing more (vLLM's token buckets end at max_model_len, so the
# +Inf bucket holds nothing there).
INF_BUCKET_SPAN = 2.0


def bucket_edges(upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) of each bucket: the first from 0, the +Inf one up to INF_BUCKET_SPAN
    times the last finite bound."""
    finite = upper[np.isfinite(upper)]
    last = float(finite[-1]) if len(finite) else 1.0
    high = np.where(np.isfinite(upper), upper, last * INF_BUCKET_SPAN)
    low = np.concatenate(([0.0], high[:-1]))
    return low, high


def mean_share(counts: np.ndarray, low: np.ndarray, high: np.ndarray,
               mean: float | None) -> float:
    """Where in its bucket the average draw sits (0 = lower bound, 0.5 = uniform, 1 = upper),
    so that the draws' expected mean is `mean`."""
    total = float(counts.sum())
    width = float((counts * (high - low)).sum())
    if mean is None or not math.isfinite(mean) or total <= 0 or width <= 0:
        return 0.5
    share = (mean * total - float((counts * low).sum())) / width
    return min(MAX_TILT, max(1.0 - MAX_TILT, share))


def draw(counts: np.ndarray, upper: np.ndarray, mean: float | None, n: int,
         rng: np.random.Generator, *, spread: bool = True) -> np.ndarray:
    """`n` values from the bucket counts (buckets picked in proportion to them), each placed
    in its bucket so the expected mean is `mean` (None: uniformly). Without `spread`, every
    value of a bucket sits at that mean's point of it (for observations that are alike within
    one window, as the waits of requests served in turn from one queue)."""
    total = float(counts.sum())
    if n <= 0 or total <= 0:
        return np.zeros(max(n, 0))
    low, high = bucket_edges(upper)
    share = mean_share(counts, low, high, mean)
    which, within = stratified(counts / total, n, rng)
    if spread:
        exponent = 1.0 / share - 1.0  # E[u ** a] = 1 / (a + 1) = share
        if mean is not None:  # the draws' own mean, not only its expectation
            exponent = _exponent_for(low[which], high[which] - low[which], within, mean,
                                     exponent)
        within = within ** exponent
    else:
        within = np.full(n, share)
    values = low[which] + (high[which] - low[which]) * within
    # (lo, hi]: a draw at the lower bound (u ** a underflows) belongs to the bucket below.
    return np.maximum(values, np.nextafter(low[which], high[which]))


def _exponent_for(low: np.ndarray, width: np.ndarray, u: np.ndarray, mean: float,
                  guess: float) -> float:
    """The `a` whose draws `low + width * u ** a` average exactly `mean` (bisection on log a:
    the average falls as `a` grows), within the MAX_TILT bounds; `guess` when out of reach."""
    lo_log, hi_log = np.log(1.0 / MAX_TILT - 1.0), np.log(MAX_TILT / (1.0 - MAX_TILT))

    def average(log_a: float) -> float:
        return float(np.mean(low + width * u ** np.exp(log_a)))

    if not average(hi_log) <= mean <= average(lo_log):
        return guess
    for _ in range(40):
        mid = (lo_log + hi_log) / 2.0
        lo_log, hi_log = (mid, hi_log) if average(mid) > mean else (lo_log, mid)
    return float(np.exp((lo_log + hi_log) / 2.0))


def stratified(shares: np.ndarray, n: int, rng: np.random.Generator
               ) -> tuple[np.ndarray, np.ndarray]:
    """(bucket, uniform position in it) of `n` draws, shuffled: each bucket gets its share of
    `n` (whole parts, the rest by the fractions), and its positions one per equal slice of
    [0, 1): the draws hold the histogram's proportions exactly, not just on average."""
    expected = shares * n
    quota = np.floor(expected).astype(np.int64)
    rest = n - int(quota.sum())
    if rest > 0:
        fraction = expected - quota
        quota[rng.choice(len(shares), size=rest, replace=False,
                         p=fraction / fraction.sum())] += 1
    which = np.repeat(np.arange(len(shares)), quota)
    within = np.concatenate([(rng.permutation(m) + rng.random(m)) / m for m in quota if m]
                            ) if n else np.zeros(0)
    order = rng.permutation(n)
    return which[order], within[order]


def draw_tokens(counts: np.ndarray, upper: np.ndarray, mean: float | None, n: int,
                rng: np.random.Generator) -> np.ndarray:
    """Whole token counts >= 1: a draw in (lo, hi] rounded up, so it stays in its bucket
    (the mean is aimed half a token low to make up for the rounding)."""
    values = draw(counts, upper, None if mean is None else mean - 0.5, n, rng)
    return np.maximum(1, np.ceil(values)).astype(np.int64)


def share_at_most(counts: np.ndarray, upper: np.ndarray, bound: float) -> float | None:
    """The share of observations <= `bound`, linear within the bucket holding it (as
    histogram_quantile interpolates); None without observations."""
    total = float(counts.sum())
    if total <= 0:
        return None
    low, high = bucket_edges(upper)
    inside = np.clip((bound - low) / np.maximum(high - low, 1e-300), 0.0, 1.0)
    return float((counts * inside).sum()) / total
