"""Arrival-time processes as pure numpy functions: arrays in, sorted float64 seconds out.

No Python object per request: counts are drawn first and times filled in whole arrays, so a
ten-million-request day costs a few numpy passes. All randomness comes from the `rng` passed in.
"""

from __future__ import annotations

import math

import numpy as np

from gpuscale.errors import UserInputError

# Refuse to generate more than this many requests in one process: at 24 bytes a request
# (three 8-byte columns) 200 M requests already need ~5 GB before any simulation state.
MAX_GENERATED_REQUESTS = 200_000_000


def _check_volume(expected: float, what: str) -> None:
    if expected > MAX_GENERATED_REQUESTS:
        raise UserInputError(
            f"{what} would generate about {expected:,.0f} requests, more than the "
            f"{MAX_GENERATED_REQUESTS:,} one run can hold; lower the rate or the duration"
        )


def piecewise_poisson_arrivals(
    rng: np.random.Generator,
    starts_s: np.ndarray,
    durations_s: np.ndarray,
    rates_per_s: np.ndarray,
) -> np.ndarray:
    """Poisson arrivals, rate constant within each of a set of disjoint intervals.

    Exact: the count in an interval is Poisson(rate * duration) and, given the count, the times
    are independent uniforms in it (order statistics), so one global sort finishes the job.
    """
    starts_s = np.asarray(starts_s, dtype=np.float64)
    durations_s = np.asarray(durations_s, dtype=np.float64)
    means = np.asarray(rates_per_s, dtype=np.float64) * durations_s
    _check_volume(float(means.sum()), "this arrival process")
    counts = rng.poisson(means)
    times = rng.random(int(counts.sum()))
    times *= np.repeat(durations_s, counts)
    times += np.repeat(starts_s, counts)
    times.sort()
    return times


def poisson_arrivals(rng: np.random.Generator, rate_per_s: float, duration_s: float) -> np.ndarray:
    """Homogeneous Poisson arrivals on [0, duration_s)."""
    return piecewise_poisson_arrivals(
        rng, np.zeros(1), np.array([duration_s]), np.array([rate_per_s])
    )


def gamma_renewal_arrivals(
    rng: np.random.Generator, rate_per_s: float, cv: float, duration_s: float
) -> np.ndarray:
    """Renewal process on [0, duration_s) with gamma inter-arrival gaps of the given CV.

    Gamma with shape k = 1/cv^2 and scale = mean_gap/k has mean `1/rate_per_s` and coefficient
    of variation `cv`; cv = 1 is the exponential (Poisson), cv > 1 clusters arrivals into
    bursts separated by lulls. The process starts at an (unrecorded) arrival at time 0, so the
    first recorded arrival is one ordinary gap in. Gaps are drawn in chunks sized from the
    expected remaining count, so the loop runs a handful of times, not once per request.
    """
    mean_gap_s = 1.0 / rate_per_s
    _check_volume(rate_per_s * duration_s, "this bursty process")
    shape = 1.0 / (cv * cv)
    chunks: list[np.ndarray] = []
    now_s = 0.0
    while True:
        remaining = (duration_s - now_s) / mean_gap_s
        size = max(1024, int(remaining * 1.05 + 6.0 * cv * math.sqrt(remaining + 1.0)))
        times = now_s + np.cumsum(rng.gamma(shape, mean_gap_s / shape, size=size))
        if times[-1] >= duration_s:
            chunks.append(times[times < duration_s])
            break
        chunks.append(times)
        now_s = float(times[-1])
    return np.concatenate(chunks)


def diurnal_rate_per_s(
    t_s: np.ndarray, min_rate_per_s: float, max_rate_per_s: float, period_s: float, peak_at_s: float
) -> np.ndarray:
    """Raised-cosine rate: `max` at `peak_at_s` (+ whole periods), `min` half a period away."""
    phase = 2.0 * np.pi * (np.asarray(t_s) - peak_at_s) / period_s
    return min_rate_per_s + (max_rate_per_s - min_rate_per_s) * 0.5 * (1.0 + np.cos(phase))


def diurnal_arrivals(
    rng: np.random.Generator,
    min_rate_per_s: float,
    max_rate_per_s: float,
    period_s: float,
    peak_at_s: float,
    duration_s: float,
) -> np.ndarray:
    """Non-homogeneous Poisson arrivals with the raised-cosine rate, by thinning.

    Lewis-Shedler thinning is exact: draw a Poisson process at the peak rate and keep each
    point with probability rate(t) / peak rate. Cost is the peak-rate count, at most
    max/mean (< 2x for min >= 0) times the kept count.
    """
    candidates = poisson_arrivals(rng, max_rate_per_s, duration_s)
    if max_rate_per_s <= 0:
        return candidates
    rate = diurnal_rate_per_s(candidates, min_rate_per_s, max_rate_per_s, period_s, peak_at_s)
    keep = rng.random(len(candidates)) * max_rate_per_s < rate
    return candidates[keep]


def spike_arrivals(
    rng: np.random.Generator, at_s: float, count: int, spread_s: float
) -> np.ndarray:
    """`count` arrivals uniform on [at_s, at_s + spread_s] (all at `at_s` if spread_s is 0)."""
    _check_volume(count, "this spike")
    times = at_s + rng.random(count) * spread_s
    times.sort()
    return times
