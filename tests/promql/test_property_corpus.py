"""The evaluator agrees with Prometheus on random series and random queries (hypothesis).

Series: counters with resets, gauges, gaps and staleness markers, on a 15 s grid. Queries:
drawn from a grammar of what autoscalers and recording rules write (selectors with matchers,
aggregations with by/without, rate/irate/increase/delta, *_over_time, subqueries, arithmetic
and comparisons with scalars, vector matching with on/ignoring/group_left, and/or/unless,
histogram_quantile, clamp*, label_replace, scalar/vector). Each example runs its queries at
several times through `promtool test rules` and through the engine; errors must agree too.
Skipped without promtool."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .oracle import GAP, PROMTOOL, STALE, InputSeries, mismatches, ours, prometheus, store_of

pytestmark = pytest.mark.skipif(PROMTOOL is None,
                                reason="promtool not installed (apt-get install prometheus)")

INTERVAL_MS = 15_000
STEPS = 20
PODS = ("p1", "p2", "p3")
RANGES = ("30s", "40s", "45s", "1m", "100s", "2m", "3m")


@st.composite
def counter_values(draw) -> tuple:
    value, out = 0, []
    for _ in range(STEPS):
        kind = draw(st.sampled_from(("inc", "inc", "inc", "reset", "gap", "stale")))
        if kind == "gap":
            out.append(GAP)
            continue
        if kind == "stale":
            out.append(STALE)
            continue
        value = draw(st.integers(0, 5)) if kind == "reset" else value + draw(st.integers(0, 9))
        out.append(value)
    return tuple(out)


@st.composite
def gauge_values(draw) -> tuple:
    cells = st.one_of(st.integers(-3, 20).map(float),
                      st.integers(0, 400).map(lambda n: n / 100),
                      st.just(GAP), st.just(STALE))
    return tuple(draw(cells) for _ in range(STEPS))


@st.composite
def series_sets(draw) -> list[InputSeries]:
    out = []
    for pod in draw(st.lists(st.sampled_from(PODS), min_size=1, max_size=3, unique=True)):
        job = draw(st.sampled_from(("j1", "j2")))
        out.append(InputSeries("c_total", {"pod": pod, "job": job}, draw(counter_values())))
        out.append(InputSeries("g", {"pod": pod, "job": job}, draw(gauge_values())))
        if draw(st.booleans()):
            out.append(InputSeries("h", {"pod": pod}, draw(gauge_values())))
        scale = draw(st.integers(1, 4))
        for bound, share in (("0.5", 0.3), ("1", 0.7), ("+Inf", 1.0)):
            out.append(InputSeries("lat_bucket", {"pod": pod, "le": bound},
                                   tuple(int(k * scale * share * 10) for k in range(STEPS))))
    return out


def selectors() -> st.SearchStrategy[str]:
    matcher = st.sampled_from(("", '{pod="p1"}', '{pod!="p2"}', '{pod=~"p1|p3"}',
                               '{job="j2"}', '{pod!~"p3"}'))
    return st.tuples(st.sampled_from(("g", "h", "c_total")), matcher).map("".join)


def vectors(depth: int = 2) -> st.SearchStrategy[str]:
    leaf = st.one_of(
        selectors(),
        st.tuples(st.sampled_from(("rate", "irate", "increase", "delta", "avg_over_time",
                                   "max_over_time", "min_over_time", "sum_over_time",
                                   "count_over_time", "last_over_time", "changes")),
                  selectors(), st.sampled_from(RANGES)).map(lambda t: f"{t[0]}({t[1]}[{t[2]}])"),
        st.sampled_from(("rate", "increase")).map(
            lambda f: f"histogram_quantile(0.9, sum by (le) ({f}(lat_bucket[1m])))"),
    )
    if depth == 0:
        return leaf
    inner = vectors(depth - 1)
    return st.one_of(
        leaf,
        st.tuples(st.sampled_from(("sum", "avg", "max", "min", "count")),
                  st.sampled_from(("", " by (pod)", " by (job)", " without (pod)")), inner)
        .map(lambda t: f"{t[0]}{t[1]} ({t[2]})"),
        st.tuples(inner, st.sampled_from(("+", "-", "*", "/", ">", "<=", "> bool")),
                  st.sampled_from(("2", "0.5", "0"))).map(" ".join),
        st.tuples(inner, st.sampled_from(("+ on(pod)", "/ ignoring(job)", "and", "or",
                                          "unless", "* on(pod) group_left", "> on(pod)")),
                  inner).map(" ".join).map(lambda q: f"({q})"),
        st.tuples(st.sampled_from(("max_over_time", "avg_over_time", "min_over_time")), inner,
                  st.sampled_from(("1m:15s", "2m:30s", "90s:", "1m:20s")))
        .map(lambda t: f"{t[0]}(({t[1]})[{t[2]}])"),
        st.tuples(st.sampled_from(("clamp_max({}, 3)", "clamp_min({}, 1)", "abs({})",
                                   "label_replace({}, \"x\", \"$1\", \"pod\", \"p(.)\")",
                                   "ceil({})", "-{}", "sum({}) or vector(0)")), inner)
        .map(lambda t: t[0].format(t[1])),
    )


@pytest.mark.slow
@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(series=series_sets(), queries=st.lists(vectors(), min_size=8, max_size=16, unique=True))
def test_random_queries_agree_with_prometheus(series, queries):
    times = (45_000, 127_500, 200_000, 292_000, 361_000)
    pairs = [(q, t) for q, t in itertools.product(queries, times)]
    with tempfile.TemporaryDirectory() as tmp:
        expected = prometheus(series, pairs, INTERVAL_MS, Path(tmp))
    got = ours(store_of(series, INTERVAL_MS), pairs)
    # Prometheus sums a subquery's series in map order (engine.go rangeEval): 1e-12 there.
    exact = [i for i, (q, _) in enumerate(pairs) if ":" not in q]
    loose = [i for i in range(len(pairs)) if ":" in pairs[i][0]]
    problems = mismatches([expected[i] for i in exact], [got[i] for i in exact],
                          [pairs[i] for i in exact])
    problems += mismatches([expected[i] for i in loose], [got[i] for i in loose],
                           [pairs[i] for i in loose], rel=1e-12)
    assert not problems, "\n".join(problems[:10])
