"""The run summary's percentiles come from np.partition, not a full sort: the same order
statistics, so the same floats, including +inf for requests without a first token."""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.metrics.summary import (
    _decided,
    _tpot_columns,
    partially_sorted,
    percentile_with_inf,
    slo_breach_minutes,
    slo_met_count,
    slo_met_mask,
    ttft_all_arrived,
)
from gpuscale.serving.requests_table import COMPLETED, DROPPED, IN_FLIGHT, RequestTable
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


def _columns_of(rows, completes):
    """A table of (arrival, ttft or None) rows, arrival-sorted; a row with a TTFT for which
    `completes(arrival, ttft)` holds gets its first token and completes at arrival + ttft."""
    rows.sort(key=lambda row: row[0])
    n = len(rows)
    table = RequestTable(Requests(np.array([a for a, _ in rows]), np.ones(n, np.int64),
                                  np.ones(n, np.int64)))
    table.num_arrived = n
    for rid, (arrival, ttft) in enumerate(rows):
        if ttft is not None and completes(arrival, ttft):
            table.first_token_s[rid] = arrival + ttft
            table.complete(rid, arrival + ttft)
    return table.columns()


@given(st.lists(st.tuples(st.floats(0.0, 600.0), st.one_of(st.none(), st.floats(0.0, 30.0))),
                min_size=1, max_size=200), st.floats(0.5, 10.0))
def test_breach_minutes_match_the_full_sort(rows, slo_s):
    cols = _columns_of(rows, lambda arrival, ttft: True)
    times = np.arange(0.0, 700.0, 15.0)
    assert slo_breach_minutes(cols, slo_s, times, 15.0, 60.0) == \
        _breach_minutes_by_sorting(cols, slo_s, times, 15.0, 60.0)


_SLO_S = 2.0
# Values at, and one float either side of, the SLO, infinities, and a spread: the cases where
# counting could decide a window wrongly.
_NEAR = st.sampled_from([_SLO_S, math.nextafter(_SLO_S, 0.0), math.nextafter(_SLO_S, math.inf),
                         math.inf, 0.0, 1e-300, 1.5, 2.5, 1e300])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_NEAR, st.floats(0.0, 10.0)), min_size=1, max_size=260), st.data())
def test_windows_decided_by_counting_have_the_computed_p99s_verdict(values, data):
    """`_decided` may leave a window undecided, never decide one against its P99."""
    arr = np.sort(np.asarray(values))  # any order: the window is a multiset
    arr = np.asarray(data.draw(st.permutations(list(arr))))
    m = len(arr)
    # Sizes where 0.99 (n - 1) is a whole rank (101, 201) or not, and the empty window.
    bounds = [data.draw(st.tuples(st.integers(0, m), st.integers(0, m))) for _ in range(8)]
    bounds += [(0, min(m, 101)), (0, min(m, 201)), (m, m)]
    lo = np.array([min(a, b) for a, b in bounds])
    hi = np.array([max(a, b) for a, b in bounds])
    decided, above = _decided(arr, lo, hi, _SLO_S)
    for i, (start, stop) in enumerate(zip(lo, hi, strict=True)):
        truth = stop > start and percentile_with_inf(np.sort(arr[start:stop]), 99.0) > _SLO_S
        if decided[i]:
            assert bool(above[i]) == truth, (start, stop)


def test_a_p99_that_lands_on_an_infinite_rank_without_interpolating_is_not_a_breach():
    """0.99 x 100 is rank 99 exactly: percentile_with_inf reads v99 + (inf - v99) x 0 = NaN
    there, never above the SLO; counting must leave it so (nor call the window above)."""
    values = np.array([5.0] * 100 + [math.inf])
    assert math.isnan(percentile_with_inf(np.sort(values), 99.0))
    decided, above = _decided(values, np.array([0]), np.array([101]), _SLO_S)
    assert decided[0] and not above[0]


@given(st.lists(st.tuples(st.floats(0.0, 600.0), st.one_of(st.none(), _NEAR)),
                min_size=1, max_size=300))
def test_breach_minutes_match_the_full_sort_near_the_slo(rows):
    cols = _columns_of(rows, lambda arrival, ttft: math.isfinite(ttft) and arrival + ttft < 1e300)
    times = np.arange(0.0, 700.0, 15.0)
    for slo_s in (_SLO_S, math.inf):
        assert slo_breach_minutes(cols, slo_s, times, 15.0, 60.0) == \
            _breach_minutes_by_sorting(cols, slo_s, times, 15.0, 60.0)


_ROW = st.tuples(st.sampled_from([COMPLETED, COMPLETED, DROPPED, IN_FLIGHT]),
                 st.floats(0.0, 100.0), st.one_of(st.none(), st.floats(0.0, 20.0)),
                 st.floats(0.0, 200.0), st.integers(1, 6))


@given(st.lists(_ROW, min_size=1, max_size=120), st.data(),
       st.sampled_from([0.5, 2.0, math.inf]), st.sampled_from([-1.0, 0.0, 0.05, 1.0, math.inf]))
def test_slo_met_count_is_the_masks_count(rows, data, ttft_slo_s, tpot_slo_s):
    """The run summary counts met requests from the arrays it has; the same count as
    `slo_met_mask` (completed, TTFT and TPOT within the SLO), SLOs at 0 and inf included."""
    rows.sort(key=lambda row: row[1])
    n = len(rows)
    arrived = data.draw(st.integers(1, n))
    table = RequestTable(Requests(np.array([r[1] for r in rows]), np.ones(n, np.int64),
                                  np.array([r[4] for r in rows], np.int64)))
    table.num_arrived = arrived
    for rid, (status, arrival, ttft, decode_s, _) in enumerate(rows[:arrived]):
        if status == COMPLETED:  # a completed request has its first token
            table.first_token_s[rid] = arrival + (ttft or 0.0)
            table.complete(rid, table.first_token_s[rid] + decode_s)
        elif status == DROPPED:
            if ttft is not None:
                table.first_token_s[rid] = arrival + ttft
            table.drop(rid, arrival + 300.0, "timeout")
        elif ttft is not None:
            table.first_token_s[rid] = arrival + ttft
    cols = table.columns()
    completed = cols.status[:arrived] == COMPLETED
    tpot, multi = _tpot_columns(cols)
    count = slo_met_count(completed, ttft_all_arrived(cols), tpot, multi[:arrived],
                          ttft_slo_s, tpot_slo_s)
    assert count == int(slo_met_mask(cols, ttft_slo_s, tpot_slo_s).sum())
