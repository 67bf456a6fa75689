"""The simulated Prometheus's configuration in a scenario: the labels the series carry and
the recording rules it evaluates (a PrometheusRule's groups, read by the importer).

Defaults are Prometheus's: a rule group without `interval` is evaluated every
`evaluation_interval` (global default 1m, config/config.go DefaultGlobalConfig), which is also
a subquery's step when it gives none (cmd/prometheus/main.go).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gpuscale.promql.errors import PromQLError
from gpuscale.promql.labels import valid_name
from gpuscale.promql.parse import metric_names, parse


def unknown_metric(query: str, known: Iterable[str]) -> str | None:
    """Why `query` reads nothing the simulation exposes (a metric no exporter or rule
    writes, with the closest known name), or None."""
    names = metric_names(parse(query))
    if names is None:  # a regex on __name__: whatever matches
        return None
    known = set(known)
    for name in sorted(names - known):
        close = difflib.get_close_matches(name, sorted(known), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return (f"query {' '.join(query.split())!r} reads {name!r}, which the simulated "
                f"cluster does not expose{hint} (docs/promql.md lists the series)")
    return None


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def checked_promql(expr: str) -> str:
    """`expr` if the evaluator can evaluate it; else a ValueError with the reason."""
    if not isinstance(expr, str) or not expr.strip():
        raise ValueError(f"expected a PromQL expression, got {expr!r}")
    try:
        parse(expr)
    except PromQLError as exc:
        raise ValueError(f"{' '.join(expr.split())!r}: {exc}") from None
    return expr


class RecordingRule(_Strict):
    """One `record:` rule: `expr` evaluated at each group tick and stored as series `record`."""

    record: str = Field(description="Name of the recorded series (e.g. llm:queue_depth).")
    expr: str = Field(description="PromQL evaluated at every tick of its group.")
    labels: dict[str, str] = Field(default_factory=dict, description=(
        "Labels added to (or replacing those of) every recorded series."))

    @field_validator("record")
    @classmethod
    def _metric_name(cls, name: str) -> str:
        head, rest = name[:1], name[1:]
        if not (head.isalpha() or head in "_:") or not all(c.isalnum() or c in "_:"
                                                           for c in rest):
            raise ValueError(f"{name!r} is not a valid metric name")
        return name

    @field_validator("expr")
    @classmethod
    def _evaluable(cls, expr: str) -> str:
        return checked_promql(expr)

    @field_validator("labels")
    @classmethod
    def _label_names(cls, labels: dict[str, str]) -> dict[str, str]:
        bad = [k for k in labels if not valid_name(k)]
        if bad:
            raise ValueError(f"invalid label names {bad}")
        return labels


class RuleGroup(_Strict):
    """One group of a PrometheusRule: its rules are evaluated in order at each tick."""

    name: str = Field(description="The group's name.")
    interval_s: float | None = Field(None, gt=0, description=(
        "Seconds between evaluations; None = the Prometheus `evaluation_interval`."))
    rules: tuple[RecordingRule, ...] = Field(min_length=1, description="Recording rules.")
