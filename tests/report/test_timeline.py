import json
import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gpuscale.metrics.store import SERIES_COLUMNS
from gpuscale.report.timeline import SERIES_KEY, compact_number, result_json_text, run_views

from .results import tiny_json, tiny_result


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12))
def test_compact_number_keeps_five_significant_digits(value):
    out = compact_number(value)
    assert isinstance(out, (int, float))
    assert math.isclose(out, value, rel_tol=5e-5, abs_tol=1e-300)


@given(st.integers(min_value=-2**40, max_value=2**40))
def test_compact_number_keeps_integers_exact(value):
    out = compact_number(float(value))
    assert out == value and isinstance(out, int)


def test_compact_number_maps_non_finite_to_null():
    assert compact_number(float("nan")) is None
    assert compact_number(float("inf")) is None


def test_series_leave_the_public_summary_keys_untouched():
    plain, full = tiny_json(series=False), tiny_json(series=True)
    assert set(plain) == set(full)
    for a, b in zip(plain["runs"], full["runs"], strict=True):
        assert set(b) - set(a) == {SERIES_KEY}
        assert {k: v for k, v in b.items() if k != SERIES_KEY} == a


def test_series_columns_add_up_to_the_request_counts():
    """Arrivals and completions per scrape are deltas: their sums are the run's totals."""
    data = tiny_json()
    for run in data["runs"]:
        cols = run[SERIES_KEY]["columns"]
        assert set(cols) == set(SERIES_COLUMNS)
        assert len({len(v) for v in cols.values()}) == 1
        assert sum(cols["arrivals"]) == run["requests"]["total"]
        # A completion after the last scrape is not in any row.
        assert (
            run["requests"]["completed"] - 50
            <= sum(cols["completions"])
            <= run["requests"]["completed"]
        )
        # Cost is cumulative and ends at most at the run's total.
        cost = np.array(cols["cost_usd"])
        total = run["cost_usd"] + run["drain_cost_usd"]
        assert np.all(np.diff(cost) >= 0) and cost[-1] <= total * (1 + 1e-4)


def test_markers_count_the_scale_events():
    data = tiny_json()
    for run in data["runs"]:
        kinds = [kind for _, kind, _ in run[SERIES_KEY]["markers"]]
        assert sum(k in ("scale_up", "scale_down") for k in kinds) == run["scale_events"]
    assert any(run["scale_events"] > 0 for run in data["runs"])


def test_cdf_is_monotone_and_matches_the_summary_percentiles():
    data = tiny_json()
    for run in data["runs"]:
        cdf = run[SERIES_KEY]["cdf"]
        assert cdf["q"][0] == 0 and cdf["q"][-1] == 1 and len(cdf["q"]) == 101
        for key in ("ttft_s", "tpot_s"):
            values = np.array(cdf[key])
            assert np.all(np.diff(values) >= 0)
            assert math.isclose(values[50], run[key]["p50"], rel_tol=1e-4)
            assert math.isclose(values[99], run[key]["p99"], rel_tol=1e-4)


def test_result_json_text_round_trips_and_keeps_series_on_one_line():
    data = tiny_json()
    text = result_json_text(data)
    assert json.loads(text) == data
    series_lines = [line for line in text.splitlines() if f'"{SERIES_KEY}"' in line]
    assert len(series_lines) == len(data["runs"])
    assert len(text.splitlines()) < 200  # not one number per line


def test_run_views_read_back_the_engine_series():
    result = tiny_result()
    views = run_views(tiny_json())
    for view, run in zip(views, result.runs, strict=True):
        assert view.has_series and view.name == run.name
        np.testing.assert_allclose(view.columns["replicas_ready"], run.series["replicas_ready"])
        np.testing.assert_allclose(view.columns["kv_usage_mean"], run.series["kv_usage_mean"],
                                   rtol=1e-4)


def test_run_views_without_series():
    views = run_views(tiny_json(series=False))
    assert views and not any(v.has_series for v in views)
