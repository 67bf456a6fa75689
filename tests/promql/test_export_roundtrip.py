"""`simulate --metrics-out` gives series a real Prometheus loads (promtool backfill), and
that Prometheus returns, for every KEDA poll and HPA sync in the decision log, the value the
controller recorded for its query at `start_time + eval_time_s`. Skipped without promtool
and prometheus (Debian's `prometheus` package, installed by .ci/run)."""

from __future__ import annotations

import json
import math
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gpuscale.cli import cli
from gpuscale.promql import Engine, openmetrics, query_json
from gpuscale.scenario import load_scenario
from gpuscale.units import epoch_ms

from .live_prometheus import PROMETHEUS, PROMTOOL, backfilled

pytestmark = pytest.mark.skipif(PROMTOOL is None or PROMETHEUS is None,
                                reason="promtool/prometheus not installed (apt-get install "
                                       "prometheus)")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SCENARIO = EXAMPLES / "promql-triggers" / "scenario.yaml"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("export")
    series, log = tmp / "series.om", tmp / "decisions.jsonl"
    result = CliRunner().invoke(cli, ["simulate", str(SCENARIO), "--metrics-out", str(series),
                                       "--decisions", str(log)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in log.read_text().splitlines()]
    return tmp, series, records


@pytest.fixture(scope="module")
def prometheus(run):
    tmp, series, _ = run
    with backfilled(series, tmp) as live:
        yield live


def _prometheus_value(data: dict) -> float | None:
    if data["resultType"] != "vector" or len(data["result"]) != 1:
        return None
    return float(data["result"][0]["value"][1])


def test_prometheus_returns_every_value_the_controllers_recorded(run, prometheus):
    _, _, records = run
    origin_s = epoch_ms(load_scenario(SCENARIO).start_time) / 1000
    polls = [(t["query"], t["eval_time_s"], t["value"]) for r in records
             if r["controller"] == "keda-operator" for t in r["inputs"]["triggers"]]
    syncs = [(m["metric"], m["eval_time_s"], m["value"]) for r in records
             if r["controller"] == "keda-hpa" for m in r["inputs"]["metrics"]]
    assert len(polls) > 150 and len(syncs) > 150
    assert sum(1 for *_, v in polls if v not in (None, 0.0)) > 50  # not vacuous
    checked = 0
    for query, eval_s, recorded in polls + syncs[::5]:
        got = _prometheus_value(prometheus.query(query, origin_s + eval_s))
        if recorded is None:  # not one series: nothing to compare but that
            assert got is None, (query, eval_s, got)
            continue
        recorded = float(recorded)  # the log writes NaN and Inf as strings
        assert got is not None, (query, eval_s)
        assert (math.isnan(got) and math.isnan(recorded)) or got == recorded, \
            (query, eval_s, got, recorded)
        checked += 1
    assert checked > 200


def test_series_read_back_from_prometheus_answer_the_same(run, prometheus):
    """The raw samples exported through the HTTP API (an instant query of a range selector,
    what a backtest reads from a real cluster) give the evaluator the same answers as the
    simulation's own store."""
    _, _, records = run
    origin_s = epoch_ms(load_scenario(SCENARIO).start_time) / 1000
    raw = {"data": prometheus.query('{__name__=~"vllm:num_requests_waiting|vllm:generation_'
                                    'tokens_total|llm:.*"}[30m]', origin_s + 1200)}
    engine = Engine(query_json.read(raw))
    polls = [(t["query"], t["eval_time_s"], t["value"]) for r in records
             if r["controller"] == "keda-operator" for t in r["inputs"]["triggers"]
             if t["name"] in ("queue", "tokens")]
    assert len(polls) > 100
    for query, eval_s, recorded in polls:
        rows = engine.instant(query, round((origin_s + eval_s) * 1000)).rows()
        assert (rows[0][1] if len(rows) == 1 else None) == recorded, (query, eval_s)


def test_the_export_reads_back_into_the_same_series(run):
    _, series, _ = run
    store = openmetrics.read(series.read_text())
    assert "vllm:time_to_first_token_seconds_bucket" in store.families
    assert "llm:queue_depth" in store.families
    les = {dict(ls).get("le") for ls in store.families[
        "vllm:time_to_first_token_seconds_bucket"].labels}
    assert {"0.001", "2560.0", "+Inf"} <= les


def _queries_in(node, out: list[str]) -> None:
    """Every PromQL string under a `query:` or `expr:` key."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("query", "expr") and isinstance(value, str):
                out.append(value)
            else:
                _queries_in(value, out)
    elif isinstance(node, list):
        for value in node:
            _queries_in(value, out)


def example_queries() -> list[str]:
    out: list[str] = []
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            _queries_in(doc, out)
    return sorted(set(out))


@pytest.mark.slow
def test_every_query_in_examples_agrees_with_prometheus(run, prometheus):
    """Each query the examples write, at times across the run, over the exported series:
    the evaluator and Prometheus return the same series and values."""
    _, series, _ = run
    queries = example_queries()
    assert len(queries) >= 5 and any("histogram_quantile" in q for q in queries)
    engine = Engine(openmetrics.read(series.read_text()))
    origin_s = epoch_ms(load_scenario(SCENARIO).start_time) / 1000
    for query in queries:
        for offset_s in (60, 237.5, 300, 451, 600, 900, 1140):
            t_s = origin_s + offset_s
            data = prometheus.query(query, t_s)
            want = {tuple(sorted(r["metric"].items())): float(r["value"][1])
                    for r in data["result"]} if data["resultType"] == "vector" else {
                (): float(data["result"][1])}
            got = dict(engine.instant(query, round(t_s * 1000)).rows())
            assert set(got) == set(want), (query, offset_s)
            for labels, value in want.items():
                assert value == got[labels] or (math.isnan(value) and math.isnan(got[labels])),\
                    (query, offset_s, labels, value, got[labels])


LLM_D = EXAMPLES / "llm-d-keda"
QUEUE_GUARD = LLM_D / "upstream" / "keda-epp-queue-guard.scaledobject.yaml"
START = "2026-05-04T09:30:00Z"


@pytest.fixture(scope="module")
def formula_run(tmp_path_factory):
    """llm-d's queue-guard blueprint (four PromQL triggers combined by a scalingModifiers
    formula), run from its manifests with the series exported."""
    tmp = tmp_path_factory.mktemp("formula")
    series, log = tmp / "series.om", tmp / "decisions.jsonl"
    result = CliRunner().invoke(cli, [
        "simulate", "--manifests", str(LLM_D / "queue-guard"), "--trace",
        str(EXAMPLES / "keda-scaling-modifiers" / "trace.csv"), "--catalog",
        str(LLM_D / "catalog.yaml"), "--metrics-out", str(series), "--decisions", str(log),
        "--start-time", START], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    polls = [r["inputs"] for line in log.read_text().splitlines()
             if (r := json.loads(line))["controller"] == "keda-operator"]
    return tmp, series, polls


def test_a_formulas_inputs_and_value_follow_from_what_prometheus_returns(formula_run):
    """Through the manifests path: every trigger value of every poll is Prometheus' answer
    over the export at `start-time + eval_time_s`, and the formula's logged value is the
    formula over those answers as KEDA hands them on (three decimals, nulls as 0, the
    composite truncated to milli-units)."""
    from gpuscale.autoscaling.formula import Formula
    from gpuscale.autoscaling.keda_runtime import metric_value, truncated_milli

    tmp, series, polls = formula_run
    modifiers = yaml.safe_load(QUEUE_GUARD.read_text())["spec"]["advanced"]["scalingModifiers"]
    names = [t["name"] for t in polls[0]["triggers"]]
    formula = Formula.compile(modifiers["formula"], names)
    origin_s = epoch_ms(datetime.fromisoformat(START.replace("Z", "+00:00"))) / 1000
    assert len(polls) > 100 and any(p["formula"]["value"] > 1 for p in polls)  # it scaled
    with backfilled(series, tmp) as live:
        for poll in polls:
            answers = {}
            for trigger in poll["triggers"]:
                got = _prometheus_value(live.query(trigger["query"],
                                                   origin_s + trigger["eval_time_s"]))
                assert got == trigger["value"], (trigger, got)
                answers[trigger["name"]] = metric_value(got if got is not None else 0.0)
            expected = formula.evaluate(answers)
            assert expected is not None and truncated_milli(expected) == \
                poll["formula"]["value"], (poll, answers)
