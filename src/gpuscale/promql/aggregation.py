"""Aggregation operators (`sum by (le) (...)`, `avg`, `max`, `topk`, ...), every step at once.

A row's group is fixed by its labels, so groups are found once and each step aggregates the
rows present then. Rows are combined in row order (the order Prometheus iterates its input
vector, engine.go `aggregation`), with the same float operations: `sum` adds in order
(`np.add.at` is unbuffered and ordered), `avg` keeps Prometheus's incremental mean,
`stddev`/`stdvar` its Welford update, `max`/`min` skip a NaN unless every value is NaN.
"""

from __future__ import annotations

import math

import numpy as np

from gpuscale.promql import labels as lbl
from gpuscale.promql.errors import PromQLError
from gpuscale.promql.labels import Labels
from gpuscale.promql.range_functions import mean_stays_infinite
from gpuscale.promql.values import Vector, empty_vector


def group_labels(labels: Labels, grouping: tuple[str, ...], without: bool) -> Labels:
    if without:
        return lbl.without(labels, (*grouping, lbl.NAME))
    return lbl.keep(labels, grouping)


def _groups(vec: Vector, grouping: tuple[str, ...], without: bool
            ) -> tuple[list[Labels], np.ndarray]:
    """Group labels in order of first appearance, and each row's group index."""
    index: dict[Labels, int] = {}
    gid = np.empty(len(vec.labels), dtype=np.int64)
    for i, ls in enumerate(vec.labels):
        key = group_labels(ls, grouping, without)
        gid[i] = index.setdefault(key, len(index))
    return list(index), gid


def aggregate(op: str, vec: Vector, grouping: tuple[str, ...], without: bool,
              param: np.ndarray | str | None) -> Vector:
    steps = vec.steps
    if not vec.labels:
        return empty_vector(steps)
    if op in ("topk", "bottomk"):
        assert isinstance(param, np.ndarray)
        return _top(op, vec, grouping, without, param)
    if op == "count_values":
        assert isinstance(param, str)
        return _count_values(vec, grouping, without, param)
    keys, gid = _groups(vec, grouping, without)
    shape = (len(keys), steps)
    count = np.zeros(shape)
    np.add.at(count, gid, vec.present.astype(np.float64))
    values = vec.values
    if op == "sum":
        out = np.zeros(shape)
        np.add.at(out, gid, np.where(vec.present, values, 0.0))
    elif op in ("max", "min"):
        out = np.full(shape, np.nan)
        (np.fmax if op == "max" else np.fmin).at(out, gid, np.where(vec.present, values,
                                                                      np.nan))
    elif op == "count":
        out = count.copy()
    elif op == "group":
        out = np.ones(shape)
    elif op == "avg":
        out = _avg(vec, gid, shape)
    elif op in ("stddev", "stdvar"):
        out = _variance(vec, gid, shape)
        out = np.sqrt(out) if op == "stddev" else out
    elif op == "quantile":
        assert isinstance(param, np.ndarray)
        out = _quantile(vec, gid, shape, param)
    else:
        raise PromQLError(f"aggregation {op}() is not evaluated by gpuscale")
    return Vector(keys, out, count > 0)


def _avg(vec: Vector, gid: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    mean = np.zeros(shape)
    count = np.zeros(shape)
    for i in range(len(vec.labels)):
        g, live, v = gid[i], vec.present[i], vec.values[i]
        first = live & (count[g] == 0)
        count[g] += live
        m = mean[g]
        c = np.where(count[g] > 0, count[g], 1.0)
        updated = m + (v / c - m / c)
        mean[g] = np.where(first, v, np.where(live & ~mean_stays_infinite(m, v), updated, m))
    return mean


def _variance(vec: Vector, gid: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    mean = np.zeros(shape)
    total = np.zeros(shape)
    count = np.zeros(shape)
    for i in range(len(vec.labels)):
        g, live, v = gid[i], vec.present[i], vec.values[i]
        first = live & (count[g] == 0)
        count[g] += live
        c = np.where(count[g] > 0, count[g], 1.0)
        delta = v - mean[g]
        new_mean = mean[g] + delta / c
        new_total = total[g] + delta * (v - new_mean)
        mean[g] = np.where(first, v, np.where(live, new_mean, mean[g]))
        total[g] = np.where(first, 0.0, np.where(live, new_total, total[g]))
    return total / np.where(count > 0, count, 1.0)


def quantile(q: float, values: list[float]) -> float:
    """functions.go `quantile` (NaNs sort first, linear between the two neighbours)."""
    if not values or math.isnan(q):
        return math.nan
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    ordered = sorted(values, key=lambda v: (not math.isnan(v), v if not math.isnan(v) else 0))
    n = float(len(ordered))
    rank = q * (n - 1)
    lower = max(0.0, math.floor(rank))
    upper = min(n - 1, lower + 1)
    weight = rank - math.floor(rank)
    return ordered[int(lower)] * (1 - weight) + ordered[int(upper)] * weight


def _quantile(vec: Vector, gid: np.ndarray, shape: tuple[int, int], q: np.ndarray
              ) -> np.ndarray:
    out = np.full(shape, np.nan)
    for g in range(shape[0]):
        rows = np.flatnonzero(gid == g)
        for k in range(shape[1]):
            live = rows[vec.present[rows, k]]
            if len(live):
                out[g, k] = quantile(float(q[k]), [float(x) for x in vec.values[live, k]])
    return out


def _top(op: str, vec: Vector, grouping: tuple[str, ...], without: bool, param: np.ndarray
         ) -> Vector:
    """topk / bottomk: the k largest (smallest) rows per group, with their own labels; a NaN
    is replaced first (engine.go's heaps), ties keep the earlier row."""
    _keys, gid = _groups(vec, grouping, without)
    steps = vec.steps
    chosen = np.zeros((len(vec.labels), steps), dtype=bool)
    for k_step in range(steps):
        k = param[k_step]
        if not math.isfinite(k) or abs(k) >= 2**63:
            raise PromQLError(f"Scalar value {k} overflows int64")
        k = int(k)
        if k < 1:
            continue
        kept: dict[int, list[int]] = {}
        for i in np.flatnonzero(vec.present[:, k_step]).tolist():
            bag = kept.setdefault(int(gid[i]), [])
            v = vec.values[i, k_step]
            if len(bag) < k:
                bag.append(i)
                continue
            worst = min(bag, key=lambda j: _order(vec.values[j, k_step], op))
            if _order(v, op) > _order(vec.values[worst, k_step], op):
                bag[bag.index(worst)] = i
        for bag in kept.values():
            chosen[bag, k_step] = True
    return Vector(list(vec.labels), vec.values.copy(), chosen & vec.present)


def _order(value: float, op: str) -> tuple[int, float]:
    """Rank for topk (bottomk reversed): a NaN ranks lowest, so it is replaced first."""
    if math.isnan(value):
        return (0, 0.0)
    return (1, value if op == "topk" else -value)


def format_value(value: float) -> str:
    """Go's strconv.FormatFloat(v, 'f', -1, 64): shortest digits, no exponent."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    text = np.format_float_positional(value, unique=True, trim="-")
    return text


def _count_values(vec: Vector, grouping: tuple[str, ...], without: bool, label: str
                  ) -> Vector:
    if not lbl.valid_name(label):
        raise PromQLError(f"invalid label name {label!r}")
    out_labels: dict[Labels, int] = {}
    cells: dict[tuple[int, int], float] = {}
    names = grouping if without else (*grouping, label)
    for k in range(vec.steps):
        for i in np.flatnonzero(vec.present[:, k]):
            ls = lbl.with_label(vec.labels[i], label, format_value(float(vec.values[i, k])))
            key = group_labels(ls, names, without)
            row = out_labels.setdefault(key, len(out_labels))
            cells[(row, k)] = cells.get((row, k), 0.0) + 1.0
    values = np.zeros((len(out_labels), vec.steps))
    present = np.zeros((len(out_labels), vec.steps), dtype=bool)
    for (row, k), count in cells.items():
        values[row, k] = count
        present[row, k] = True
    return Vector(list(out_labels), values, present)
