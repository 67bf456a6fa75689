"""The scrape's vectorised paths give the same numbers, bit for bit, as the per-value code they
replaced (a sorted window, a bisect per TTFT, a per-request TPOT expression): the series and
every signal a scaler reads must not move with the speed-up (docs/benchmarks.md, round three).
"""

import math
from bisect import bisect_left

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gpuscale.metrics.scrape import _tpots_s
from gpuscale.metrics.store import (
    TTFT_BUCKETS_S,
    MetricsStore,
    _sorted_batches_percentile,
    percentile_sorted,
    percentile_unsorted,
)
from gpuscale.serving.requests_table import RequestTable
from gpuscale.workloads.base import Requests

TTFTS = st.floats(0.0, 3000.0, allow_nan=False)


@given(st.lists(TTFTS, min_size=1, max_size=400), st.floats(0, 100))
def test_partitioned_percentile_is_the_sorted_one_exactly(values, q):
    assert percentile_unsorted(np.asarray(values), q) == percentile_sorted(sorted(values), q)


# Batches of very different sizes (one may hold the whole top), many ties (a few distinct
# values) and every q: the tails must hold the union's order statistics.
_BATCH = st.lists(st.one_of(TTFTS, st.sampled_from([0.0, 0.5, 1.0, math.inf])), min_size=1,
                  max_size=300)


@given(st.lists(_BATCH, min_size=1, max_size=5), st.floats(0, 100))
def test_percentile_of_sorted_batch_tails_is_the_sorted_window_one(batches, q):
    arrays = [np.sort(np.asarray(b, dtype=np.float64)) for b in batches]
    expected = percentile_sorted(sorted(v for b in batches for v in b), q)
    got = _sorted_batches_percentile(arrays, q)
    assert got == expected or (math.isnan(got) and math.isnan(expected))
    assert type(got) is float


@given(st.lists(st.tuples(st.integers(0, 3), st.lists(TTFTS, max_size=40)), max_size=25))
def test_observe_ttft_matches_the_per_value_loop(scrapes):
    store = MetricsStore(scrape_interval_s=15.0, ttft_window_s=60.0)
    counts = [0] * (len(TTFT_BUCKETS_S) + 1)
    recent: list[tuple[float, list[float]]] = []
    now_s = 0.0
    for gap, values in scrapes:
        now_s += 15.0 * gap
        store.observe_ttft(now_s, list(values))
        for value in values:  # the code before round three, value by value
            counts[bisect_left(TTFT_BUCKETS_S, value)] += 1
        if values:
            recent.append((now_s, values))
        recent = [(t, batch) for t, batch in recent if t > now_s - 60.0]
        window = sorted(v for _, batch in recent for v in batch)
        expected = percentile_sorted(window, 99.0) if window else 0.0
        assert store.ttft_p99_s == expected
        assert store.ttft_counts.tolist() == counts


@given(st.lists(st.tuples(st.integers(1, 50), st.floats(0, 100), st.floats(0, 500)),
                min_size=1, max_size=60), st.data())
def test_tpots_match_the_per_request_expression(rows, data):
    n = len(rows)
    table = RequestTable(Requests(np.zeros(n), np.full(n, 10), np.array([o for o, _, _ in rows])))
    for rid, (_, first_s, decode_s) in enumerate(rows):
        table.first_token_s[rid] = first_s
        table.finish_s[rid] = first_s + decode_s
    completed = data.draw(st.lists(st.integers(0, n - 1), max_size=2 * n))
    expected = [(table.finish_s[r] - table.first_token_s[r]) / (table.output_tokens[r] - 1)
                for r in completed if table.output_tokens[r] > 1]
    got = _tpots_s(table, completed)
    assert got == expected
    assert math.fsum(got) == math.fsum(expected) and sum(got) == sum(expected)
