"""Counters per window: Prometheus' reset rule, new series counted from zero, gaps spread
and reported; the increases agree with a PromQL increase() over aligned samples."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.backtest.windows import Irregularities, counter_windows, histogram_windows
from gpuscale.promql import Engine, SeriesStore

STEP = 15_000


def _store(samples: dict[str, list[tuple[int, float]]], name: str = "c_total") -> SeriesStore:
    store = SeriesStore()
    rows = [(t, (("__name__", name), ("pod", pod)), v) for pod, points in samples.items()
            for t, v in points]
    store.load({name: rows})
    return store


def _windows(store, grid, name="c_total", seen=None):
    seen = seen if seen is not None else Irregularities()
    return counter_windows(store, name, (), grid, STEP, seen).get(""), seen


def test_a_reset_counts_the_new_value_not_a_negative_step():
    grid = np.arange(0, 5 * STEP, STEP)
    store = _store({"a": [(0, 10.0), (STEP, 14.0), (2 * STEP, 3.0), (3 * STEP, 5.0),
                          (4 * STEP, 5.0)]})
    out, seen = _windows(store, grid)
    assert out.tolist() == [4.0, 3.0, 2.0, 0.0]  # 14 -> 3 is a restart that counted 3
    assert seen.resets == 1


def test_a_series_that_starts_late_is_counted_from_zero():
    grid = np.arange(0, 5 * STEP, STEP)
    store = _store({"old": [(t, 100.0) for t in grid],
                    "new": [(3 * STEP, 6.0), (4 * STEP, 8.0)]})
    out, seen = _windows(store, grid)
    assert out.tolist() == [0.0, 0.0, 6.0, 2.0]  # the new pod's first 6 in the step before
    assert seen.started == 1


def test_a_gap_is_spread_over_its_windows_and_reported():
    grid = np.arange(0, 6 * STEP, STEP)
    store = _store({"a": [(0, 0.0), (STEP, 3.0), (4 * STEP, 12.0), (5 * STEP, 13.0)]})
    out, seen = _windows(store, grid)
    assert np.allclose(out, [3.0, 3.0, 3.0, 3.0, 1.0])
    assert seen.merged_gaps() == [(15.0, 60.0)]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=50), min_size=3, max_size=30),
       st.lists(st.integers(min_value=1, max_value=29), max_size=3))
def test_window_increases_are_promql_increase_on_aligned_samples(steps, resets_at):
    """Samples on the grid: each window's increase is Prometheus' increase(x[step]) (both
    ends sampled, so nothing is extrapolated), resets included."""
    values = np.cumsum(steps).astype(float)
    for at in resets_at:
        if at < len(values):
            values[at:] -= values[at - 1]  # a restart: counting from 0 again
    grid = np.arange(0, len(values) * STEP, STEP)
    store = _store({"a": list(zip(grid.tolist(), values.tolist(), strict=True))})
    out, _ = _windows(store, grid)
    engine = Engine(store)
    for k in range(1, len(grid)):
        rows = engine.instant(f"increase(c_total[{STEP}ms])", int(grid[k])).rows()
        assert abs(rows[0][1] - out[k - 1]) < 1e-9


def test_histogram_buckets_per_window_are_not_cumulative():
    grid = np.arange(0, 3 * STEP, STEP)
    store = SeriesStore()
    rows = []
    for t, counts in ((0, (0, 0, 0)), (STEP, (1, 3, 4)), (2 * STEP, (1, 5, 7))):
        for le, value in zip(("1.0", "2.0", "+Inf"), counts, strict=True):
            rows.append((t, (("__name__", "h_bucket"), ("le", le)), float(value)))
    store.load({"h_bucket": rows})
    hist = histogram_windows(store, "h", (), grid, STEP, Irregularities())
    assert hist.counts.tolist() == [[1.0, 2.0, 1.0], [0.0, 2.0, 1.0]]
    assert hist.totals.tolist() == [4.0, 3.0]  # no _count: the buckets' total


def test_a_series_silent_while_others_were_scraped_restarted_from_zero():
    """An engine evicted and back under the same pod name: 44 -> 64 with no lower sample
    between. Other series were scraped meanwhile, so the engine was down: its 64 are new
    (Prometheus' increase() would read +20). The same silence in every series is a scrape
    outage: the increase is spread over it."""
    grid = np.arange(0, 10 * STEP, STEP)
    points = {"a": [(0, 0.0), (STEP, 44.0), (8 * STEP, 64.0), (9 * STEP, 70.0)],
              "other": [(t, 1.0) for t in grid.tolist()]}
    store = _store(points)
    scrapes = np.unique(np.concatenate([np.array([t for t, _ in p]) for p in points.values()]))
    restarted = counter_windows(store, "c_total", (), grid, STEP, seen := Irregularities(),
                                scrapes_ms=scrapes)[""]
    assert restarted.tolist() == [44.0, 0, 0, 0, 0, 0, 0, 64.0, 6.0]
    assert seen.restarts == 1 and seen.gaps == []
    alone = _store({"a": points["a"]})
    outage = counter_windows(alone, "c_total", (), grid, STEP, seen := Irregularities(),
                             scrapes_ms=np.array([t for t, _ in points["a"]]))[""]
    assert np.allclose(outage, [44.0] + [20.0 / 7] * 7 + [6.0])
    assert seen.restarts == 0 and seen.merged_gaps() == [(15.0, 120.0)]
