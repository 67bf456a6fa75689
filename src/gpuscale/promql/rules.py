"""Recording rules: each group's rules evaluated in order at every tick of its interval, the
results stored as series (rules/manager.go Group.Eval, rules/recording.go).

Ticks fall on multiples of the interval since the Unix epoch. (Prometheus offsets each
group by a hash of its name and file so groups spread out; the file path of a
PrometheusRule in the user's Prometheus is not known here, so the offset is 0: documented
in docs/promql.md.) A group is evaluated lazily: the first query that reads one of its series
up to time t evaluates every tick up to t it has not yet evaluated, which gives the same
samples as evaluating it on schedule, since the series it reads are complete by then.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpuscale.promql import labels as lbl
from gpuscale.promql.engine import Engine
from gpuscale.promql.errors import PromQLError
from gpuscale.promql.parse import Node, parse
from gpuscale.promql.store import SeriesStore
from gpuscale.promql.values import Scalar, Vector


@dataclass(frozen=True)
class Rule:
    record: str
    expr: str
    labels: tuple[tuple[str, str], ...] = ()


@dataclass
class Group:
    """One rule group over `engine`'s store; `advance(t_ms)` evaluates its ticks up to t."""

    name: str
    interval_ms: int
    rules: tuple[Rule, ...]
    engine: Engine
    end_ms: int | None = None  # no tick after this (the end of the run)
    next_tick_ms: int | None = None
    failures: list[tuple[int, str, str]] = field(default_factory=list)  # (t, record, error)
    _busy: bool = False
    _parsed: tuple[Node, ...] = ()

    def __post_init__(self) -> None:
        self._parsed = tuple(parse(rule.expr) for rule in self.rules)
        origin = self.engine.store.origin_ms
        first = -(-origin // self.interval_ms) * self.interval_ms  # the first tick >= origin
        self.next_tick_ms = first
        store = self.engine.store
        for rule in self.rules:
            store.lazy(rule.record, self.advance, type="unknown",
                       help=f"recorded by rule group {self.name}")

    def advance(self, t_ms: int) -> None:
        if self._busy or self.next_tick_ms is None:
            return  # a rule of this group reading its own group's series: what exists so far
        self._busy = True
        try:
            limit = t_ms if self.end_ms is None else min(t_ms, self.end_ms)
            while self.next_tick_ms <= limit:
                self._evaluate(self.next_tick_ms)
                self.next_tick_ms += self.interval_ms
        finally:
            self._busy = False

    def _evaluate(self, t_ms: int) -> None:
        store = self.engine.store
        for rule, node in zip(self.rules, self._parsed, strict=True):
            try:
                value = self.engine.instant(node, t_ms)
            except PromQLError as exc:
                self.failures.append((t_ms, rule.record, str(exc)))
                continue
            rows: list[tuple[lbl.Labels, float]]
            if isinstance(value, Scalar):
                rows = [((), float(value.values[0]))]
            elif isinstance(value, Vector):
                rows = value.rows()
            else:
                self.failures.append((t_ms, rule.record, "result is not a vector or scalar"))
                continue
            out: dict[lbl.Labels, float] = {}
            for labels, v in rows:
                pairs: dict[str, str] = dict(labels)
                pairs.update(rule.labels)
                pairs[lbl.NAME] = rule.record
                key = lbl.make(pairs)
                if key in out:
                    self.failures.append((t_ms, rule.record, "vector contains metrics with "
                                          "the same labelset after applying rule labels"))
                    out = {}
                    break
                out[key] = v
            if out:
                family = store.families[rule.record]
                sids = np.array([family.series_id(k) for k in out], dtype=np.int32)
                family.append(t_ms, sids, np.array(list(out.values())))


def install(store: SeriesStore, engine: Engine, groups: list[tuple[str, int, tuple[Rule, ...]]],
            end_ms: int | None = None) -> list[Group]:
    """Rule groups (name, interval ms, rules) whose series `store` fills on first read."""
    owners: dict[str, str] = {}
    for name, _, rules in groups:
        for rule in rules:
            if owners.setdefault(rule.record, name) != name or rule.record in store.families:
                raise PromQLError(f"recorded series {rule.record} is written by two rule "
                                  "groups, or is also a scraped series")
    return [Group(name, interval, rules, engine, end_ms) for name, interval, rules in groups]
