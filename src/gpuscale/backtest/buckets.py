"""Values drawn from a Prometheus histogram's buckets, placed within each bucket by a density
that runs on from the neighbouring buckets' and holds the histogram's own mean
(`_sum / _count`).

A bucket (lo, hi] says how many observations fell in it, not where. vLLM's token buckets
grow 1-2-5, so where inside a 2,000-5,000 bucket the draws go moves the window's token total
by a third, and how they fall inside 200-500 decides the tail. Drawn uniformly, every bucket
holds a step of density; here each bucket's density is a power law in the value (linear in
log-log), its slope the slope of the log density between the neighbouring buckets' (a
histogram of a smooth distribution falls through a bucket as it falls across it; a bucket
alone, or the first from 0, is drawn as it lies). The `_sum` then tilts every slope by one
amount, found so the draws' mean is the histogram's own. Draws stay inside their buckets,
so the quantiles the buckets show are kept; the within-bucket shape is the approximation
(docs/backtest.md; on lognormal lengths its variance is within a few per cent, where one
uniform bucket shape tilted to the mean overstates it by a quarter).
"""

from __future__ import annotations

import math

import numpy as np

# The share of a bucket's width the mean may sit at, at most (and 1 - it at least), for the
# draws placed at one point (`spread=False`): further is a mean the buckets cannot hold (a
# `_sum` from another scrape), read as that end.
MAX_TILT = 0.98
# The steepest log-log slope of a bucket's density: at 40 a 1-2-5 bucket puts nearly every
# draw at one end (2 ** 40); a mean beyond that is one the buckets cannot hold.
MAX_SLOPE = 40.0
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
    """`n` values from the bucket counts (buckets picked in proportion to them), placed in
    their buckets by the neighbours' slopes, tilted so the draws' mean is `mean` (None: no
    tilt). Without `spread`, every value of a bucket sits at the point of it that `mean`
    implies (for observations that are alike within one window, as the waits of requests
    served in turn from one queue)."""
    total = float(counts.sum())
    if n <= 0 or total <= 0:
        return np.zeros(max(n, 0))
    low, high = bucket_edges(upper)
    which, within = stratified(counts / total, n, rng)
    if not spread:
        return low[which] + (high[which] - low[which]) * mean_share(counts, low, high, mean)
    slopes = log_slopes(counts, low, high)[which]
    tilt = 0.0 if mean is None else _tilt_for(low[which], high[which], slopes, within, mean)
    values = _placed(low[which], high[which], slopes + tilt, within)
    # (lo, hi]: a draw at the lower bound belongs to the bucket below.
    return np.maximum(values, np.nextafter(low[which], high[which]))


def log_slopes(counts: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Per bucket, the slope of log density against log value across it: the central
    difference of the neighbouring buckets' log densities (one side where the other is
    empty, 0 alone or from 0), bounded by MAX_SLOPE."""
    usable = (counts > 0) & (low > 0)
    log_lo, log_hi = np.log(np.where(low > 0, low, 1.0)), np.log(high)
    centre = (log_lo + log_hi) / 2.0
    density = np.log(np.where(usable, counts, 1.0) / np.maximum(log_hi - log_lo, 1e-12))
    slopes = np.zeros(len(counts))
    for b in np.flatnonzero(usable):
        left = b - 1 if b > 0 and usable[b - 1] else b
        right = b + 1 if b + 1 < len(counts) and usable[b + 1] else b
        if right != left:
            slopes[b] = (density[right] - density[left]) / (centre[right] - centre[left])
    return np.clip(slopes, -MAX_SLOPE, MAX_SLOPE)


def _placed(low: np.ndarray, high: np.ndarray, slopes: np.ndarray,
            u: np.ndarray) -> np.ndarray:
    """The inverse distribution function, at `u`, of a density proportional to
    value ** (slope - 1) on (low, high] (log density linear in log value, `slope`); a
    bucket from 0 as value ** slope (uniform untilted: its slope is 0, its exponent
    1 + the tilt)."""
    from_zero = low <= 0
    log_lo = np.log(np.where(from_zero, 1.0, low))
    width = np.log(high) - log_lo
    flat = np.abs(slopes * width) < 1e-9
    safe = np.where(flat, 1.0, slopes)
    logs = np.where(flat, log_lo + u * width,
                    log_lo + np.log1p(u * np.expm1(safe * width)) / safe)
    exponent = np.maximum(1.0 + slopes, 1.0 / MAX_SLOPE)
    return np.where(from_zero, high * u ** (1.0 / exponent), np.exp(logs))


def _tilt_for(low: np.ndarray, high: np.ndarray, slopes: np.ndarray, u: np.ndarray,
              mean: float) -> float:
    """The tilt added to every slope so the draws average `mean` (bisection: the average
    grows with the tilt), within +-MAX_SLOPE; the nearer bound when out of reach."""
    def average(tilt: float) -> float:
        return float(np.mean(_placed(low, high, slopes + tilt, u)))

    lo, hi = -MAX_SLOPE, MAX_SLOPE
    if average(lo) >= mean:
        return lo
    if average(hi) <= mean:
        return hi
    for _ in range(40):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if average(mid) < mean else (lo, mid)
    return (lo + hi) / 2.0


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
