"""PromQL reading: which queries KEDA can take (one series) and which metric names they read."""

import pytest

from gpuscale.audit.promql import metric_names, returns_one_series, selectors, top_level_aggregator


@pytest.mark.parametrize("query", [
    "sum(vllm:num_requests_waiting)",
    'sum(vllm:num_requests_waiting{model_name="m"})',
    "histogram_quantile(0.9, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[5m])))",
    "sum(rate(a_total[1m])) / sum(rate(b_total[1m]))",
    "sum(max by (pod) (vllm:kv_cache_usage_perc))",  # inner per-pod, outer sum collapses it
    "scalar(up)",
    "5",
])
def test_single_series(query):
    assert returns_one_series(query)


@pytest.mark.parametrize("query", [
    "vllm:num_requests_waiting",
    "rate(vllm:prompt_tokens_total[1m])",
    "avg by (pod) (vllm:kv_cache_usage_perc)",
    "sum(vllm:num_requests_waiting) by (pod)",
    "sum without (le) (x)",
    "sum(a) / b",
])
def test_many_series(query):
    assert not returns_one_series(query)


def test_names_and_labels():
    q = 'sum(rate(vllm:num_incoming_requests_total{namespace="ns", model="m"}[2m]) > bool 0)'
    assert metric_names(q) == ["vllm:num_incoming_requests_total"]
    (sel,) = selectors(q)
    assert sel.labels == {"namespace": ("=", "ns"), "model": ("=", "m")}
    assert metric_names("sum by (pod, le) (x_bucket)") == ["x_bucket"]


def test_top_level_aggregator():
    assert top_level_aggregator("avg(vllm:kv_cache_usage_perc)") == "avg"
    assert top_level_aggregator("avg(a) / avg(b)") == ""
    assert top_level_aggregator("max by (pod) (x)") == "max"
    assert top_level_aggregator("x") == ""
