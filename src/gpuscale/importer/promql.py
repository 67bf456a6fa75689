"""A scaler's PromQL query -> the simulator's `MetricQuery` (metric + aggregation), or a refusal.

Queries are parsed by `promql-parser` (the Python binding of GreptimeTeam's Rust PromQL parser,
which follows Prometheus's grammar: strings, `#` comments, `offset`, `@`, `__name__=`), and the
syntax tree is matched against the shapes the simulator can evaluate. Anything else is refused
with the query and the supported shapes, never approximated silently.

Supported:
  - `sum|avg|max(SERIES{...})`, optionally `by (labels)` when every grouping label is pinned by
    an `=` matcher (so the query still returns one series), SERIES a per-pod series the
    simulated pods export (metrics/store.py POD_SERIES);
  - `histogram_quantile(0.99, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[W])))`,
    read as the fleet's sliding-window P99 TTFT signal (`ttft_p99_s`, 60 s window, whatever W).
Label matchers are taken to select this deployment's pods (the simulation has no others).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, cast

from gpuscale.autoscaling.hpa import MetricQuery
from gpuscale.errors import UserInputError
from gpuscale.metrics.store import POD_SERIES, TTFT_P99_WINDOW

AGGREGATIONS = ("sum", "avg", "max")
TTFT_BUCKET = "vllm:time_to_first_token_seconds_bucket"
SUPPORTED = (f"sum|avg|max(SERIES{{...}}) with SERIES one of {', '.join(POD_SERIES)} "
             "(`by` only over labels the selector pins with =), or "
             f"histogram_quantile(0.99, sum by (le) (rate({TTFT_BUCKET}[W])))")
# vLLM renamed these; the simulated pods export the new name (audit rule GPU004).
RENAMED = {"vllm:gpu_cache_usage_perc": "vllm:kv_cache_usage_perc"}


@dataclass(frozen=True)
class Translated:
    query: MetricQuery
    note: str = ""  # how it was read, when that is an assumption


class Refused(Exception):
    """Why a query cannot be simulated (turned into a UserInputError by `translate_query`)."""


def _parser():
    try:
        import promql_parser
    except ImportError:  # a declared dependency; only a broken install lacks it
        raise UserInputError("reading PromQL needs the `promql-parser` package: "
                             "pip install promql-parser") from None
    return promql_parser


def _unwrap(expr, p):
    while isinstance(expr, p.ParenExpr):
        expr = expr.expr
    return expr


def _selector_metric(vs, p) -> tuple[str, dict[str, str]]:
    """(metric name, labels pinned with =) of a vector selector; offset and @ refused."""
    if vs.offset is not None:
        raise Refused(f"`offset {vs.offset}` reads the past; the simulator's scalers read the "
                      "latest scrape")
    if vs.at is not None:
        raise Refused("`@` pins an evaluation time; the simulator's scalers read the latest scrape")
    name = vs.name
    pinned: dict[str, str] = {}
    for matcher in vs.matchers.matchers:
        if matcher.name == "__name__":
            if matcher.op != p.MatchOp.Equal:
                raise Refused("a regex or negative `__name__` matcher selects several metrics")
            name = matcher.value
        elif matcher.op == p.MatchOp.Equal:
            pinned[matcher.name] = matcher.value
    if vs.matchers.or_matchers:
        raise Refused("`or` inside a selector selects several series sets")
    if not name:
        raise Refused("the selector names no metric")
    return name, pinned


def _series(expr, p) -> tuple[str, dict[str, str]]:
    expr = _unwrap(expr, p)
    if isinstance(expr, p.VectorSelector):
        return _selector_metric(expr, p)
    if isinstance(expr, p.Call):
        raise Refused(f"`{expr.func.name}(...)` inside the aggregation; the simulator aggregates "
                      "the per-pod series as scraped")
    if isinstance(expr, (p.MatrixSelector, p.SubqueryExpr)):
        raise Refused("a range vector cannot be aggregated by sum/avg/max")
    raise Refused("the aggregation's argument is not a plain series selector")


def _aggregate(expr, p) -> Translated:
    op = str(expr.op).lower()
    if op not in AGGREGATIONS:
        raise Refused(f"aggregation `{op}` is not simulated")
    metric, pinned = _series(expr.expr, p)
    modifier = expr.modifier
    if modifier is not None:
        if modifier.type == p.AggModifierType.Without:
            raise Refused("`without (...)` keeps the other labels: one series per pod")
        loose = [label for label in modifier.labels if label not in pinned]
        if loose:
            raise Refused(f"`by ({', '.join(modifier.labels)})` returns one series per "
                          f"{', '.join(loose)}; a scaler needs one value")
    notes = []
    if metric in RENAMED:
        notes.append(f"{metric} (removed from vLLM) read as its successor {RENAMED[metric]}")
        metric = RENAMED[metric]
    if metric not in POD_SERIES:
        raise Refused(f"metric {metric!r} is not a series the simulated pods export")
    if pinned:
        shown = ", ".join(f'{k}="{v}"' for k, v in pinned.items())  # as PromQL writes them
        notes.append(f"label matchers {{{shown}}} taken to select this deployment's pods")
    note = "; ".join(notes)
    aggregation = cast(Literal["sum", "avg", "max"], op)  # one of AGGREGATIONS, checked above
    return Translated(MetricQuery(metric=metric, aggregation=aggregation), note)


def _ttft_quantile(expr, p) -> Translated:
    args = expr.args
    q = _unwrap(args[0], p) if args else None
    if not isinstance(q, p.NumberLiteral) or q.val != 0.99:
        raise Refused("histogram_quantile is simulated for the 0.99 quantile of TTFT only")
    inner = _unwrap(args[1], p)
    if not (isinstance(inner, p.AggregateExpr) and str(inner.op).lower() == "sum"
            and inner.modifier is not None and list(inner.modifier.labels) == ["le"]
            and inner.modifier.type == p.AggModifierType.By):
        raise Refused("histogram_quantile needs `sum by (le) (rate(...))` as its argument")
    rate = _unwrap(inner.expr, p)
    if not (isinstance(rate, p.Call) and rate.func.name in ("rate", "increase")
            and isinstance(rate.args[0], p.MatrixSelector)):
        raise Refused("histogram_quantile needs rate(BUCKETS[W]) inside `sum by (le)`")
    metric, _ = _selector_metric(rate.args[0].vector_selector, p)
    if metric != TTFT_BUCKET:
        raise Refused(f"histogram_quantile over {metric!r}: only {TTFT_BUCKET} is simulated")
    window = rate.args[0].range
    return Translated(MetricQuery(metric=TTFT_P99_WINDOW, source="signal"),
                      f"P99 TTFT over [{window}] read as the simulator's 60 s sliding P99 window")


def translate_query(query: str, *, source: str, field: str) -> Translated:
    """Parse `query` and map it to a MetricQuery; a refusal names the query and what works."""
    p = _parser()
    if not isinstance(query, str) or not query.strip():
        raise UserInputError(f"expected a PromQL query, got {query!r}", source=source, field=field)
    one_line = " ".join(query.split())
    try:
        expr = _unwrap(p.parse(query), p)
    except (ValueError, RuntimeError) as exc:
        raise UserInputError(f"query {one_line!r} is not valid PromQL: {exc}", source=source,
                             field=field) from None
    try:
        if isinstance(expr, p.AggregateExpr):
            return _aggregate(expr, p)
        if isinstance(expr, p.Call) and expr.func.name == "histogram_quantile":
            return _ttft_quantile(expr, p)
        if isinstance(expr, p.VectorSelector):
            raise Refused("a bare selector returns one series per pod; a scaler needs one value")
        if isinstance(expr, p.BinaryExpr):
            raise Refused(f"binary operator `{expr.op}` combines several queries")
        raise Refused("this expression shape is not simulated")
    except Refused as why:
        raise UserInputError(f"query {one_line!r} cannot be simulated: {why}; supported: "
                             f"{SUPPORTED}", source=source, field=field) from None
