import math
import xml.etree.ElementTree as ET

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gpuscale.report.charts import Chart, Line, pareto_front, timeline_charts
from gpuscale.report.svg import _path_d, nice_ticks, render_svg, thin
from gpuscale.report.timeline import run_views

from .results import tiny_json

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


@given(finite, st.floats(min_value=1e-3, max_value=1e6))
def test_nice_ticks_cover_the_range_with_round_steps(lo, width):
    hi = lo + width
    ticks = nice_ticks(lo, hi)
    assert 2 <= len(ticks) <= 12
    assert all(lo - 1e-6 * width <= t <= hi + 1e-6 * width for t in ticks)
    step = ticks[1] - ticks[0]
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert min(abs(mantissa - m) for m in (1, 2, 5, 10)) < 1e-4  # float noise at large offsets
    assert ticks[0] - lo < step * (1 + 1e-9) and hi - ticks[-1] < step * (1 + 1e-9)


@given(st.lists(st.floats(min_value=-1e3, max_value=1e3), min_size=1, max_size=5000))
def test_thin_bounds_points_and_keeps_the_extremes(values):
    y = np.array(values)
    x = np.arange(len(y), dtype=float)
    tx, ty = thin(x, y, max_points=200)
    assert len(tx) <= max(len(y) if len(y) <= 200 else 200, 1)
    assert ty.max() == y.max() and ty.min() == y.min()
    assert np.all(np.diff(tx) > 0)  # time order kept


def test_path_breaks_at_nan_and_counts_points():
    d, drawn = _path_d(np.array([0.0, 1, 2, 3, 4]), np.array([1.0, np.nan, 2, 3, 4]), step=False)
    assert drawn == 4 and d.count("M") == 2 and d.count("L") == 2
    d, drawn = _path_d(np.array([0.0, 1, 2]), np.array([1.0, 1.0, 2.0]), step=True)
    assert d == "M0.0,1.0H1.0H2.0V2.0" and drawn == 3


@st.composite
def point_sets(draw):
    n = draw(st.integers(min_value=1, max_value=40))
    costs = draw(st.lists(st.integers(0, 20), min_size=n, max_size=n))
    slos = draw(st.lists(st.integers(0, 10), min_size=n, max_size=n))
    return [(float(c), s / 10) for c, s in zip(costs, slos, strict=True)]


def _dominates(a, b):
    return a[0] <= b[0] and a[1] >= b[1] and a != b


@given(point_sets())
def test_pareto_front_is_exactly_the_undominated_points(points):
    front = pareto_front(points)
    chosen = [points[i] for i in front]
    for p in chosen:  # nothing beats a frontier point
        assert not any(_dominates(q, p) for q in points)
    for i, p in enumerate(points):  # every other point is matched or beaten by the frontier
        if i not in front:
            assert any(q[0] <= p[0] and q[1] >= p[1] for q in chosen)
    assert [p[0] for p in chosen] == sorted(p[0] for p in chosen)
    assert len({p[0] for p in chosen}) == len(chosen)


def test_timelines_share_one_time_axis_and_draw_every_run():
    views = run_views(tiny_json())
    charts = timeline_charts(views)
    assert {c.x_range for c in charts} == {charts[0].x_range}
    for chart in charts:
        groups = {line.group for line in chart.lines if line.group}
        assert groups == {v.name for v in views}, chart.chart_id
    replicas = next(c for c in charts if c.chart_id == "replicas")
    assert replicas.markers  # keda scaled up


def test_svg_has_one_series_element_per_line_and_no_url_inline():
    chart = Chart("t", "T", "x", "y", (
        Line("a", np.arange(10.0), np.arange(10.0), "#000"),
        Line("b", np.arange(10.0), np.arange(10.0) ** 2, "#111", dash=True, step=True),
        Line("c", np.array([1.0, 2.0]), np.array([3.0, 4.0]), "#222", points=True)))
    inline = render_svg(chart)
    assert "://" not in inline
    root = ET.fromstring(render_svg(chart, standalone=True).split("\n", 1)[1])
    ns = "{http://www.w3.org/2000/svg}"
    paths = root.findall(f".//{ns}path[@class='series']")
    assert [int(p.get("data-n")) for p in paths] == [10, 10]
    assert len(root.findall(f".//{ns}circle[@class='pt']")) == 2


def test_cost_chart_draws_the_oracle_bound_below_every_completing_run():
    from gpuscale.report.charts import cost_slo_chart

    views = run_views(tiny_json())
    chart = cost_slo_chart(views)
    (bound, _), = chart.vlines
    for view in views:
        s = view.summary
        assert bound <= s["oracle_gpu_hours"] * s["cost_usd"] / s["gpu_hours"] + 1e-12
        if s["requests"]["dropped"] == 0 and s["requests"]["in_flight"] == 0:
            assert bound <= s["cost_usd"]
    assert 'class="vline"' in render_svg(chart)
