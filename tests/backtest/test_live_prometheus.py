"""The export as a user makes it: a run's `--metrics-out` backfilled into a real Prometheus
(promtool), the queries of docs/backtest.md sent to its `/api/v1/query_range`, the answers
saved in one file as the page's `curl` lines save them, and that file backtested. Prometheus
answers what `range_response` makes in Python for the same queries (the same rebuilt
traffic, byte for byte, so the round trip's figures over that JSON, test_roundtrip.py, hold
for the real API's), and every signal the page's queries select is read. Skipped without
promtool and prometheus."""

from __future__ import annotations

import json

import pytest

from ..promql.live_prometheus import PROMETHEUS, PROMTOOL, backfilled
from . import roundtrip as rt

pytestmark = pytest.mark.skipif(PROMTOOL is None or PROMETHEUS is None,
                                reason="promtool/prometheus not installed (apt-get install "
                                       "prometheus)")
STEP_S = 15


def test_prometheus_answers_the_pages_queries_as_the_backtest_reads_them(tmp_path):
    trace = rt.write_trace(tmp_path / "t.csv", "step", 5, 0.5, 5.0, minutes=15)
    history = tmp_path / "history.om"
    run = rt.simulate(rt.EXAMPLE / "manifests", trace, history, 5)["runs"][0]
    made = rt.as_query_range(history, tmp_path / "made.json", rt.EXAMPLE / "manifests")
    start_s, end_s = rt.export_span_s(history)
    with backfilled(history, tmp_path) as prometheus:
        answers = {name: prometheus.query_range(query, start_s, end_s, STEP_S)
                   for name, query in rt.doc_queries().items()}
    assert all(answers[name]["data"]["result"] for name in answers), answers
    exported = tmp_path / "history.json"
    exported.write_text(json.dumps(answers))
    traces, runs = {}, {}
    for name, path in (("prometheus", exported), ("made", made)):
        traces[name] = tmp_path / f"{name}.csv"
        runs[name] = rt.backtest([rt.EXAMPLE / "manifests"], path, 5, "--emit-trace",
                                 str(traces[name]))
    assert traces["prometheus"].read_bytes() == traces["made"].read_bytes()
    assert rt.figures(run, runs["prometheus"]) == rt.figures(run, runs["made"])
    signals = runs["prometheus"]["backtest"]["history"]["signals"]
    assert all(signals.values()), signals  # every signal found
    assert signals == runs["made"]["backtest"]["history"]["signals"]
    assert signals["ready"].startswith("sum(kube_deployment_status_replicas_ready")
