"""Scaler queries: each supported shape maps to the simulator's metric and aggregation; each
shape it cannot express is refused, naming the query and what is supported."""

from __future__ import annotations

import pytest

from gpuscale.errors import UserInputError
from gpuscale.importer.promql import translate_query


@pytest.mark.parametrize(
    "query, metric, aggregation, source",
    [
        (
            'sum(vllm:num_requests_waiting{model_name="Qwen/Qwen3-32B"})',
            "vllm:num_requests_waiting",
            "sum",
            "pods",
        ),
        ("avg(vllm:kv_cache_usage_perc)", "vllm:kv_cache_usage_perc", "avg", "pods"),
        (
            'max({__name__="vllm:num_requests_running", namespace="llm"})',
            "vllm:num_requests_running",
            "max",
            "pods",
        ),
        (
            'sum by (model_name) (vllm:num_requests_waiting{model_name="m"})',
            "vllm:num_requests_waiting",
            "sum",
            "pods",
        ),
        (
            "(sum(vllm:num_requests_running)) # in-flight sequences\n",
            "vllm:num_requests_running",
            "sum",
            "pods",
        ),
        (
            'sum(vllm:num_requests_waiting{job="a}b", x=~"y"})',
            "vllm:num_requests_waiting",
            "sum",
            "pods",
        ),
        ("sum(DCGM_FI_DEV_GPU_UTIL)", "DCGM_FI_DEV_GPU_UTIL", "sum", "pods"),
        (
            "histogram_quantile(0.99, sum by (le) "
            "(rate(vllm:time_to_first_token_seconds_bucket[2m])))",
            "ttft_p99_s",
            "sum",
            "signal",
        ),
    ],
)
def test_supported_shapes(query, metric, aggregation, source):
    q = translate_query(query, source="so.yaml", field="q").query
    assert (q.metric, q.source) == (metric, source)
    if source == "pods":
        assert q.aggregation == aggregation


def test_removed_vllm_metric_is_read_as_its_successor_with_a_note():
    out = translate_query("sum(vllm:gpu_cache_usage_perc)", source="s", field="q")
    assert out.query.metric == "vllm:kv_cache_usage_perc" and "removed" in out.note


@pytest.mark.parametrize(
    "query, why",
    [
        ("vllm:num_requests_waiting", "bare selector"),
        ("sum by (pod) (vllm:num_requests_waiting)", "one series per pod"),
        ("sum without (pod) (vllm:num_requests_waiting)", "without"),
        ("sum(rate(vllm:num_requests_waiting[1m]))", "rate(...)"),
        ("sum(vllm:num_requests_waiting offset 5m)", "offset"),
        ("sum(vllm:num_requests_waiting @ 1700000000)", "`@`"),
        ("sum(vllm:num_requests_waiting) / sum(vllm:num_requests_running)", "binary operator `/`"),
        ("count(vllm:num_requests_waiting)", "aggregation `count`"),
        ("min(vllm:num_requests_waiting)", "aggregation `min`"),
        ("sum(my_custom_metric)", "not a series the simulated pods export"),
        ('sum({__name__=~"vllm:.*"})', "regex or negative `__name__`"),
        (
            "histogram_quantile(0.9, sum by (le) "
            "(rate(vllm:time_to_first_token_seconds_bucket[1m])))",
            "0.99",
        ),
        (
            "histogram_quantile(0.99, sum by (le) "
            "(rate(vllm:e2e_request_latency_seconds_bucket[1m])))",
            "only vllm:time_to_first_token",
        ),
        ("42", "expression shape"),
    ],
)
def test_refused_shapes_name_the_query_and_what_is_supported(query, why):
    with pytest.raises(UserInputError) as info:
        translate_query(query, source="so.yaml", field="spec.triggers[0].metadata.query")
    message = str(info.value)
    assert message.startswith("so.yaml: spec.triggers[0].metadata.query: query ")
    assert " ".join(query.split()) in message and why in message
    assert "supported: sum|avg|max(SERIES" in message and "\n" not in message


@pytest.mark.parametrize("query", ["sum(", "sum(vllm:num_requests_waiting[5m])", 'sum(x{a="b)'])
def test_invalid_promql_is_one_line(query):
    with pytest.raises(UserInputError) as info:
        translate_query(query, source="s", field="q")
    assert f"query {query!r} is not valid PromQL" in str(info.value)
    assert "\n" not in str(info.value)
