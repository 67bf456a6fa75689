"""The same window functions as range_functions.py in plain floats, for the common case of
a few windows (an autoscaler's instant query over a handful of series): numpy's per-call cost
exceeds the arithmetic there. Python floats are IEEE doubles, so each operation rounds as Go's
does; tests/promql run every query through both paths against promtool.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

# Up to this many (series x step) windows the plain-float path is faster than numpy.
SMALL = 16


def kahan_inc(inc: float, total: float, comp: float) -> tuple[float, float]:
    """functions.go kahanSumInc (Neumaier's variant)."""
    t = total + inc
    if abs(total) >= abs(inc):
        comp += (total - t) + inc
    else:
        comp += (inc - t) + total
    return t, comp


def _sum(values: list[float]) -> float:
    total = comp = 0.0
    for v in values:
        total, comp = kahan_inc(v, total, comp)
    return total if math.isinf(total) else total + comp


def _avg(values: list[float]) -> float:
    mean = comp = count = 0.0
    for v in values:
        count += 1
        if math.isinf(mean):
            if math.isinf(v) and (mean > 0) == (v > 0):
                continue
            if not math.isinf(v) and not math.isnan(v):
                continue
        mean, comp = kahan_inc(v / count - mean / count, mean, comp)
    return mean if math.isinf(mean) else mean + comp


def _max(values: list[float]) -> float:
    best = values[0]
    for v in values:
        if v > best or math.isnan(best):
            best = v
    return best


def _min(values: list[float]) -> float:
    best = values[0]
    for v in values:
        if v < best or math.isnan(best):
            best = v
    return best


def _variance(values: list[float]) -> float:
    count = mean = c_mean = aux = c_aux = 0.0
    for v in values:
        count += 1
        delta = v - (mean + c_mean)
        mean, c_mean = kahan_inc(delta / count, mean, c_mean)
        aux, c_aux = kahan_inc(delta * (v - (mean + c_mean)), aux, c_aux)
    return (aux + c_aux) / count


def _changes(values: list[float]) -> float:
    return float(sum(1 for prev, cur in itertools.pairwise(values)
                     if cur != prev and not (math.isnan(cur) and math.isnan(prev))))


def _resets(values: list[float]) -> float:
    return float(sum(1 for prev, cur in itertools.pairwise(values) if cur < prev))


def _stddev(values: list[float]) -> float:
    try:
        return math.sqrt(_variance(values))
    except ValueError:  # NaN variance of NaN inputs stays NaN; a negative one is impossible
        return math.nan


FUNCTIONS: dict[str, Callable[[list[float]], float]] = {
    "sum_over_time": _sum, "avg_over_time": _avg, "max_over_time": _max,
    "min_over_time": _min, "stdvar_over_time": _variance, "stddev_over_time": _stddev,
    "changes": _changes, "resets": _resets,
}
