"""What an expression evaluates to, over S evaluation steps at once.

A `Vector` is Prometheus' range-evaluation matrix in columns: one row per output series,
`values[i, k]` its value at step k where `present[i, k]`. An instant query is the S = 1 case.
A `Matrix` is a range selector's or subquery's samples, flattened series by series, what the
range functions window over. `merge_rows` is rangeEval's "one series per label set" rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuscale.promql.errors import PromQLError
from gpuscale.promql.labels import Labels


@dataclass
class Scalar:
    values: np.ndarray  # (S,)


@dataclass
class StringValue:
    value: str


@dataclass
class Vector:
    labels: list[Labels]
    values: np.ndarray  # (n, S) float64
    present: np.ndarray  # (n, S) bool

    @property
    def steps(self) -> int:
        return self.values.shape[1]

    def rows(self, step: int = 0) -> list[tuple[Labels, float]]:
        """The (labels, value) pairs present at `step`, in row order."""
        keep = np.flatnonzero(self.present[:, step])
        return [(self.labels[i], float(self.values[i, step])) for i in keep]


@dataclass
class Matrix:
    """Samples of each series (stale markers removed), concatenated in series order."""

    labels: list[Labels]
    t_ms: np.ndarray  # int64
    values: np.ndarray  # float64
    starts: np.ndarray  # int64, len(labels) + 1: series i is [starts[i], starts[i+1])


def empty_vector(steps: int) -> Vector:
    return Vector([], np.zeros((0, steps)), np.zeros((0, steps), dtype=bool))


def merge_rows(labels: list[Labels], values: np.ndarray, present: np.ndarray,
               *, per_step: bool = True) -> Vector:
    """Rows with equal label sets become one: a step where two are present is Prometheus'
    "vector cannot contain metrics with the same labelset" (per step in rangeEval; with
    `per_step` False, any two rows that are ever present, as the range-function path checks).
    Rows never present are dropped."""
    alive: np.ndarray = np.asarray(present.any(axis=1))
    order: dict[Labels, int] = {}
    groups: list[list[int]] = []
    for i, ls in enumerate(labels):
        if not alive[i]:
            continue
        slot = order.get(ls)
        if slot is None:
            order[ls] = len(groups)
            groups.append([i])
        else:
            groups[slot].append(i)
    if all(len(g) == 1 for g in groups):
        keep = [g[0] for g in groups]
        if len(keep) == len(labels):
            return Vector(labels, values, present)
        return Vector([labels[i] for i in keep], values[keep], present[keep])
    out_values = np.zeros((len(groups), values.shape[1]))
    out_present = np.zeros((len(groups), values.shape[1]), dtype=bool)
    for slot, rows in enumerate(groups):
        if len(rows) > 1 and (not per_step or present[rows].sum(axis=0).max() > 1):
            raise PromQLError("vector cannot contain metrics with the same labelset")
        for i in rows:
            out_values[slot] = np.where(present[i], values[i], out_values[slot])
            out_present[slot] |= present[i]
    return Vector(list(order), out_values, out_present)
