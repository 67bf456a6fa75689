"""Functions of a range vector (`rate(x[5m])`, `avg_over_time(x[2m])`, ...), over every
(series, step) window at once.

Each window is [end - range, end] with both ends included, as Prometheus 2.x selects
(engine.go matrixIterSlice: `t >= mint`, the sought sample `t == maxt`). The windows of all
series and steps are index pairs into the flattened samples, found with one `searchsorted`;
the functions then read first/last samples or walk the windows column by column, doing the
same float operations in the same order as `promql/functions.go`, so the results are the
same bits (Kahan-compensated sums included).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpuscale.promql import window_scalar
from gpuscale.promql.values import Matrix


def windows(m: Matrix, ends_ms: np.ndarray, range_ms: int) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) of shape (series, steps): series i's window at step k holds the samples
    lo[i, k] <= j < hi[i, k] of the flattened arrays."""
    n = len(m.labels)
    if n == 0:
        empty = np.zeros((0, len(ends_ms)), dtype=np.int64)
        return empty, empty
    starts_ms = ends_ms - range_ms
    base = min(int(m.t_ms.min()) if len(m.t_ms) else 0, int(starts_ms.min()))
    span = max(int(m.t_ms.max()) if len(m.t_ms) else 0, int(ends_ms.max())) - base + 1
    series = np.repeat(np.arange(n, dtype=np.int64), np.diff(m.starts))
    keys = series * span + (m.t_ms - base)
    row = (np.arange(n, dtype=np.int64) * span)[:, None]
    lo = np.searchsorted(keys, row + (starts_ms - base)[None, :], side="left")
    hi = np.searchsorted(keys, row + (ends_ms - base)[None, :], side="right")
    return lo, hi


def kahan_inc(inc: np.ndarray, total: np.ndarray, comp: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """functions.go kahanSumInc (Neumaier's variant), elementwise."""
    t = total + inc
    comp = comp + np.where(np.abs(total) >= np.abs(inc), (total - t) + inc, (inc - t) + total)
    return t, comp


def _seconds(duration_ms: int) -> float:
    """Go's `time.Duration.Seconds()` of a whole-millisecond duration."""
    return float(duration_ms // 1000) + float((duration_ms % 1000) * 1_000_000) / 1e9


def extrapolated_rate(m: Matrix, lo: np.ndarray, hi: np.ndarray, ends_ms: np.ndarray,
                      range_ms: int, *, counter: bool, per_second: bool
                      ) -> tuple[np.ndarray, np.ndarray]:
    """rate / increase / delta (functions.go extrapolatedRate), windows of >= 2 samples."""
    ok = (hi - lo) >= 2
    last_i = np.where(ok, hi - 1, 0)
    first_i = np.where(ok, lo, 0)
    t, v = m.t_ms, m.values
    if len(v) == 0:
        return np.zeros(lo.shape), ok
    first, last = v[first_i], v[last_i]
    result = last - first
    if counter:
        result = _add_resets(m, first_i, last_i, ok, result)
    range_start = (ends_ms - range_ms)[None, :]
    to_start = (t[first_i] - range_start).astype(np.float64) / 1000
    to_end = (ends_ms[None, :] - t[last_i]).astype(np.float64) / 1000
    sampled = (t[last_i] - t[first_i]).astype(np.float64) / 1000
    average = sampled / (hi - lo - 1).astype(np.float64)
    if counter:
        to_zero = sampled * (first / result)
        use_zero = (result > 0) & (first >= 0) & (to_zero < to_start)
        to_start = np.where(use_zero, to_zero, to_start)
    threshold = average * 1.1
    interval = sampled + np.where(to_start < threshold, to_start, average / 2)
    interval = interval + np.where(to_end < threshold, to_end, average / 2)
    factor = interval / sampled
    if per_second:
        factor = factor / _seconds(range_ms)
    result = result * factor
    return np.where(ok, result, 0.0), ok


def _add_resets(m: Matrix, first_i: np.ndarray, last_i: np.ndarray, ok: np.ndarray,
                result: np.ndarray) -> np.ndarray:
    """`resultValue += prevValue` at each counter reset in the window, in order (a window
    with a reset is walked sample by sample so the additions round as Go's do)."""
    v = m.values
    drop = np.zeros(len(v), dtype=np.int64)
    if len(v) > 1:
        drop[1:] = v[1:] < v[:-1]
        drop[m.starts[:-1][m.starts[:-1] < len(v)]] = 0  # no reset across series
    cum = np.concatenate(([0], np.cumsum(drop)))
    resets = np.where(ok, cum[last_i + 1] - cum[first_i + 1], 0)
    for i, k in zip(*np.nonzero(resets), strict=True):
        value = result[i, k]
        for j in range(first_i[i, k] + 1, last_i[i, k] + 1):
            if v[j] < v[j - 1]:
                value += v[j - 1]
        result[i, k] = value
    return result


def instant_value(m: Matrix, lo: np.ndarray, hi: np.ndarray, *, per_second: bool
                  ) -> tuple[np.ndarray, np.ndarray]:
    """irate / idelta: the last two samples of the window."""
    ok = (hi - lo) >= 2
    last_i = np.where(ok, hi - 1, 0)
    prev_i = np.where(ok, hi - 2, 0)
    if len(m.values) == 0:
        return np.zeros(lo.shape), ok
    last, prev = m.values[last_i], m.values[prev_i]
    result = np.where(last < prev, last, last - prev) if per_second else last - prev
    interval = m.t_ms[last_i] - m.t_ms[prev_i]
    ok = ok & (interval != 0)
    if per_second:
        result = result / (interval.astype(np.float64) / 1000)
    return np.where(ok, result, 0.0), ok


def _columns(m: Matrix, lo: np.ndarray, hi: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The windows as (rows, width) padded arrays of values and times, and the mask."""
    counts = (hi - lo).ravel()
    width = int(counts.max()) if counts.size else 0
    offsets = np.arange(width)
    mask = offsets[None, :] < counts[:, None]
    idx = np.where(mask, lo.ravel()[:, None] + offsets[None, :], 0)
    if len(m.values) == 0:
        return np.zeros(idx.shape), np.zeros(idx.shape, dtype=np.int64), mask
    return m.values[idx], m.t_ms[idx], mask


def over_time(name: str, m: Matrix, lo: np.ndarray, hi: np.ndarray, ends_ms: np.ndarray,
              param: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The `*_over_time` family, changes, resets, deriv and predict_linear."""
    shape = lo.shape
    counts = hi - lo
    need = 2 if name in ("deriv", "predict_linear") else 1
    ok = counts >= need
    if name == "count_over_time":
        return counts.astype(np.float64), ok
    if name in ("present_over_time", "absent_over_time"):
        return np.ones(shape), ok
    if name == "last_over_time":
        return (m.values[np.where(ok, hi - 1, 0)] if len(m.values) else np.zeros(shape)), ok
    if lo.size <= window_scalar.SMALL and name in window_scalar.FUNCTIONS:
        return _few_windows(window_scalar.FUNCTIONS[name], m, lo, hi, ok), ok
    values, times, mask = _columns(m, lo, hi)
    step_ends = np.broadcast_to(ends_ms[None, :], shape).ravel()
    flat_param = None if param is None else np.broadcast_to(param[None, :], shape).ravel()
    out = _COLUMN_FUNCTIONS[name](values, times, mask, step_ends, flat_param)
    return out.reshape(shape), ok


def _few_windows(function: Callable[[list[float]], float], m: Matrix, lo: np.ndarray,
                 hi: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """`function` of each window, in plain floats (window_scalar.py)."""
    values = m.values.tolist()
    out = np.zeros(lo.shape)
    for (i, k), start in np.ndenumerate(lo):
        if ok[i, k]:
            out[i, k] = function(values[start:hi[i, k]])
    return out


def _sum(values, times, mask, ends, param):
    total = np.zeros(len(values))
    comp = np.zeros(len(values))
    for j in range(values.shape[1]):
        inc = np.where(mask[:, j], values[:, j], 0.0)
        new_total, new_comp = kahan_inc(inc, total, comp)
        total = np.where(mask[:, j], new_total, total)
        comp = np.where(mask[:, j], new_comp, comp)
    return np.where(np.isinf(total), total, total + comp)


def _avg(values, times, mask, ends, param):
    mean = np.zeros(len(values))
    comp = np.zeros(len(values))
    count = np.zeros(len(values))
    for j in range(values.shape[1]):
        live = mask[:, j]
        v = values[:, j]
        count = count + live
        step = live & ~mean_stays_infinite(mean, v)
        safe = np.where(count > 0, count, 1.0)
        new_mean, new_comp = kahan_inc(v / safe - mean / safe, mean, comp)
        mean = np.where(step, new_mean, mean)
        comp = np.where(step, new_comp, comp)
    return np.where(np.isinf(mean), mean, mean + comp)


def mean_stays_infinite(mean: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Where Prometheus's running mean skips a value: the mean is infinite and the value is
    the same infinity or finite (`Inf + x - Inf` would make it NaN; functions.go
    funcAvgOverTime, engine.go aggregation AVG)."""
    return np.isinf(mean) & ((np.isinf(v) & ((mean > 0) == (v > 0)))
                             | (~np.isinf(v) & ~np.isnan(v)))


def _extreme(greater: bool) -> Callable:
    def run(values, times, mask, ends, param):
        best = values[:, 0].copy() if values.shape[1] else np.zeros(len(values))
        for j in range(1, values.shape[1]):
            v = values[:, j]
            better = (v > best) if greater else (v < best)
            best = np.where(mask[:, j] & (better | np.isnan(best)), v, best)
        return best
    return run


def _variance(values, times, mask, ends, param):
    count = np.zeros(len(values))
    mean = np.zeros(len(values))
    c_mean = np.zeros(len(values))
    aux = np.zeros(len(values))
    c_aux = np.zeros(len(values))
    for j in range(values.shape[1]):
        live = mask[:, j]
        v = values[:, j]
        count = count + live
        delta = v - (mean + c_mean)
        safe = np.where(count > 0, count, 1.0)
        new_mean, new_c_mean = kahan_inc(delta / safe, mean, c_mean)
        new_aux, new_c_aux = kahan_inc(delta * (v - (new_mean + new_c_mean)), aux, c_aux)
        mean = np.where(live, new_mean, mean)
        c_mean = np.where(live, new_c_mean, c_mean)
        aux = np.where(live, new_aux, aux)
        c_aux = np.where(live, new_c_aux, c_aux)
    return (aux + c_aux) / np.where(count > 0, count, 1.0)


def _changes(values, times, mask, ends, param, resets: bool = False):
    out = np.zeros(len(values))
    for j in range(1, values.shape[1]):
        cur, prev = values[:, j], values[:, j - 1]
        hit = cur < prev if resets else (cur != prev) & ~(np.isnan(cur) & np.isnan(prev))
        out = out + (mask[:, j] & hit)
    return out


def _resets(values, times, mask, ends, param):
    return _changes(values, times, mask, ends, param, resets=True)


def _regression(values, times, mask, intercept_ms):
    """functions.go linearRegression: (slope, intercept) per window."""
    n = mask.sum(axis=1).astype(np.float64)
    sums = {k: (np.zeros(len(values)), np.zeros(len(values))) for k in ("x", "y", "xy", "x2")}
    const_y = np.ones(len(values), dtype=bool)
    init_y = values[:, 0] if values.shape[1] else np.zeros(len(values))
    for j in range(values.shape[1]):
        live = mask[:, j]
        v = values[:, j]
        if j > 0:
            const_y &= ~live | (v == init_y)
        x = (times[:, j] - intercept_ms).astype(np.float64) / 1e3
        for key, inc in (("x", x), ("y", v), ("xy", x * v), ("x2", x * x)):
            total, comp = sums[key]
            new_total, new_comp = kahan_inc(inc, total, comp)
            sums[key] = (np.where(live, new_total, total), np.where(live, new_comp, comp))
    sx, sy, sxy, sx2 = (sums[k][0] + sums[k][1] for k in ("x", "y", "xy", "x2"))
    cov = sxy - sx * sy / n
    var = sx2 - sx * sx / n
    slope = cov / var
    intercept = sy / n - slope * sx / n
    inf_y = np.isinf(init_y)
    slope = np.where(const_y, np.where(inf_y, np.nan, 0.0), slope)
    intercept = np.where(const_y, np.where(inf_y, np.nan, init_y), intercept)
    return slope, intercept


def _deriv(values, times, mask, ends, param):
    return _regression(values, times, mask, times[:, 0] if times.shape[1] else 0)[0]


def _predict_linear(values, times, mask, ends, param):
    slope, intercept = _regression(values, times, mask, ends)
    return slope * param + intercept


def _quantile(values, times, mask, ends, param):
    from gpuscale.promql.aggregation import quantile

    return np.array([quantile(float(param[i]), list(values[i][mask[i]]))
                     for i in range(len(values))])


_COLUMN_FUNCTIONS: dict[str, Callable] = {
    "sum_over_time": _sum,
    "avg_over_time": _avg,
    "max_over_time": _extreme(True),
    "min_over_time": _extreme(False),
    "stdvar_over_time": _variance,
    "stddev_over_time": lambda *a: np.sqrt(_variance(*a)),
    "changes": _changes,
    "resets": _resets,
    "deriv": _deriv,
    "predict_linear": _predict_linear,
    "quantile_over_time": _quantile,
}
