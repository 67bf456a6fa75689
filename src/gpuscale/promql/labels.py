"""Label sets as Prometheus keeps them: sorted by name, compared name by name then value.

A `Labels` is a tuple of (name, value) pairs sorted by name, `__name__` included; an absent
label and an empty value are the same thing (model/labels/labels.go). Tuples compare as
`labels.Compare` does (names first, then values, a prefix first), so sorting a list of them
gives the order a Prometheus querier returns series in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

Labels = tuple[tuple[str, str], ...]
NAME = "__name__"
BUCKET = "le"


def make(pairs: Mapping[str, str] | Iterable[tuple[str, str]]) -> Labels:
    """Sorted pairs, empty values dropped (Prometheus stores no empty label)."""
    items = pairs.items() if isinstance(pairs, Mapping) else pairs
    return tuple(sorted((str(k), str(v)) for k, v in items if v != ""))


def get(labels: Labels, name: str) -> str:
    for key, value in labels:
        if key == name:
            return value
    return ""


def without(labels: Labels, names: Iterable[str]) -> Labels:
    drop = set(names)
    return tuple(pair for pair in labels if pair[0] not in drop)


def keep(labels: Labels, names: Iterable[str]) -> Labels:
    wanted = set(names)
    return tuple(pair for pair in labels if pair[0] in wanted)


def drop_name(labels: Labels) -> Labels:
    return tuple(pair for pair in labels if pair[0] != NAME)


def with_label(labels: Labels, name: str, value: str) -> Labels:
    """`labels` with `name` set to `value` (removed when empty)."""
    rest = [pair for pair in labels if pair[0] != name]
    if value != "":
        rest.append((name, value))
    return tuple(sorted(rest))


def signature(labels: Labels, names: tuple[str, ...], on: bool) -> Labels:
    """The matching key of binary operators: the `on` labels, or all but the `ignoring` ones
    and the metric name (engine.go signatureFunc)."""
    if on:
        return keep(labels, names)
    return without(labels, (NAME, *names))


def text(labels: Labels) -> str:
    """`{a="b", c="d"}` with the name in front, as Prometheus prints a series."""
    name = get(labels, NAME)
    body = ", ".join(f'{k}="{v}"' for k, v in labels if k != NAME)
    return f"{name}{{{body}}}"


_NAME_RE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def valid_name(name: str) -> bool:
    """A valid label name (model.LabelNameRE)."""
    return _NAME_RE.fullmatch(name) is not None
