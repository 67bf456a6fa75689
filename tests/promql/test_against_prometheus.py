"""The evaluator agrees with Prometheus (promtool test rules) on hand-picked queries: the
shapes autoscalers issue, and the corner cases of lookback, staleness, counter resets,
extrapolation, vector matching and errors. Skipped without promtool (Debian's `prometheus`
package, installed by .ci/run)."""

from __future__ import annotations

import pytest

from .oracle import GAP, PROMTOOL, STALE, InputSeries, mismatches, ours, prometheus, store_of

pytestmark = pytest.mark.skipif(PROMTOOL is None,
                                reason="promtool not installed (apt-get install prometheus)")

INTERVAL_MS = 15_000
SERIES = [
    InputSeries("req_total", {"pod": "a", "job": "vllm"},
                (0, 3, 7, 12, 2, 5, 9, GAP, 20, 24, 30, 31, 31, 40, 0, 6)),
    InputSeries("req_total", {"pod": "b", "job": "vllm"},
                (5, 5, 6, 10, 11, 17, 20, 22, 23, 23, 25, 30, 33, 34, 40, 41)),
    InputSeries("waiting", {"pod": "a", "job": "vllm", "model_name": "m"},
                (1, 4, 0, 2, 9, STALE, GAP, GAP, 3, 1, 0.5, 7, 2, 2, 2, 8)),
    InputSeries("waiting", {"pod": "b", "job": "vllm", "model_name": "m"},
                (0, 0, 1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 3, 2, 1)),
    InputSeries("waiting", {"pod": "c", "job": "other", "model_name": "n"},
                (2, GAP, GAP, GAP, GAP, GAP, GAP, GAP, GAP, GAP, GAP, GAP, GAP, GAP, GAP, 4)),
    InputSeries("kv", {"pod": "a", "model_name": "m"},
                (0.1, 0.2, 0.35, 0.5, 0.75, 0.9, 0.95, 1, 0.8, 0.6, 0.4, 0.2, 0.1, 0.05, 0, 0)),
    InputSeries("kv", {"pod": "b", "model_name": "m"},
                (0.3, 0.3, 0.3, 0.31, 0.29, 0.4, 0.5, 0.6, 0.6, 0.7, 0.7, 0.8, 0.9, 0.9, 1, 1)),
    InputSeries("pod_info", {"pod": "a", "node": "n1"}, (1,) * 16),
    InputSeries("pod_info", {"pod": "b", "node": "n2"}, (1,) * 16),
]
for pod, scale in (("a", 1), ("b", 3)):
    for bound, share in (("0.1", 0.2), ("0.5", 0.6), ("1", 0.9), ("+Inf", 1.0)):
        SERIES.append(InputSeries("ttft_bucket", {"pod": pod, "le": bound},
                                  tuple(round(k * 10 * scale * share) for k in range(16))))

QUERIES = [
    "waiting", "sum(waiting)", "avg(waiting)", "max(waiting)", "min(waiting)", "count(waiting)",
    "sum by (job) (waiting)", "sum without (pod) (waiting)", "group by (model_name) (waiting)",
    "stddev(waiting)", "stdvar(kv)", "quantile(0.9, waiting)", "topk(1, waiting{job=\"vllm\"})",
    "bottomk(1, kv)", "count_values(\"v\", kv)",
    "waiting{job=\"vllm\"}", "waiting{job!=\"vllm\"}", "waiting{pod=~\"a|b\"}",
    "waiting{pod!~\"a\"}", "{__name__=~\"wait.*\", pod=\"b\"}", "waiting offset 1m",
    "rate(req_total[1m])", "rate(req_total[2m])", "increase(req_total[45s])",
    "irate(req_total[1m])", "delta(kv[1m])", "idelta(kv[2m])", "deriv(kv[2m])",
    "predict_linear(kv[2m], 60)", "resets(req_total[4m])", "changes(waiting[4m])",
    "sum(rate(req_total[1m]))", "rate(req_total[1m] offset 30s)",
    "avg_over_time(kv[1m])", "sum_over_time(waiting[2m])", "max_over_time(waiting[2m])",
    "min_over_time(waiting[2m])", "count_over_time(waiting[2m])", "last_over_time(waiting[2m])",
    "present_over_time(waiting[1m])", "stddev_over_time(kv[2m])", "stdvar_over_time(kv[2m])",
    "quantile_over_time(0.5, waiting[2m])", "absent_over_time(nothing[1m])",
    "absent(nothing{a=\"b\"})", "absent(waiting)",
    "histogram_quantile(0.9, sum by (le) (rate(ttft_bucket[1m])))",
    "histogram_quantile(0.5, rate(ttft_bucket[2m]))",
    "histogram_quantile(0.99, sum by (le) (increase(ttft_bucket[1m])))",
    "waiting / on(pod) group_left(node) pod_info", "pod_info * on(pod) group_right waiting",
    "waiting + ignoring(job, model_name) pod_info", "waiting / kv",
    "sum by (pod) (waiting) / sum by (pod) (kv)", "waiting > 2", "waiting > bool 2",
    "2 < waiting", "waiting == bool kv", "waiting and kv", "waiting or pod_info",
    "waiting unless on(pod) kv", "kv or on(pod) waiting", "waiting % 3", "waiting ^ 2",
    "-waiting", "1 - kv", "clamp_max(waiting, 3)", "clamp_min(kv, 0.5)", "clamp(waiting, 1, 4)",
    "clamp(waiting, 4, 1)", "abs(-waiting)", "ceil(kv * 3)", "floor(kv * 3)", "round(kv, 0.25)",
    "sgn(waiting - 2)", "scalar(sum(waiting))", "scalar(waiting)", "vector(3)",
    "sum(waiting) / scalar(count(pod_info))", "time()", "timestamp(waiting)",
    "label_replace(waiting, \"node\", \"$1-x\", \"pod\", \"(.*)\")",
    "label_replace(waiting, \"pod\", \"\", \"pod\", \"a\")",
    "label_join(waiting, \"pj\", \"/\", \"pod\", \"job\")",
    "max_over_time(sum(waiting)[2m:30s])", "avg_over_time(rate(req_total[1m])[2m:])",
    "max_over_time(waiting[2m:15s] offset 30s)", "sum(waiting) or vector(0)",
    "avg_over_time(clamp_max(sum(waiting) / 2, 3)[1m:15s])",
    "waiting / on(pod) waiting", "waiting * on() group_left vector(2)",
    "pod_info / on(node) waiting", "waiting + on(model_name) kv",
    "sum(kv) by (model_name) / on(model_name) group_left count(kv) by (model_name)",
]
TIMES_MS = [0, 60_000, 75_000, 90_000, 150_000, 225_000]
# Go's math library and numpy may differ in the last bit of exp/log/trig, and Prometheus sums
# a subquery's series in map order: those compare to 1e-12.
APPROX = ("predict_linear", "deriv", "[", "stddev", "stdvar", "^")


def test_hand_picked_queries_agree_with_prometheus(tmp_path):
    queries = [(q, t) for q in QUERIES for t in TIMES_MS]
    expected = prometheus(SERIES, queries, INTERVAL_MS, tmp_path)
    got = ours(store_of(SERIES, INTERVAL_MS), queries)
    exact = [i for i, (q, _) in enumerate(queries) if not any(a in q for a in APPROX)]
    approx = [i for i in range(len(queries)) if i not in exact]
    problems = mismatches([expected[i] for i in exact], [got[i] for i in exact],
                          [queries[i] for i in exact])
    problems += mismatches([expected[i] for i in approx], [got[i] for i in approx],
                           [queries[i] for i in approx], rel=1e-12)
    assert not problems, "\n".join(problems[:40])


def test_oracle_sees_a_difference(tmp_path):
    """The harness itself can fail: a wrong expectation is reported."""
    queries = [("sum(waiting)", 60_000)]
    expected = prometheus(SERIES, queries, INTERVAL_MS, tmp_path)
    wrong = [{(): 1e9}]
    assert mismatches(expected, wrong, queries)
