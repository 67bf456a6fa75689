"""One self-contained HTML report: summary table, aligned timelines, CDFs, cost vs SLO, Pareto.

Everything is inline (SVG charts, CSS, a few lines of JavaScript for run toggles and a shared
time cursor): the file opens offline, from a ticket or an air-gapped laptop, and contains no
URL at all. Output is deterministic: the same inputs give the same bytes (no timestamp).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

from gpuscale import __version__
from gpuscale.report.charts import (
    Chart,
    cdf_charts,
    cost_slo_chart,
    param_label,
    pareto_chart,
    pareto_front,
    run_colours,
    timeline_charts,
)
from gpuscale.report.svg import HEIGHT, render_svg
from gpuscale.report.terminal import SUMMARY_COLUMNS, summary_cells
from gpuscale.report.timeline import RunView, run_views

CSS = """
body{font-family:system-ui,sans-serif;margin:24px auto;max-width:1360px;padding:0 12px;\
color:#111;background:#fafafa}
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:12px;margin:8px 0;display:block;overflow-x:auto}
th,td{padding:3px 7px;border-bottom:1px solid #e5e5e5;white-space:nowrap}
th{white-space:normal;vertical-align:bottom;max-width:90px;overflow-wrap:anywhere}
td.r,th.r{text-align:right}.note{color:#555;font-size:13px}
figure{margin:10px 0;background:#fff;border:1px solid #e5e5e5}
svg.chart{display:block;width:100%;height:auto}
.runs label{margin-right:14px;font-size:13px}\
.swatch{display:inline-block;width:10px;height:10px;margin:0 4px}
"""

# Toggles hide one run's lines in every chart; the cursor follows the mouse across all
# timelines at once, so "queue built at minute 11, nodes ready at minute 16" reads off directly.
SCRIPT = """
(function(){
  var charts=document.querySelectorAll('svg.chart');
  document.querySelectorAll('input.run-toggle').forEach(function(box){
    box.addEventListener('change',function(){
      document.querySelectorAll('[data-group]').forEach(function(el){
        if(el.getAttribute('data-group')===box.getAttribute('data-run')){el.style.display=box.checked?'':'none';}
      });
    });
  });
  var timelines=Array.prototype.filter.call(charts,function(s){
    return s.getAttribute('data-timeline')==='1';
  });
  // The value of each drawn series at the cursor, read back from its path (pixels -> data
  // with the chart's own y range), so the cursor says "run A 4, run B 7" and not only the time.
  function valueAt(path,px){
    var d=path.getAttribute('d')||'',re=/([MLHV])([-0-9.]+)(?:,([-0-9.]+))?/g,
      m,x=null,y=null,best=null;
    while((m=re.exec(d))){
      if(m[1]==='M'||m[1]==='L'){x=+m[2];y=+m[3];}else if(m[1]==='H'){x=+m[2];}else{y=+m[2];}
      if(x!==null&&x<=px){best=y;}
    }
    return best;
  }
  function values(s,px){
    var y0=+s.getAttribute('data-y0'),y1=+s.getAttribute('data-y1');
    var p0=+s.getAttribute('data-py0'),p1=+s.getAttribute('data-py1'),out=[];
    s.querySelectorAll('path.series').forEach(function(path){
      if(path.style.display==='none'){return;}
      var py=valueAt(path,px);if(py===null){return;}
      var v=y0+(py-p0)/(p1-p0)*(y1-y0),t=path.querySelector('title');
      out.push((t?t.textContent:'')+(path.getAttribute('stroke-dasharray')?' (dashed)':'')+' '+
        (Math.abs(v)>=100?v.toFixed(0):v.toPrecision(3)));
    });
    return out.join(', ');
  }
  function place(px){
    var s0=timelines[0];if(!s0){return;}
    var a=+s0.getAttribute('data-px0'),b=+s0.getAttribute('data-px1');
    var x0=+s0.getAttribute('data-x0'),x1=+s0.getAttribute('data-x1');
    var inside=px>=a&&px<=b;var t=x0+(px-a)/(b-a)*(x1-x0);
    timelines.forEach(function(s){
      var c=s.querySelector('.cursor'),l=s.querySelector('.cursor-label');
      c.setAttribute('x1',px);c.setAttribute('x2',px);c.style.display=inside?'':'none';
      var right=px>(a+b)/2;  // keep the label inside the chart on the right half
      l.setAttribute('x',right?px-4:px+4);l.setAttribute('text-anchor',right?'end':'start');
      l.textContent=inside?('t = '+t.toFixed(1)+' min: '+values(s,px)):'';
    });
  }
  timelines.forEach(function(s){
    s.addEventListener('mousemove',function(ev){
      var r=s.getBoundingClientRect();var vb=s.viewBox.baseVal;
      place((ev.clientX-r.left)*vb.width/r.width);
    });
    s.addEventListener('mouseleave',function(){place(-1);});
  });
  var drawn=document.querySelectorAll('svg.chart .series, svg.chart .pt').length;
  document.documentElement.setAttribute('data-rendered',String(charts.length));
  document.documentElement.setAttribute('data-drawn',String(drawn));
})();
"""


@dataclass
class ExtraSection:
    """A command's own section after the summary (a backtest's agreement): lines, charts."""

    title: str
    lines: list[str]
    charts: list[Chart]


@dataclass
class ReportInputs:
    """What one report draws: result JSONs (with or without series), sweep rows and the
    command's own sections."""

    results: list[dict] = field(default_factory=list)
    sweep_rows: list[dict] = field(default_factory=list)
    title: str = "gpuscale report"
    sections: list[ExtraSection] = field(default_factory=list)


def all_views(inputs: ReportInputs) -> list[RunView]:
    views = []
    many = len(inputs.results) > 1
    for data in inputs.results:
        for view in run_views(data):
            if many:  # runs of different results may share a strategy name
                view.name = f"{view.scenario}/{view.name}"
            views.append(view)
    return views


def report_charts(inputs: ReportInputs) -> list[Chart]:
    """Every chart of the report, in page order (also what `--charts-dir` exports)."""
    views = all_views(inputs)
    charts: list[Chart] = []
    from gpuscale.metrics.oracle import SLO_ATTAINMENT_TARGET

    summary_chart = cost_slo_chart(views, SLO_ATTAINMENT_TARGET)
    if summary_chart is not None:
        charts.append(summary_chart)
    charts += timeline_charts(views)
    charts += cdf_charts(views)
    pareto = pareto_chart(inputs.sweep_rows)
    if pareto is not None:
        charts.append(pareto)
    return charts


def _figure(chart: Chart) -> str:
    svg = render_svg(chart)
    if chart.timeline:  # the cursor, drawn hidden, moved by the script
        cursor = (f'<line class="cursor" x1="0" x2="0" y1="46" y2="{HEIGHT - 38}" stroke="#333" '
                  f'stroke-width="1" style="display:none"/><text class="cursor-label" x="0" y="58" '
                  f'font-size="11" fill="#333"></text></svg>')
        svg = svg[: -len("</svg>")] + cursor
    return f'<figure id="chart-{escape(chart.chart_id, quote=True)}">{svg}</figure>'


def _summary_html(results: list[dict]) -> str:
    head = "".join(f'<th class="{"r" if j == "right" else ""}">{escape(h)}</th>'
                   for h, j in SUMMARY_COLUMNS)
    out = []
    for data in results:
        rows = []
        for run in data.get("runs", []):
            cells = summary_cells(run)
            rows.append("<tr>" + "".join(
                f'<td class="{"r" if j == "right" else ""}">{escape(c)}</td>'
                for c, (_, j) in zip(cells, SUMMARY_COLUMNS, strict=True)) + "</tr>")
        out.append(
            f'<p class="note">{escape(str(data.get("scenario", "")))}, seed '
            f"{escape(str(data.get('seed', '')))}</p><table><tr>{head}</tr>{''.join(rows)}</table>"
        )
    return "".join(out)


def _pareto_table(rows: list[dict]) -> str:
    usable = [
        r for r in rows if r.get("cost_usd") is not None and r.get("slo_attainment") is not None
    ]
    front = pareto_front([(float(r["cost_usd"]), float(r["slo_attainment"])) for r in usable])
    if not front:
        return ""
    params = [k for k in usable[0] if k.startswith("set:")]
    # Readable headers (`keda-queue-depth min_replica_count`), the full key as a tooltip.
    head = "".join(f"<th>{escape(h)}</th>" for h in ["#", "strategy"]) + "".join(
        f'<th title="{escape(p, quote=True)}">{escape(param_label(p))}</th>' for p in params) + \
        '<th class="r">cost $</th><th class="r">SLO met</th>'
    body = []
    for number, i in enumerate(front, start=1):  # the numbers the chart writes by each point
        row = usable[i]
        cells = [f"#{number}", row.get("strategy", ""), *[row.get(p, "") for p in params]]
        body.append("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in cells) +
                    f'<td class="r">{float(row["cost_usd"]):.2f}</td>'
                    f'<td class="r">{100 * float(row["slo_attainment"]):.1f}%</td></tr>')
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def render_html(inputs: ReportInputs) -> str:
    views = all_views(inputs)
    charts = report_charts(inputs)
    by_id = {c.chart_id: c for c in charts}
    colours = run_colours([v.name for v in views if v.has_series])
    toggles = "".join(
        f'<label><input type="checkbox" class="run-toggle" '
        f'data-run="{escape(n, quote=True)}" checked>'
        f'<span class="swatch" style="background:{c}"></span>{escape(n)}</label>'
        for n, c in colours.items()
    )
    parts = [f"<h1>{escape(inputs.title)}</h1>"]
    if inputs.results:
        parts.append("<h2>Summary</h2>" + _summary_html(inputs.results))
    if "cost_vs_slo" in by_id:
        parts.append(_figure(by_id["cost_vs_slo"]))
    for section in inputs.sections:
        notes = "".join(f'<p class="note">{escape(line)}</p>' for line in section.lines)
        parts.append(f"<h2>{escape(section.title)}</h2>{notes}"
                     + "".join(_figure(c) for c in section.charts))
    timelines = [c for c in charts if c.timeline]
    if timelines:
        parts.append(
            f'<h2>Timelines</h2><div class="runs">{toggles}</div>'
            '<p class="note">Markers on the replicas chart: green = scale up, orange = '
            "scale down, red = eviction. Move the mouse over a chart for a shared cursor.</p>"
        )
        parts += [_figure(c) for c in timelines]
    elif views:
        parts.append(
            '<p class="note">These results carry no time series: rerun with '
            "<code>--series</code> or <code>--report</code> to get timelines and CDFs.</p>"
        )
    cdfs = [c for c in charts if c.chart_id.startswith("cdf_")]
    if cdfs:
        parts.append("<h2>Latency CDFs</h2>" + "".join(_figure(c) for c in cdfs))
    if "pareto" in by_id:
        parts.append(
            "<h2>Sweep</h2>"
            + _figure(by_id["pareto"])
            + '<p class="note">Runs on the Pareto frontier (no other run is cheaper and at '
            "least as good):</p>" + _pareto_table(inputs.sweep_rows)
        )
    parts.append(f'<p class="note">gpuscale {escape(__version__)}</p>')
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(inputs.title)}</title><style>{CSS}</style></head><body>"
            + "\n".join(parts) + f"<script>{SCRIPT}</script></body></html>\n")
