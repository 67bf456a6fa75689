"""Open generated reports in headless Chromium: charts render with data, no console output."""

import pytest

from gpuscale.report.html import render_html, report_charts

from .browser import ARTIFACTS, load_page, screenshot
from .test_html import count_charts, full_inputs


@pytest.mark.slow
def test_report_renders_in_chromium_with_data_in_every_chart(tmp_path):
    inputs = full_inputs()
    page = tmp_path / "report.html"
    page.write_text(render_html(inputs))
    dom, console = load_page(page, tmp_path)
    assert console == []
    counter = count_charts(dom)
    expected = {c.chart_id for c in report_charts(inputs)}
    assert set(counter.charts) == expected
    for chart_id, counts in counter.charts.items():
        assert counts["points"] >= 2, chart_id
    # The page's script ran to the end and saw every chart and drawn element.
    assert counter.root_attrs.get("data-rendered") == str(len(expected))
    drawn = sum(c["paths"] for c in counter.charts.values()) + dom.count('class="pt"')
    assert int(counter.root_attrs["data-drawn"]) == drawn
    shot = screenshot(page, ARTIFACTS / "report.png", tmp_path, height=5200)
    assert shot.stat().st_size > 10_000


def test_console_errors_are_caught(tmp_path):
    """The harness is not blind: a page that throws shows up as a console line."""
    page = tmp_path / "bad.html"
    page.write_text(
        "<!DOCTYPE html><html><body><script>throw new Error('boom')</script></body></html>"
    )
    _, console = load_page(page, tmp_path)
    assert any("boom" in line for line in console)
