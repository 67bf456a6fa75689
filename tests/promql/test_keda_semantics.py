"""A PromQL trigger's value as KEDA's Prometheus scaler reads it (kedacore/keda
pkg/scalers/prometheus_scaler.go ExecutePromQuery), and an HPA External metric's as the HPA
reads a prometheus-adapter result (the series summed)."""

from __future__ import annotations

import math

import pytest

from gpuscale.autoscaling.base import AutoscalerView
from gpuscale.autoscaling.hpa import MetricQuery, query_value
from gpuscale.autoscaling.keda import trigger_value
from gpuscale.promql import Engine, SeriesStore


@pytest.fixture
def view() -> AutoscalerView:
    store = SeriesStore(origin_ms=0)
    for k in range(4):
        store.append("q", 15_000 * k, [{"pod": "a"}, {"pod": "b"}], [1.0 + k, 2.0])
        store.append("broken", 15_000 * k, [{"pod": "a"}], [math.nan])
    return AutoscalerView(now_s=45.0, current_replicas=2, pods=(), prometheus=Engine(store))


@pytest.mark.parametrize("query, ignore, value, read_as, error", [
    ("sum(q)", True, 6.0, 6.0, ""),
    ("q{pod=\"a\"}", False, 4.0, 4.0, ""),
    ("sum(missing)", True, None, 0.0, ""),
    ("sum(missing)", False, None, None, "the result is empty"),
    ("q", True, None, None, "multiple elements (2)"),  # even when ignoring nulls
    ("sum(broken)", True, math.nan, 0.0, ""),
    ("sum(broken)", False, math.nan, None, "query returns nan"),
    ("scalar(sum(q))", True, None, None, "not a vector"),
    ("q / on() q", True, None, None, "duplicate series"),  # an evaluation error
])
def test_prometheus_scaler_semantics(view, query, ignore, value, read_as, error):
    reading = trigger_value(view, MetricQuery(promql=query), ignore)
    assert (reading.value == value) or (math.isnan(value or 0) and math.isnan(reading.value))
    assert reading.read_as == read_as
    assert error in reading.error and bool(error) == bool(reading.error)


def test_hpa_external_sums_the_series_and_fails_on_none(view):
    assert query_value(view, MetricQuery(promql="q")) == 6.0
    assert query_value(view, MetricQuery(promql="scalar(sum(q))")) == 6.0
    assert query_value(view, MetricQuery(promql="missing")) is None
    assert query_value(view, MetricQuery(promql="q / on() q")) is None


def test_a_string_is_a_promql_query_and_bad_promql_is_refused():
    assert MetricQuery.model_validate("sum(q)").promql == "sum(q)"
    with pytest.raises(ValueError, match="invalid PromQL"):
        MetricQuery.model_validate("sum(")
    with pytest.raises(ValueError, match="either `promql`"):
        MetricQuery.model_validate({"metric": "q", "promql": "q"})
