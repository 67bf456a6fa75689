"""Functions of instant vectors and scalars (`abs`, `clamp_max`, `label_replace`,
`histogram_quantile`, `scalar`, `vector`, ...), as promql/functions.go computes them.

Each takes the evaluated arguments over S steps and returns the result over the same steps;
those that change a value drop the metric name, as Prometheus does.
"""

from __future__ import annotations

import calendar
import math
import re
from collections.abc import Callable
from datetime import datetime, timezone

import numpy as np

from gpuscale.promql import labels as lbl
from gpuscale.promql.errors import PromQLError
from gpuscale.promql.labels import Labels
from gpuscale.promql.parse import compile_regex
from gpuscale.promql.values import Scalar, Vector, merge_rows


def _sgn(v: np.ndarray) -> np.ndarray:
    return np.where(v < 0, -1.0, np.where(v > 0, 1.0, v))


MATH: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "abs": np.abs, "ceil": np.ceil, "floor": np.floor, "exp": np.exp, "sqrt": np.sqrt,
    "ln": np.log, "log2": np.log2, "log10": np.log10, "sgn": _sgn, "deg": np.degrees,
    "rad": np.radians, "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin,
    "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
}


def with_values(vec: Vector, values: np.ndarray, present: np.ndarray | None = None) -> Vector:
    """`vec` with new values and the metric name dropped (simpleFunc)."""
    return merge_rows([lbl.drop_name(ls) for ls in vec.labels], values,
                      vec.present if present is None else vec.present & present)


def math_function(name: str, vec: Vector) -> Vector:
    return with_values(vec, MATH[name](vec.values))


def round_to(vec: Vector, nearest: np.ndarray) -> Vector:
    inverse = 1.0 / nearest[None, :]
    return with_values(vec, np.floor(vec.values * inverse + 0.5) / inverse)


def clamp(vec: Vector, low: np.ndarray | None, high: np.ndarray | None) -> Vector:
    values = vec.values
    keep = np.ones(values.shape, dtype=bool)
    if high is not None:
        values = np.minimum(high[None, :], values)
    if low is not None:
        values = np.maximum(low[None, :], values)
    if low is not None and high is not None:
        keep &= ~np.asarray(high < low)[None, :]  # funcClamp: nothing when max < min
    return with_values(vec, values, keep)


def scalar_of(vec: Vector) -> Scalar:
    """scalar(v): the value of the only element, else NaN."""
    count = vec.present.sum(axis=0)
    out = np.full(vec.steps, np.nan)
    for k in np.flatnonzero(count == 1):
        out[k] = vec.values[vec.present[:, k], k][0]
    return Scalar(out)


def vector_of(scalar: Scalar) -> Vector:
    steps = len(scalar.values)
    return Vector([()], scalar.values[None, :].copy(), np.ones((1, steps), dtype=bool))


def absent(vec: Vector, absent_labels: Labels) -> Vector:
    steps = vec.steps
    missing: np.ndarray = np.asarray(~vec.present.any(axis=0))
    return Vector([absent_labels], np.ones((1, steps)), missing[None, :])


def go_parse_float(text: str) -> float | None:
    """strconv.ParseFloat's reading of a bucket bound (None when Go would refuse it)."""
    if not text or "_" in text or text != text.strip():
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _expand(template: str, match: re.Match) -> str:
    """Go's regexp Expand: `$1`, `${1}`, `$name`, `$$`; an unknown name expands to ''."""
    out = []
    i = 0
    while i < len(template):
        ch = template[i]
        if ch != "$" or i + 1 >= len(template):
            out.append(ch)
            i += 1
            continue
        nxt = template[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
            continue
        if nxt == "{":
            end = template.find("}", i + 2)
            name = template[i + 2:end] if end > 0 else ""
            if end < 0 or not re.fullmatch(r"[A-Za-z0-9_]+", name):
                out.append(ch)
                i += 1
                continue
            i = end + 1
        else:
            found = re.match(r"[A-Za-z0-9_]+", template[i + 1:])
            if not found:
                out.append(ch)
                i += 1
                continue
            name = found.group(0)
            i += 1 + len(name)
        out.append(_group(match, name))
    return "".join(out)


def _group(match: re.Match, name: str) -> str:
    if name.isdigit():
        index = int(name)
        return (match.group(index) or "") if index <= (match.re.groups or 0) else ""
    return (match.group(name) or "") if name in match.re.groupindex else ""


def label_replace(vec: Vector, dst: str, replacement: str, src: str, regex: str) -> Vector:
    pattern = compile_regex(regex)
    if not lbl.valid_name(dst):
        raise PromQLError(f"invalid destination label name in label_replace(): {dst}")
    out = []
    for ls in vec.labels:
        found = pattern.fullmatch(lbl.get(ls, src))
        out.append(ls if found is None else lbl.with_label(ls, dst, _expand(replacement, found)))
    return merge_rows(out, vec.values, vec.present)


def label_join(vec: Vector, dst: str, separator: str, sources: list[str]) -> Vector:
    if not lbl.valid_name(dst):
        raise PromQLError(f"invalid destination label name in label_join(): {dst}")
    out = [lbl.with_label(ls, dst, separator.join(lbl.get(ls, s) for s in sources))
           for ls in vec.labels]
    return merge_rows(out, vec.values, vec.present)


def bucket_quantile(q: float, buckets: list[tuple[float, float]]) -> float:
    """quantile.go bucketQuantile over (upper bound, cumulative count) pairs."""
    if math.isnan(q):
        return math.nan
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    buckets = sorted(buckets, key=lambda b: b[0])
    if not math.isinf(buckets[-1][0]) or buckets[-1][0] < 0:
        return math.nan
    merged: list[list[float]] = []
    for bound, count in buckets:  # coalesceBuckets
        if merged and merged[-1][0] == bound:
            merged[-1][1] += count
        else:
            merged.append([bound, count])
    peak = merged[0][1]  # ensureMonotonic
    for bucket in merged[1:]:
        if bucket[1] > peak:
            peak = bucket[1]
        elif bucket[1] < peak:
            bucket[1] = peak
    if len(merged) < 2:
        return math.nan
    observations = merged[-1][1]
    if observations == 0:
        return math.nan
    rank = q * observations
    b = next((i for i in range(len(merged) - 1) if merged[i][1] >= rank), len(merged) - 1)
    if b == len(merged) - 1:
        return merged[-2][0]
    if b == 0 and merged[0][0] <= 0:
        return merged[0][0]
    start, end, count = 0.0, merged[b][0], merged[b][1]
    if b > 0:
        start = merged[b - 1][0]
        count -= merged[b - 1][1]
        rank -= merged[b - 1][1]
    return start + (end - start) * (rank / count)


def histogram_quantile(q: np.ndarray, vec: Vector) -> Vector:
    groups: dict[Labels, list[tuple[int, float]]] = {}
    for i, ls in enumerate(vec.labels):
        bound = go_parse_float(lbl.get(ls, lbl.BUCKET))
        if bound is None:
            continue  # no `le` label or not a number: skipped, as Prometheus skips it
        groups.setdefault(lbl.without(ls, (lbl.BUCKET,)), []).append((i, bound))
    steps = vec.steps
    out_labels = [lbl.without(key, (lbl.NAME,)) for key in groups]
    values = np.zeros((len(groups), steps))
    present = np.zeros((len(groups), steps), dtype=bool)
    for g, rows in enumerate(groups.values()):
        index = np.array([r for r, _ in rows])
        bounds = [b for _, b in rows]
        for k in range(steps):
            live = vec.present[index, k]
            if not live.any():
                continue
            pairs = [(bounds[n], float(vec.values[index[n], k])) for n in np.flatnonzero(live)]
            values[g, k] = bucket_quantile(float(q[k]), pairs)
            present[g, k] = True
    return merge_rows(out_labels, values, present)


_DATE_PARTS: dict[str, Callable[[datetime], float]] = {
    "minute": lambda d: d.minute, "hour": lambda d: d.hour,
    "day_of_week": lambda d: (d.weekday() + 1) % 7, "day_of_month": lambda d: d.day,
    "day_of_year": lambda d: d.timetuple().tm_yday,
    "days_in_month": lambda d: calendar.monthrange(d.year, d.month)[1],
    "month": lambda d: d.month, "year": lambda d: d.year,
}


def _date_part(name: str, seconds: float) -> float:
    if not math.isfinite(seconds):
        return math.nan
    moment = datetime.fromtimestamp(int(seconds), tz=timezone.utc)  # time.Unix(int64(v), 0)
    return float(_DATE_PARTS[name](moment))


def date_function(name: str, vec: Vector | None, steps_ms: np.ndarray) -> Vector:
    if vec is None:
        values = np.array([[_date_part(name, t // 1000) for t in steps_ms.tolist()]])
        return Vector([()], values, np.ones(values.shape, dtype=bool))
    values = np.vectorize(lambda v: _date_part(name, v), otypes=[float])(vec.values) \
        if vec.values.size else vec.values
    return with_values(vec, values)


def sort_rows(vec: Vector, descending: bool) -> Vector:
    """sort / sort_desc: the rows in value order (NaN last), by the first step's values."""
    if not vec.labels or vec.steps != 1:
        return vec
    values = vec.values[:, 0]
    key = [(math.isnan(v), -v if descending else v) for v in values.tolist()]
    order = sorted(range(len(key)), key=lambda i: key[i])
    return Vector([vec.labels[i] for i in order], vec.values[order], vec.present[order])
