import xml.etree.ElementTree as ET

import pytest

from gpuscale.errors import UserInputError
from gpuscale.report.export import export_charts
from gpuscale.report.html import report_charts

from .test_html import full_inputs


def test_svg_export_writes_one_valid_file_per_chart(tmp_path):
    charts = report_charts(full_inputs())
    written = export_charts(charts, tmp_path / "charts", "svg")
    assert sorted(p.stem for p in written) == sorted(c.chart_id for c in charts)
    for path in written:
        root = ET.fromstring(path.read_text().split("\n", 1)[1])
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        assert root.findall(".//{http://www.w3.org/2000/svg}path") or \
            root.findall(".//{http://www.w3.org/2000/svg}circle")


def test_png_export_is_a_png_and_deterministic(tmp_path):
    pytest.importorskip("matplotlib")
    charts = [c for c in report_charts(full_inputs()) if c.chart_id in ("replicas", "cdf_ttft_s")]
    first = export_charts(charts, tmp_path / "a", "png")
    second = export_charts(charts, tmp_path / "b", "png")
    for a, b in zip(first, second, strict=True):
        data = a.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5_000
        assert data == b.read_bytes()


def test_unknown_format_is_a_user_error(tmp_path):
    with pytest.raises(UserInputError, match="pdf"):
        export_charts([], tmp_path / "c", "pdf")
