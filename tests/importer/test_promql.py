"""Scaler queries are taken as written and checked: any query the evaluator evaluates over
series the simulated cluster exposes is kept unchanged; one that cannot be evaluated, or that
reads a series nothing exposes, is refused in one line naming the field."""

from __future__ import annotations

import pytest

from gpuscale.errors import UserInputError
from gpuscale.importer.promql import QueryContext, import_query
from gpuscale.metrics.exposition import known_series


def _ctx(**kwargs) -> QueryContext:
    return QueryContext(known_series("vllm"), frozenset({"llm:queue_depth"}),
                        {"namespace": "llm", "model_name": "Qwen/Qwen3-32B"}, **kwargs)


@pytest.mark.parametrize("query", [
    'sum(vllm:num_requests_waiting{model_name="Qwen/Qwen3-32B"})',
    "avg(vllm:kv_cache_usage_perc)",
    'max({__name__="vllm:num_requests_running", namespace="llm"})',
    "sum by (pod) (vllm:num_requests_waiting)",
    "sum(rate(vllm:generation_tokens_total[1m])) / count(vllm:num_requests_running)",
    "histogram_quantile(0.9, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[5m])))",
    "avg_over_time(llm:queue_depth[2m])",
    "clamp_max(max_over_time(sum(vllm:num_requests_waiting)[5m:30s]), 10) or vector(0)",
    'label_replace(sum(DCGM_FI_DEV_GPU_UTIL), "a", "b", "c", "d")',
    "(sum(vllm:num_requests_running)) # in-flight sequences\n",
])
def test_evaluable_queries_are_kept_as_written(query):
    notes: list[str] = []
    assert import_query(query, _ctx(), source="so.yaml", field_path="q", notes=notes) == query


def test_removed_vllm_metric_is_read_as_its_successor_with_a_note():
    notes: list[str] = []
    out = import_query("sum(vllm:gpu_cache_usage_perc)", _ctx(), source="s", field_path="q",
                       notes=notes)
    assert out == "sum(vllm:kv_cache_usage_perc)" and "removed" in notes[0]


def test_a_label_the_series_lack_is_adopted_with_a_note():
    ctx = _ctx()
    notes: list[str] = []
    import_query('sum(llm_d_epp_flow_control_queue_size{service="epp", namespace="llm"})', ctx,
                 source="s", field_path="q", notes=notes)
    assert ctx.extra_labels == {"llm_d_epp_flow_control_queue_size": {"service": "epp"}}
    assert any("service='epp'" in n for n in notes)


def test_a_pinned_label_with_another_value_reads_nothing_and_says_so():
    notes: list[str] = []
    import_query('sum(vllm:num_requests_waiting{namespace="other"})', _ctx(), source="s",
                 field_path="q", notes=notes)
    assert any("reads nothing" in n for n in notes)


@pytest.mark.parametrize("query, why", [
    ("sum(my_custom_metric)", "'my_custom_metric', which the simulated cluster does not expose"),
    ("sum(vllm:num_requests_waitin)", "did you mean 'vllm:num_requests_waiting'"),
    ("holt_winters(x[5m], 0.5, 0.5)", "cannot be evaluated"),
    ("sum(", "cannot be evaluated"),
    ("sum(vllm:num_requests_waiting[5m])", "cannot be evaluated"),
])
def test_refusals_are_one_line_naming_the_field(query, why):
    with pytest.raises(UserInputError) as info:
        import_query(query, _ctx(), source="so.yaml", field_path="spec.triggers[0].metadata.query",
                     notes=[])
    message = str(info.value)
    assert message.startswith("so.yaml: spec.triggers[0].metadata.query: query ")
    assert why in message and "\n" not in message
