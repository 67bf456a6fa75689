"""Binary operators: arithmetic and comparisons between scalars and vectors, vector matching
(`on`, `ignoring`, `group_left`, `group_right`) and the set operators `and`, `or`, `unless`.

Matching signatures depend only on labels, so the candidate (left row, right row) pairs are
found once; each step then keeps the pairs whose two rows are present, and refuses what
Prometheus refuses at that step (engine.go VectorBinop: a duplicate on the "one" side, a
one-to-one match that is not, an output label set seen twice).
"""

from __future__ import annotations

import numpy as np

from gpuscale.promql import labels as lbl
from gpuscale.promql.errors import PromQLError
from gpuscale.promql.labels import Labels
from gpuscale.promql.parse import Binary
from gpuscale.promql.values import Vector, merge_rows

ARITHMETIC = frozenset({"+", "-", "*", "/", "%", "^", "atan2"})
COMPARISON = frozenset({"==", "!=", ">", "<", ">=", "<="})
SET_OPERATORS = frozenset({"and", "or", "unless"})


def apply(op: str, lhs: np.ndarray, rhs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(value, keep) elementwise, as engine.go vectorElemBinop (Go's IEEE arithmetic)."""
    if op == "+":
        return lhs + rhs, np.ones(np.broadcast(lhs, rhs).shape, dtype=bool)
    if op == "-":
        value = lhs - rhs
    elif op == "*":
        value = lhs * rhs
    elif op == "/":
        value = lhs / rhs
    elif op == "%":
        value = np.fmod(lhs, rhs)
    elif op == "^":
        value = np.power(lhs, rhs)
    elif op == "atan2":
        value = np.arctan2(lhs, rhs)
    else:
        keep = {"==": np.equal, "!=": np.not_equal, ">": np.greater, "<": np.less,
                ">=": np.greater_equal, "<=": np.less_equal}[op](lhs, rhs)
        return np.broadcast_to(lhs, keep.shape).copy(), keep
    return value, np.ones(value.shape, dtype=bool)


def scalar_scalar(op: str, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    value, keep = apply(op, lhs, rhs)
    return keep.astype(np.float64) if op in COMPARISON else value


def vector_scalar(op: str, vec: Vector, scalar: np.ndarray, *, swap: bool,
                  return_bool: bool) -> Vector:
    """engine.go VectorscalarBinop: the vector's element stays the value of a comparison."""
    row = scalar[None, :]
    value, keep = apply(op, row, vec.values) if swap else apply(op, vec.values, row)
    if op in COMPARISON:
        value = vec.values.copy()
    if return_bool:
        value = keep.astype(np.float64)
        keep = np.ones(keep.shape, dtype=bool)
    drop = op in ARITHMETIC or return_bool
    names = [lbl.drop_name(ls) for ls in vec.labels] if drop else list(vec.labels)
    return merge_rows(names, value, vec.present & keep)


def _signatures(labels: list[Labels], node: Binary) -> list[Labels]:
    return [lbl.signature(ls, node.matching, node.on) for ls in labels]


def set_operation(node: Binary, lhs: Vector, rhs: Vector) -> Vector:
    steps = lhs.steps
    left_sig, right_sig = _signatures(lhs.labels, node), _signatures(rhs.labels, node)
    ids: dict[Labels, int] = {}
    left_id = np.array([ids.setdefault(s, len(ids)) for s in left_sig], dtype=np.int64)
    right_id = np.array([ids.setdefault(s, len(ids)) for s in right_sig], dtype=np.int64)

    def seen(rows: np.ndarray, present: np.ndarray) -> np.ndarray:
        counts = np.zeros((len(ids), steps))
        if len(rows):
            np.add.at(counts, rows, present.astype(np.float64))
        return counts > 0

    if node.op in ("and", "unless"):
        # A left row is matched when a right row of its signature is present at that step.
        hit = seen(right_id, rhs.present)[left_id]
        return merge_rows(lhs.labels, lhs.values,
                          lhs.present & (hit if node.op == "and" else ~hit))
    covered = seen(left_id, lhs.present)[right_id]
    right_keep = rhs.present & ~covered
    return merge_rows(lhs.labels + rhs.labels, np.vstack([lhs.values, rhs.values]),
                      np.vstack([lhs.present, right_keep]))


def vector_vector(node: Binary, lhs: Vector, rhs: Vector) -> Vector:
    """One-to-one and many-to-one/one-to-many matching (engine.go VectorBinop)."""
    steps = lhs.steps
    both: np.ndarray = np.asarray(lhs.present.any(axis=0) & rhs.present.any(axis=0))
    swap = node.card == "one-to-many"
    many, one = (rhs, lhs) if swap else (lhs, rhs)
    many_sig, one_sig = _signatures(many.labels, node), _signatures(one.labels, node)
    by_sig: dict[Labels, list[int]] = {}
    for j, sig in enumerate(one_sig):
        by_sig.setdefault(sig, []).append(j)
    for rows in by_sig.values():
        if len(rows) > 1 and np.any((one.present[rows].sum(axis=0) > 1) & both):
            side = "left" if swap else "right"
            raise PromQLError(f"found duplicate series for the match group on the {side} hand-side "
                              "of the operation; many-to-many matching not allowed: matching "
                              "labels must be unique on one side")
    pairs = [(i, j) for i, sig in enumerate(many_sig) for j in by_sig.get(sig, ())]
    if not pairs:
        return merge_rows([], np.zeros((0, steps)), np.zeros((0, steps), dtype=bool))
    i_rows = np.array([p[0] for p in pairs])
    j_rows = np.array([p[1] for p in pairs])
    present = many.present[i_rows] & one.present[j_rows] & both[None, :]
    left_v, right_v = many.values[i_rows], one.values[j_rows]
    if swap:
        left_v, right_v = right_v, left_v
    value, keep = apply(node.op, left_v, right_v)
    if node.return_bool:
        value, keep = keep.astype(np.float64), np.ones(keep.shape, dtype=bool)
    present &= keep
    out_labels = [_result_labels(many.labels[i], one.labels[j], node) for i, j in pairs]
    _check_unique(node, [many_sig[i] for i, _ in pairs], out_labels, present)
    return merge_rows(out_labels, value, present)


def _result_labels(many: Labels, one: Labels, node: Binary) -> Labels:
    """engine.go resultMetric."""
    out = many
    if node.op in ARITHMETIC or node.return_bool:
        out = lbl.drop_name(out)
    if node.card == "one-to-one":
        out = lbl.keep(out, node.matching) if node.on else lbl.without(out, node.matching)
    for name in node.include:
        out = lbl.with_label(out, name, lbl.get(one, name))
    return out


def _check_unique(node: Binary, sigs: list[Labels], out_labels: list[Labels],
                  present: np.ndarray) -> None:
    """At each step: one-to-one matches at most one left row per signature; many-to-one keeps
    output label sets unique per signature."""
    groups: dict[tuple, list[int]] = {}
    for p, sig in enumerate(sigs):
        key = (sig,) if node.card == "one-to-one" else (sig, out_labels[p])
        groups.setdefault(key, []).append(p)
    for rows in groups.values():
        if len(rows) > 1 and (present[rows].sum(axis=0) > 1).any():
            if node.card == "one-to-one":
                raise PromQLError("multiple matches for labels: many-to-one matching must be "
                                  "explicit (group_left/group_right)")
            raise PromQLError("multiple matches for labels: grouping labels must ensure unique "
                              "matches")
