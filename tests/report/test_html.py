import re
from html.parser import HTMLParser

from gpuscale.report.html import ReportInputs, render_html, report_charts

from .results import tiny_json

# Anything that could make a browser fetch: URLs with a scheme, protocol-relative URLs,
# src/href attributes, CSS url()/@import, <link>, and imports in scripts.
NETWORK = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://|[\"'(]//[a-z0-9]|\bsrc\s*=|\bhref\s*=|"
                     r"url\s*\(|@import|<link\b|\bimport\s*\(|fetch\s*\(|XMLHttpRequest)")

SWEEP_ROWS = [
    {"run_id": "a", "strategy": "s", "set:seed": 1, "cost_usd": 1.0, "slo_attainment": 0.5},
    {"run_id": "b", "strategy": "s", "set:seed": 2, "cost_usd": 2.0, "slo_attainment": 0.9},
    {"run_id": "c", "strategy": "s", "set:seed": 3, "cost_usd": 3.0, "slo_attainment": 0.8},
]


class ChartCounter(HTMLParser):
    """Per chart (svg.chart), how many drawn series elements and points it holds."""

    def __init__(self) -> None:
        super().__init__()
        self.charts: dict[str, dict] = {}
        self.current: str | None = None
        self.root_attrs: dict = {}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "html":
            self.root_attrs = attrs
        if tag == "svg" and "chart" in (attrs.get("class") or "").split():
            self.current = attrs["data-chart"]
            self.charts[self.current] = {"paths": 0, "points": 0}
        elif self.current and tag == "path" and attrs.get("class") == "series":
            self.charts[self.current]["paths"] += 1
            self.charts[self.current]["points"] += int(attrs["data-n"])
        elif self.current and tag == "circle" and attrs.get("class") == "pt":
            self.charts[self.current]["points"] += 1

    def handle_endtag(self, tag):
        if tag == "svg":
            self.current = None


def count_charts(html: str) -> ChartCounter:
    counter = ChartCounter()
    counter.feed(html)
    return counter


def full_inputs() -> ReportInputs:
    return ReportInputs(results=[tiny_json()], sweep_rows=SWEEP_ROWS, title="test")


def test_every_chart_is_on_the_page_with_data():
    inputs = full_inputs()
    html = render_html(inputs)
    counted = count_charts(html).charts
    expected = {c.chart_id for c in report_charts(inputs)}
    assert set(counted) == expected
    assert {"cost_vs_slo", "replicas", "nodes", "queue", "ttft_p99", "cdf_ttft_s", "cdf_tpot_s",
            "pareto", "cost", "gpus", "pending", "kv_cache"} <= expected
    for chart_id, counts in counted.items():
        assert counts["points"] >= 2, chart_id


def test_the_page_has_no_network_reference():
    html = render_html(full_inputs())
    assert not NETWORK.findall(html)


def test_the_network_scan_would_catch_a_reference():
    for bad in ('<img src="x.png">', "<script>fetch('/x')</script>", "a https://cdn.x/y",
                "<style>@import 'x.css'</style>", '<a href="//cdn.example/x">'):
        assert NETWORK.search(bad), bad


def test_same_inputs_give_the_same_bytes():
    assert render_html(full_inputs()) == render_html(full_inputs())


def test_results_without_series_still_give_a_summary_and_say_what_is_missing():
    html = render_html(ReportInputs(results=[tiny_json(series=False)]))
    assert set(count_charts(html).charts) == {"cost_vs_slo"}
    assert "--series" in html and "fixed-1" in html


def test_two_results_keep_runs_apart():
    first, second = tiny_json(), tiny_json()
    second["scenario"] = "other"
    charts = report_charts(ReportInputs(results=[first, second]))
    replicas = next(c for c in charts if c.chart_id == "replicas")
    assert {line.group for line in replicas.lines} == {
        "tiny-burst/fixed-1",
        "tiny-burst/keda-queue",
        "other/fixed-1",
        "other/keda-queue",
    }


def test_pareto_table_lists_only_the_frontier():
    html = render_html(ReportInputs(sweep_rows=SWEEP_ROWS))
    table = html[html.index("Pareto frontier (no other"):]
    # Rows by the settings that differ (seed 1 and 2), numbered as the chart numbers its
    # points; not by run id, a hash that says nothing to a reader (issue 30).
    assert ">#1<" in table and ">#2<" in table and ">#3<" not in table
    assert "<td>1</td>" in table and "<td>2</td>" in table and "<td>3</td>" not in table
    assert ">a<" not in table
    chart = html[html.index('id="pareto"') if 'id="pareto"' in html else 0:]
    assert 'class="pt-label"' in chart and ">#1</text>" in chart
