"""A scaler's PromQL query, taken as the user wrote it: checked, not translated.

The query is parsed and evaluated by `gpuscale.promql` over the simulated series, so any
query the evaluator evaluates simulates unchanged (docs/promql.md). What the import checks:
- it parses and uses only what the evaluator evaluates (else one line naming the field);
- every metric it reads is a series the simulated cluster exposes (metrics/exposition.py) or
  one the bundle's recording rules write (else one line naming the metric, with the closest
  known name);
- a label it pins with `=` that the simulated series do not carry (a `service` or `model`
  label the user's scrape configuration adds) is adopted: the series of that metric carry
  it (`metrics.extra_labels`), with a note; a pinned label whose simulated value differs
  (another namespace, another served model name) is kept, with a note that it reads nothing.
A removed vLLM name (`vllm:gpu_cache_usage_perc`, hidden since 0.10) is read as its
successor, with a note (audit rule GPU004 flags it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from gpuscale.errors import UserInputError
from gpuscale.metrics.exposition import engine_families
from gpuscale.metrics.prometheus_config import unknown_metric
from gpuscale.promql.errors import PromQLError
from gpuscale.promql.labels import NAME
from gpuscale.promql.parse import metric_names, parse, selectors

# vLLM renamed these; the simulated pods export the new name (serving-engine-metrics.md 1.1).
RENAMED = {"vllm:gpu_cache_usage_perc": "vllm:kv_cache_usage_perc"}
# The labels that carry the InferencePool's name on the EPP's series (`inference_pool` on the
# flow-control families, `name` on the inference_pool_* ones: llm-d-router
# pkg/epp/metrics/metrics.go). The pool is not among the manifests gpuscale reads, so its
# name is the one the queries pin.
POOL_LABELS = ("inference_pool", "name")


@dataclass
class QueryContext:
    """What a query is checked against: the simulated series (name -> label names), the
    recorded names, the values gpuscale gives the labels it sets itself, and another
    engine's name -> this engine's name for the same quantity."""

    series: Mapping[str, frozenset[str]]
    records: frozenset[str] = frozenset()
    values: Mapping[str, str] = field(default_factory=dict)
    extra_labels: dict[str, dict[str, str]] = field(default_factory=dict)
    equivalents: Mapping[str, str] = field(default_factory=dict)


def engine_equivalents(kind: str) -> dict[str, str]:
    """Other engines' names of the quantities `kind` exports (the model-server protocol's
    mapping, serving-engine-metrics.md 3): a query written for vLLM on SGLang pods reads
    sglang:num_queue_reqs, as a team porting its scaler would rename it."""
    ours = engine_families(kind, 1)
    out = {}
    for other in ("vllm", "sglang", "trtllm"):
        if other == kind:
            continue
        for quantity, family in engine_families(other, 1).items():
            if quantity in ours and ours[quantity].type == family.type:
                for theirs, mine in zip(family.sample_names, ours[quantity].sample_names,
                                        strict=True):
                    out[theirs] = mine
    return out


def _renamed(query: str, ctx: QueryContext, notes: list[str]) -> str:
    for old, new, why in [*((o, n, "removed from vLLM") for o, n in RENAMED.items()),
                          *((o, n, "the pods run another engine")
                            for o, n in ctx.equivalents.items())]:
        new = ctx.equivalents.get(new, new)
        pattern = re.compile(rf"(?<![\w:]){re.escape(old)}(?![\w:])")
        if pattern.search(query) and new in ctx.series:
            query = pattern.sub(new, query)
            notes.append(f"{old} ({why}) read as {new}")
    return query


def import_query(query: object, ctx: QueryContext, *, source: str, field_path: str,
                 notes: list[str]) -> str:
    """The query to simulate (the user's text, a removed vLLM name renamed); refusals name
    `source` and `field_path`."""
    if not isinstance(query, str) or not query.strip():
        raise UserInputError(f"expected a PromQL query, got {query!r}", source=source,
                             field=field_path)
    one_line = " ".join(query.split())
    query = _renamed(query, ctx, notes)
    try:
        node = parse(query)
    except PromQLError as exc:
        raise UserInputError(f"query {one_line!r} cannot be evaluated: {exc}", source=source,
                             field=field_path) from None
    if metric_names(node) is None:
        notes.append(f"query {one_line!r} selects metrics by a regex on __name__: it reads "
                     "whichever simulated series match")
        return query
    unknown = unknown_metric(query, [*ctx.series, *ctx.records])
    if unknown is not None:
        raise UserInputError(unknown, source=source, field=field_path)
    for selector in selectors(node):
        _labels(selector, ctx, one_line, notes)
    return query


def _labels(selector, ctx: QueryContext, query: str, notes: list[str]) -> None:
    name = next(m.value for m in selector.matchers if m.name == NAME)
    carried = ctx.series.get(name)
    if carried is None:  # a recorded series: its labels come from its rule
        return
    for m in selector.matchers:
        if m.name == NAME:
            continue
        if m.name in POOL_LABELS and m.name in carried and m.op == "=":
            _adopt_pool_name(m.value, ctx, query, notes)
            continue
        if m.name not in carried:
            if m.op != "=":
                notes.append(f"query {query!r}: label {m.name} is not on the simulated "
                             f"{name} series, so {m.name}{m.op}{m.value!r} sees it empty")
                continue
            adopted = ctx.extra_labels.setdefault(name, {})
            if adopted.setdefault(m.name, m.value) == m.value:
                notes.append(f"label {m.name}={m.value!r} (from query {query!r}) added to the "
                             f"simulated {name} series, as the scrape configuration it "
                             "assumes would")
            continue
        ours = ctx.values.get(m.name)
        if m.op == "=" and ours is not None and ours != m.value:
            notes.append(f"query {query!r} pins {m.name}={m.value!r} but the simulated "
                         f"series carry {m.name}={ours!r}: it reads nothing, as it would in "
                         "a cluster where they differ")


def _adopt_pool_name(pool: str, ctx: QueryContext, query: str, notes: list[str]) -> None:
    """Name the simulated InferencePool `pool` on every EPP series (a pool name pinned
    once is the pool's name for every query; a second, different one reads nothing)."""
    carriers = [name for name, labels in ctx.series.items()
                if any(label in labels for label in POOL_LABELS)]
    current = next((ctx.extra_labels.get(n, {}).get(label) for n in carriers
                    for label in POOL_LABELS if label in ctx.extra_labels.get(n, {})), None)
    if current is not None:
        if current != pool:
            notes.append(f"query {query!r} pins the InferencePool {pool!r} but another query "
                         f"named it {current!r}: it reads nothing")
        return
    for name in carriers:
        for label in POOL_LABELS:
            if label in ctx.series[name]:
                ctx.extra_labels.setdefault(name, {})[label] = pool
    notes.append(f"InferencePool name {pool!r} (from query {query!r}) given to the simulated "
                 "EPP series (the pool is not among the manifests)")
