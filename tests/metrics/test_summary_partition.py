"""The run summary's percentiles come from np.partition, not a full sort: the same order
statistics, so the same floats, including +inf for requests without a first token."""

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gpuscale.metrics.summary import (
    partially_sorted,
    percentile_with_inf,
    slo_breach_minutes,
    ttft_all_arrived,
)
from gpuscale.serving.requests_table import RequestTable
from gpuscale.workloads.base import Requests

VALUES = st.lists(st.one_of(st.floats(0.0, 500.0), st.just(math.inf), st.sampled_from([0.5, 2.0])),
                  min_size=1, max_size=300)


@given(VALUES, st.lists(st.floats(0.0, 100.0), min_size=1, max_size=4))
def test_partition_gives_the_sorted_percentiles_exactly(values, qs):
    arr = np.asarray(values)
    partial = partially_sorted(arr, tuple(qs))
    for q in qs:  # repr: NaN (0 x inf at an exact rank next to inf) must match NaN too
        assert repr(percentile_with_inf(partial, q)) == repr(percentile_with_inf(np.sort(arr), q))


def _breach_minutes_by_sorting(cols, ttft_slo_s, times_s, interval_s, window_s):
    """The code before the partition: a full sort of every scrape's window."""
    ttft = ttft_all_arrived(cols)
    n = cols.num_arrived
    known = np.where(np.isinf(ttft), np.fmin(cols.arrival_s[:n] + ttft_slo_s, cols.finish_s[:n]),
                     cols.first_token_s[:n])
    order = np.argsort(known, kind="stable")
    known, ttft = known[order], ttft[order]
    breached = 0
    for t in times_s:
        lo, hi = np.searchsorted(known, [t - window_s, t], side="right")
        if hi > lo and percentile_with_inf(np.sort(ttft[lo:hi]), 99.0) > ttft_slo_s:
            breached += 1
    return breached * interval_s / 60.0


@given(st.lists(st.tuples(st.floats(0.0, 600.0), st.one_of(st.none(), st.floats(0.0, 30.0))),
                min_size=1, max_size=200), st.floats(0.5, 10.0))
def test_breach_minutes_match_the_full_sort(rows, slo_s):
    rows.sort(key=lambda row: row[0])
    n = len(rows)
    table = RequestTable(Requests(np.array([a for a, _ in rows]), np.ones(n, np.int64),
                                  np.ones(n, np.int64)))
    table.num_arrived = n
    for rid, (arrival, ttft) in enumerate(rows):
        if ttft is not None:
            table.first_token_s[rid] = arrival + ttft
            table.complete(rid, arrival + ttft)
    cols = table.columns()
    times = np.arange(0.0, 700.0, 15.0)
    assert slo_breach_minutes(cols, slo_s, times, 15.0, 60.0) == \
        _breach_minutes_by_sorting(cols, slo_s, times, 15.0, 60.0)
