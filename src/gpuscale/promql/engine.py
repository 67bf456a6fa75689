"""The evaluator: a parsed query over the store at one or many steps, as Prometheus 2.x does.

Every node is evaluated for all its steps at once (an instant query is one step; a subquery
is its own aligned steps), following promql/engine.go: instant selectors take the latest
sample at or before the step within the 5-minute lookback (a staleness marker ends it),
range selectors take [t - range, t], subqueries step from the first multiple of their step
after `t - offset - range`. Results of an instant query are cached per (query, time, store
revision): autoscalers at one tick ask the same question.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuscale.promql import aggregation, functions, matching
from gpuscale.promql import labels as lbl
from gpuscale.promql import range_functions as rf
from gpuscale.promql.errors import PromQLError
from gpuscale.promql.parse import (
    RANGE_FUNCTIONS,
    Agg,
    Binary,
    Call,
    Neg,
    Node,
    Num,
    RangeSel,
    Selector,
    Str,
    Subquery,
    parse,
    value_type,
)
from gpuscale.promql.store import SeriesStore, is_stale
from gpuscale.promql.values import Matrix, Scalar, StringValue, Vector, merge_rows

# Prometheus defaults: --query.lookback-delta 5m; a subquery without a step uses the global
# evaluation_interval (1m by default; cmd/prometheus/main.go, config/config.go).
LOOKBACK_MS = 300_000
SUBQUERY_STEP_MS = 60_000

Value = Vector | Scalar | StringValue | Matrix


@dataclass(frozen=True)
class _Steps:
    times: np.ndarray  # int64 ms, the evaluation steps
    start_ms: int  # the top-level query's start and end (`@ start()`, `@ end()`)
    end_ms: int


class Engine:
    """Evaluates PromQL over one `SeriesStore`."""

    def __init__(self, store: SeriesStore, *, lookback_ms: int = LOOKBACK_MS,
                 subquery_step_ms: int = SUBQUERY_STEP_MS) -> None:
        self.store = store
        self.lookback_ms = lookback_ms
        self.subquery_step_ms = subquery_step_ms
        self._cache: dict[tuple[str, int], tuple[int, Value]] = {}
        self._lookup_cache: dict[int, tuple[list, list, list]] = {}

    def instant(self, query: str | Node, t_ms: int) -> Value:
        """The query's value at `t_ms` (an instant query, `/api/v1/query?time=`)."""
        node = parse(query) if isinstance(query, str) else query
        key = (str(query), int(t_ms))
        cached = self._cache.get(key) if isinstance(query, str) else None
        if cached is not None and cached[0] == self.store.revision:
            return cached[1]
        steps = _Steps(np.array([t_ms], dtype=np.int64), int(t_ms), int(t_ms))
        # Floating-point edge cases (0/0, overflow) are values in PromQL, not warnings.
        with np.errstate(all="ignore"):
            if isinstance(node, RangeSel):
                value: Value = self._range_selector(node, steps)
            elif isinstance(node, Subquery):
                value = self._subquery(node, steps)
            else:
                value = self.eval(node, steps)
        if isinstance(query, str):
            if len(self._cache) > 4096:
                self._cache.clear()
            self._cache[key] = (self.store.revision, value)
        return value

    def time_ms(self, t_s: float) -> int:
        """Simulated seconds -> the Unix milliseconds Prometheus stores (origin + t)."""
        return self.store.origin_ms + round(t_s * 1000)

    def instant_at(self, query: str | Node, t_s: float) -> Value:
        """`instant` at simulated time `t_s` (seconds since the store's origin)."""
        return self.instant(query, self.time_ms(t_s))

    def range_query(self, query: str | Node, start_ms: int, end_ms: int, step_ms: int
                    ) -> Vector | Scalar:
        """`/api/v1/query_range`: the query at start, start + step, ... <= end."""
        node = parse(query) if isinstance(query, str) else query
        if value_type(node) not in ("vector", "scalar"):
            raise PromQLError("range query: the expression must be an instant vector or scalar")
        times = np.arange(start_ms, end_ms + 1, step_ms, dtype=np.int64)
        with np.errstate(all="ignore"):
            value = self.eval(node, _Steps(times, int(start_ms), int(end_ms)))
        assert isinstance(value, (Vector, Scalar))
        return value

    # -- dispatch ---------------------------------------------------------------------------
    def eval(self, node: Node, steps: _Steps) -> Value:
        if isinstance(node, Num):
            return Scalar(np.full(len(steps.times), node.value))
        if isinstance(node, Str):
            return StringValue(node.value)
        if isinstance(node, Selector):
            return self._instant_selector(node, steps)[0]
        if isinstance(node, (RangeSel, Subquery)):
            raise PromQLError("a range vector is only allowed as a function argument")
        if isinstance(node, Neg):
            return self._negate(self.eval(node.expr, steps))
        if isinstance(node, Agg):
            return self._aggregate(node, steps)
        if isinstance(node, Binary):
            return self._binary(node, steps)
        if isinstance(node, Call):
            return self._call(node, steps)
        raise PromQLError(f"cannot evaluate {node}")

    def _vector(self, node: Node, steps: _Steps) -> Vector:
        value = self.eval(node, steps)
        if not isinstance(value, Vector):
            raise PromQLError("expected an instant vector")
        return value

    def _scalar(self, node: Node, steps: _Steps) -> np.ndarray:
        value = self.eval(node, steps)
        if not isinstance(value, Scalar):
            raise PromQLError("expected a scalar")
        return value.values

    @staticmethod
    def _negate(value: Value) -> Value:
        if isinstance(value, Scalar):
            return Scalar(-value.values)
        assert isinstance(value, Vector)
        return merge_rows([lbl.drop_name(ls) for ls in value.labels], -value.values,
                          value.present, per_step=False)

    # -- selectors ----------------------------------------------------------------------------
    def _gather(self, selector: Selector, lo_ms: int, hi_ms: int, *, keep_stale: bool
                ) -> Matrix:
        """The selected series' samples with lo <= t <= hi, series in label order."""
        selected = self.store.select(selector.matchers, hi_ms)
        if not selected:
            return Matrix([], np.zeros(0, np.int64), np.zeros(0), np.zeros(1, np.int64))
        labels, lookups = self._lookups(selected)
        rows_t, rows_v, rows_id = [], [], []
        for family, lookup in lookups:
            t, sid, v = family.window(lo_ms, hi_ms)
            row_of = lookup[sid]
            keep = row_of >= 0
            if not keep_stale:
                keep &= ~is_stale(v)
            rows_t.append(t[keep])
            rows_v.append(v[keep])
            rows_id.append(row_of[keep])
        t, v, row_id = (rows_t[0], rows_v[0], rows_id[0]) if len(lookups) == 1 else (
            np.concatenate(rows_t), np.concatenate(rows_v), np.concatenate(rows_id))
        order = np.argsort(row_id, kind="stable")
        counts = np.bincount(row_id, minlength=len(labels))
        alive = np.flatnonzero(counts)
        starts = np.zeros(len(alive) + 1, dtype=np.int64)
        np.cumsum(counts[alive], out=starts[1:])
        return Matrix([labels[i] for i in alive.tolist()], t[order], v[order], starts)

    def _lookups(self, selected: list) -> tuple[list, list]:
        """The selection's labels and, per family, series id -> row (-1: not selected);
        kept while the store returns the same selection (it caches it until a family grows)."""
        cached = self._lookup_cache.get(id(selected))
        if cached is not None and cached[0] is selected:
            return cached[1], cached[2]
        labels = []
        by_family: dict[str, list[tuple[int, int]]] = {}
        for row, (family, series_id) in enumerate(selected):
            by_family.setdefault(family.name, []).append((series_id, row))
            labels.append(family.labels[series_id])
        lookups = []
        for name, pairs in by_family.items():
            family = self.store.families[name]
            lookup = np.full(len(family.labels), -1, dtype=np.int64)
            sids, rows = zip(*pairs, strict=True)
            lookup[list(sids)] = rows
            lookups.append((family, lookup))
        if len(self._lookup_cache) > 1024:
            self._lookup_cache.clear()
        self._lookup_cache[id(selected)] = (selected, labels, lookups)
        return labels, lookups

    def _instant_selector(self, sel: Selector, steps: _Steps
                          ) -> tuple[Vector, np.ndarray]:
        """(vector, each row's sample time per step) of an instant selector."""
        times = self._effective(sel, steps) - sel.offset_ms
        m = self._gather(sel, int(times.min()) - self.lookback_ms, int(times.max()),
                         keep_stale=True)
        n = len(m.labels)
        if n == 0:
            empty = np.zeros((0, len(times)))
            return Vector([], empty, empty.astype(bool)), empty.astype(np.int64)
        if len(times) == 1:  # the gathered samples are the one window: each row's last
            hi = m.starts[1:, None]
            lo = m.starts[:-1, None]
        else:
            lo, hi = rf.windows(m, times, self.lookback_ms)
        has = hi > lo
        last: np.ndarray = np.where(has, hi - 1, 0)
        present = has & ~is_stale(m.values[last].ravel()).reshape(last.shape)
        return Vector(m.labels, np.where(present, m.values[last], 0.0), present), m.t_ms[last]

    @staticmethod
    def _effective(sel: Selector, steps: _Steps) -> np.ndarray:
        if sel.at is None:
            return steps.times
        fixed = {"at": sel.at.t_ms, "start": steps.start_ms, "end": steps.end_ms}[sel.at.kind]
        return np.full(len(steps.times), fixed, dtype=np.int64)

    def _range_selector(self, node: RangeSel, steps: _Steps) -> Matrix:
        """An instant query of `x[5m]`: the raw samples (a matrix result)."""
        end = int(steps.times[0]) - node.selector.offset_ms
        return self._gather(node.selector, end - node.range_ms, end, keep_stale=False)

    def _subquery(self, node: Subquery, steps: _Steps) -> Matrix:
        """The inner expression at its own steps, as a matrix (engine.go SubqueryExpr)."""
        step = node.step_ms or self.subquery_step_ms
        first = int(steps.times[0]) - node.offset_ms - node.range_ms
        start = step * int(first / step)  # Go's integer division truncates toward zero
        if start < first:
            start += step
        end = int(steps.times[-1]) - node.offset_ms
        inner = np.arange(start, end + 1, step, dtype=np.int64)
        value = self.eval(node.expr, _Steps(inner, steps.start_ms, steps.end_ms))
        if not isinstance(value, Vector):
            raise PromQLError("subquery is only allowed on an instant vector")
        counts = value.present.sum(axis=1)
        alive = np.flatnonzero(counts)
        t = np.zeros(0, np.int64)
        v = np.zeros(0)
        if len(alive):  # row by row, each in step order
            t = np.concatenate([inner[value.present[i]] for i in alive])
            v = np.concatenate([value.values[i][value.present[i]] for i in alive])
        starts = np.concatenate(([0], np.cumsum(counts[alive])))
        return Matrix([value.labels[i] for i in alive], t, v, starts)

    # -- operators ----------------------------------------------------------------------------
    def _aggregate(self, node: Agg, steps: _Steps) -> Vector:
        param: np.ndarray | str | None = None
        if node.param is not None:
            value = self.eval(node.param, steps)
            if isinstance(value, StringValue):
                param = value.value
            elif isinstance(value, Scalar):
                param = value.values
            else:
                raise PromQLError(f"{node.op}(): the parameter must be a scalar or string")
        return aggregation.aggregate(node.op, self._vector(node.expr, steps), node.grouping,
                                     node.without, param)

    def _binary(self, node: Binary, steps: _Steps) -> Value:
        left_type, right_type = value_type(node.lhs), value_type(node.rhs)
        lhs, rhs = self.eval(node.lhs, steps), self.eval(node.rhs, steps)
        if left_type == "scalar" and right_type == "scalar":
            assert isinstance(lhs, Scalar) and isinstance(rhs, Scalar)
            return Scalar(matching.scalar_scalar(node.op, lhs.values, rhs.values))
        if isinstance(lhs, Vector) and isinstance(rhs, Scalar):
            return matching.vector_scalar(node.op, lhs, rhs.values, swap=False,
                                          return_bool=node.return_bool)
        if isinstance(lhs, Scalar) and isinstance(rhs, Vector):
            return matching.vector_scalar(node.op, rhs, lhs.values, swap=True,
                                          return_bool=node.return_bool)
        if not (isinstance(lhs, Vector) and isinstance(rhs, Vector)):
            raise PromQLError(f"operator {node.op} needs scalars or instant vectors")
        if node.op in matching.SET_OPERATORS:
            return matching.set_operation(node, lhs, rhs)
        return matching.vector_vector(node, lhs, rhs)

    # -- functions ----------------------------------------------------------------------------
    def _call(self, node: Call, steps: _Steps) -> Value:
        name = node.func
        if name in RANGE_FUNCTIONS:
            return self._range_call(node, steps)
        if name == "time":
            return Scalar(steps.times.astype(np.float64) / 1000)
        if name == "pi":
            return Scalar(np.full(len(steps.times), math.pi))
        if name == "timestamp":
            return self._timestamp(node.args[0], steps)
        args = [self.eval(arg, steps) for arg in node.args]
        return _instant_function(name, node, args, steps)

    def _timestamp(self, arg: Node, steps: _Steps) -> Vector:
        if isinstance(arg, Selector):
            vec, sample_ms = self._instant_selector(arg, steps)
            return functions.with_values(vec, sample_ms.astype(np.float64) / 1000)
        vec = self._vector(arg, steps)
        return functions.with_values(
            vec, np.broadcast_to(steps.times[None, :] / 1000, vec.values.shape).copy())

    def _range_call(self, node: Call, steps: _Steps) -> Vector:
        index = next(i for i, a in enumerate(node.args) if isinstance(a, (RangeSel, Subquery)))
        arg = node.args[index]
        assert isinstance(arg, (RangeSel, Subquery))
        if isinstance(arg, RangeSel):
            offset, range_ms = arg.selector.offset_ms, arg.range_ms
            ends = steps.times - offset
            m = self._gather(arg.selector, int(ends.min()) - range_ms, int(ends.max()),
                             keep_stale=False)
        else:
            offset, range_ms = arg.offset_ms, arg.range_ms
            ends = steps.times - offset
            m = self._subquery(arg, steps)
        others = [self._scalar(a, steps) for i, a in enumerate(node.args) if i != index]
        if len(ends) == 1 and isinstance(arg, RangeSel):  # one window: what was gathered
            lo, hi = m.starts[:-1, None], m.starts[1:, None]
        else:
            lo, hi = rf.windows(m, ends, range_ms)
        name = node.func
        if name in ("rate", "increase", "delta"):
            values, ok = rf.extrapolated_rate(m, lo, hi, ends, range_ms,
                                              counter=name != "delta",
                                              per_second=name == "rate")
        elif name in ("irate", "idelta"):
            values, ok = rf.instant_value(m, lo, hi, per_second=name == "irate")
        else:
            param = others[0] if others else None
            values, ok = rf.over_time(name, m, lo, hi, steps.times, param)
        if name == "absent_over_time":
            return functions.absent(Vector(m.labels, values, ok), _absent_labels(arg))
        keep_name = name == "last_over_time"
        out = [ls if keep_name else lbl.drop_name(ls) for ls in m.labels]
        return merge_rows(out, values, ok, per_step=False)


def _absent_labels(arg: Node) -> lbl.Labels:
    """createLabelsForAbsentFunction: the selector's `=` matchers, a label given twice dropped."""
    selector = arg.selector if isinstance(arg, RangeSel) else arg
    if not isinstance(selector, Selector):
        return ()
    pairs: dict[str, str] = {}
    twice: set[str] = set()
    for m in selector.matchers:
        if m.op == "=" and m.name != lbl.NAME:
            if m.name in pairs:
                twice.add(m.name)
            pairs[m.name] = m.value
    return lbl.make({k: v for k, v in pairs.items() if k not in twice})


def _instant_function(name: str, node: Call, args: list[Value], steps: _Steps) -> Value:
    def vec(i: int) -> Vector:
        value = args[i]
        if not isinstance(value, Vector):
            raise PromQLError(f"{name}(): argument {i + 1} must be an instant vector")
        return value

    def num(i: int) -> np.ndarray:
        value = args[i]
        if not isinstance(value, Scalar):
            raise PromQLError(f"{name}(): argument {i + 1} must be a scalar")
        return value.values

    def text(i: int) -> str:
        value = args[i]
        if not isinstance(value, StringValue):
            raise PromQLError(f"{name}(): argument {i + 1} must be a string")
        return value.value

    if name in functions.MATH:
        return functions.math_function(name, vec(0))
    if name == "round":
        return functions.round_to(vec(0), num(1) if len(args) > 1 else np.ones(len(steps.times)))
    if name in ("clamp", "clamp_min", "clamp_max"):
        low = num(1) if name in ("clamp", "clamp_min") else None
        high = num(2) if name == "clamp" else (num(1) if name == "clamp_max" else None)
        return functions.clamp(vec(0), low, high)
    if name == "scalar":
        return functions.scalar_of(vec(0))
    if name == "vector":
        return functions.vector_of(Scalar(num(0)))
    if name == "absent":
        return functions.absent(vec(0), _absent_labels(node.args[0]))
    if name == "histogram_quantile":
        return functions.histogram_quantile(num(0), vec(1))
    if name == "label_replace":
        return functions.label_replace(vec(0), text(1), text(2), text(3), text(4))
    if name == "label_join":
        return functions.label_join(vec(0), text(1), text(2), [text(i)
                                                               for i in range(3, len(args))])
    if name in ("sort", "sort_desc"):
        return functions.sort_rows(vec(0), name == "sort_desc")
    if name in ("minute", "hour", "day_of_week", "day_of_month", "day_of_year",
                "days_in_month", "month", "year"):
        return functions.date_function(name, vec(0) if args else None, steps.times)
    raise PromQLError(f"function {name}() is not evaluated by gpuscale")
