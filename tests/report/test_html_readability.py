"""The report reads at a glance: the summary table fits 1400 px, identical runs stay visible,
dots and SLO lines are labelled, sweep tooltips and Pareto headers name the parameters, and
the cursor shows values."""

import copy
import re
import shutil
import subprocess

import pytest

from gpuscale.report.html import SCRIPT, ReportInputs, render_html
from gpuscale.report.terminal import SUMMARY_COLUMNS, summary_cells

from .results import tiny_json

SWEEP = [
    {"run_id": "9f3a1c", "strategy": "keda-queue-depth",
     "set:strategies[keda-queue-depth].autoscaler.min_replica_count": m,
     "cost_usd": 10.0 * m, "slo_attainment": 0.5 + 0.1 * m} for m in (1, 2, 3)]


def _identical_runs() -> dict:
    data = tiny_json(series=False)
    twin = copy.deepcopy(data["runs"][0])
    twin["name"] = "fixed-1-copy"
    data["runs"].append(twin)
    return data


def test_summary_table_fits_a_1400_px_page():
    # 7 px a character at 12 px system-ui is generous; headers wrap (th max-width 90 px).
    data = tiny_json(series=False)
    data["runs"][0]["name"] = "keda-min0-on-gateway-queue"
    widths = []
    for i, (header, _) in enumerate(SUMMARY_COLUMNS):
        cells = [summary_cells(r)[i] for r in data["runs"]]
        widths.append(max(min(7 * len(header), 90), *(7 * len(c) for c in cells)) + 14)
    assert sum(widths) <= 1360 - 24
    html = render_html(ReportInputs(results=[data]))
    assert "max-width:1360px" in html and "th{white-space:normal" in html


def test_identical_runs_are_side_by_side_and_say_so():
    html = render_html(ReportInputs(results=[_identical_runs()]))
    chart = html[html.index('data-chart="cost_vs_slo"'):]
    chart = chart[:chart.index("</svg>")]
    xs = [float(x) for x in re.findall(r'<circle class="pt"[^>]*cx="([0-9.]+)"', chart)]
    assert len(xs) == 3 and len(set(xs)) == 3
    assert "fixed-1-copy (= fixed-1)" in chart and "fixed-1 (= fixed-1-copy)" in chart


def test_dots_and_slo_lines_are_labelled():
    html = render_html(ReportInputs(results=[tiny_json(series=True)]))
    chart = html[html.index('data-chart="cost_vs_slo"'):]
    chart = chart[:chart.index("</svg>")]
    for run in tiny_json(series=False)["runs"]:
        assert re.search(rf'<text class="pt-label"[^>]*>{re.escape(run["name"])}<', chart)
    assert "SLO target 99 %" in chart
    ttft = html[html.index('data-chart="ttft_p99"'):]
    assert '<text class="hline-label"' in ttft[:ttft.index("</svg>")]
    cdf = html[html.index('data-chart="cdf_ttft_s"'):]
    assert "SLO 2 s" in cdf[:cdf.index("</svg>")] or "SLO " in cdf[:cdf.index("</svg>")]


def test_sweep_tooltips_and_pareto_headers_name_the_parameters():
    html = render_html(ReportInputs(sweep_rows=SWEEP))
    assert "keda-queue-depth; keda-queue-depth min_replica_count=2" in html
    assert "<title>9f3a1c" not in html
    headers = re.findall(r"<th[^>]*>([^<]*)</th>", html)
    assert "keda-queue-depth min_replica_count" in headers
    assert not [h for h in headers if h.startswith("set:")]


def test_cursor_reads_values_back_from_the_paths():
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    value_at = SCRIPT[SCRIPT.index("function valueAt"):SCRIPT.index("function values")]
    code = value_at + ("var p={getAttribute:function(){return 'M10,100L20,50H30V80';}};"
                       "console.log(JSON.stringify([valueAt(p,25),valueAt(p,35),valueAt(p,5)]));")
    out = subprocess.run([node, "-e", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[50,80,null]"
