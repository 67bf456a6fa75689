"""Render a Chart as inline SVG: no scripts, no fonts to fetch, styles as attributes.

The same string goes into the HTML report and, with an XML header, into a standalone .svg file
for docs and tickets. Each drawn series is a `<path class="series">` (or `<circle class="pt">`
dots) carrying `data-n`, the number of points drawn, so a test can check that data was plotted.
"""

from __future__ import annotations

import math
from html import escape

import numpy as np

from gpuscale.report.charts import Chart, Line

WIDTH, HEIGHT = 760, 250
LEFT, RIGHT, TOP, BOTTOM = 58, 14, 46, 38
MAX_POINTS = 1200  # per line; above this, min/max per bucket keeps spikes visible
FONT = "font-family=\"system-ui, sans-serif\""


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi]: steps of 1, 2 or 5 times a power of ten."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(lo / step - 1e-9)
    last = math.floor(hi / step + 1e-9)
    # Multiples of the step, not a running sum, so rounding errors do not accumulate.
    ticks = [round(k * step, 12) for k in range(first, last + 1)]
    return ticks


def _fmt(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def thin(
    x: np.ndarray, y: np.ndarray, max_points: int = MAX_POINTS
) -> tuple[np.ndarray, np.ndarray]:
    """At most ~max_points points: each bucket keeps its min and max (in time order)."""
    if len(x) <= max_points:
        return x, y
    buckets = np.array_split(np.arange(len(x)), max_points // 2)
    keep = []
    for idx in buckets:
        seg = y[idx]
        if np.all(np.isnan(seg)):
            keep.append(idx[0])
            continue
        lo, hi = idx[np.nanargmin(seg)], idx[np.nanargmax(seg)]
        keep.extend(sorted({lo, hi}))
    kept = np.asarray(keep)
    return x[kept], y[kept]


class _Frame:
    """Data -> pixel transform of one chart's plot area."""

    def __init__(self, chart: Chart) -> None:
        x_parts = [ln.x[np.isfinite(ln.x)] for ln in chart.lines] + \
            [np.array([m.x for m in chart.markers] + [v[0] for v in chart.vlines])]
        y_parts = [ln.y[np.isfinite(ln.y)] for ln in chart.lines] + \
            [np.array([h[0] for h in chart.hlines])]
        xs = np.concatenate([a for a in x_parts if len(a)] or [np.array([0.0, 1.0])])
        ys = np.concatenate([a for a in y_parts if len(a)] or [np.array([0.0, 1.0])])
        self.log_x = chart.log_x
        if self.log_x:
            positive = xs[xs > 0]
            lo = float(positive.min()) if len(positive) else 1e-3
            hi = float(positive.max()) if len(positive) else 1.0
            x0, x1 = math.log10(lo), math.log10(max(hi, lo * 10))
            pad = 0.03 * (x1 - x0)  # keep an SLO marker at the edge visible
            self.x0, self.x1 = x0 - pad, x1 + pad
        elif chart.x_range is not None:
            self.x0, self.x1 = chart.x_range
        else:
            lo, hi = float(xs.min()), float(xs.max())
            pad = (hi - lo) * 0.08 or max(abs(hi) * 0.1, 1.0)
            self.x0, self.x1 = lo - pad, hi + pad
        y_hi = float(ys.max()) if len(ys) else 1.0
        y_lo = min(0.0, float(ys.min())) if len(ys) else 0.0
        if chart.y_max_frac is not None:
            y_hi = max(y_hi, chart.y_max_frac)
        self.y0, self.y1 = y_lo, (y_hi * 1.05 if y_hi > 0 else 1.0)
        self.px0, self.px1 = LEFT, WIDTH - RIGHT
        self.py0, self.py1 = HEIGHT - BOTTOM, TOP

    def fx(self, x: np.ndarray | float) -> np.ndarray:
        xa = np.asarray(x, dtype=float)
        if self.log_x:
            xa = np.log10(np.maximum(xa, 10 ** self.x0))
        return self.px0 + (xa - self.x0) / (self.x1 - self.x0 or 1.0) * (self.px1 - self.px0)

    def fy(self, y: np.ndarray | float) -> np.ndarray:
        ya = np.asarray(y, dtype=float)
        return self.py0 + (ya - self.y0) / (self.y1 - self.y0 or 1.0) * (self.py1 - self.py0)


def _path_d(px: np.ndarray, py: np.ndarray, step: bool) -> tuple[str, int]:
    """SVG path data; NaN breaks the line. Returns (d, number of points drawn)."""
    parts, drawn, pen_down, last_y = [], 0, False, None
    for x, y in zip(px, py, strict=True):
        if not (math.isfinite(x) and math.isfinite(y)):
            pen_down = False
            continue
        if not pen_down:
            parts.append(f"M{x:.1f},{y:.1f}")
            pen_down = True
        elif step:
            parts.append(f"H{x:.1f}V{y:.1f}" if y != last_y else f"H{x:.1f}")
        else:
            parts.append(f"L{x:.1f},{y:.1f}")
        last_y = y
        drawn += 1
    return "".join(parts), drawn


def _line_svg(line: Line, frame: _Frame) -> str:
    x, y = thin(line.x, line.y) if not line.points else (line.x, line.y)
    px, py = frame.fx(x) + line.nudge_px, frame.fy(y)
    group = escape(line.group, quote=True)
    if line.points:
        dots = []
        for i, (cx, cy) in enumerate(zip(px, py, strict=True)):
            if math.isfinite(cx) and math.isfinite(cy):
                tip = line.labels[i] if i < len(line.labels) else line.label
                dots.append(f'<circle class="pt" data-group="{group}" cx="{cx:.1f}" cy="{cy:.1f}" '
                            f'r="4.5" fill="{line.colour}" fill-opacity="0.8"><title>'
                            f'{escape(tip)}: x={_fmt(x[i])}, y={_fmt(y[i])}</title></circle>')
                if line.show_labels:
                    # Staggered by the nudge so labels of side-by-side dots do not overprint.
                    dy = -8 - 1.6 * line.nudge_px
                    dots.append(f'<text class="pt-label" data-group="{group}" x="{cx + 7:.1f}" '
                                f'y="{cy + dy:.1f}" font-size="10" {FONT} fill="{line.colour}">'
                                f'{escape(tip)}</text>')
        return "".join(dots)
    d, drawn = _path_d(px, py, line.step)
    if drawn == 1:  # a lone point would be invisible as a path
        return (f'<circle class="pt" data-group="{group}" cx="{px[0]:.1f}" cy="{py[0]:.1f}" r="3" '
                f'fill="{line.colour}"><title>{escape(line.label)}</title></circle>')
    dash = ' stroke-dasharray="5,3"' if line.dash else ""
    return (
        f'<path class="series" data-group="{group}" data-n="{drawn}" d="{d}" fill="none" '
        f'stroke="{line.colour}" stroke-width="1.6"{dash}>'
        f'<title>{escape(line.label)}</title></path>'
    )


def _axes_svg(chart: Chart, frame: _Frame) -> list[str]:
    out = []
    grid = 'stroke="#e3e3e3" stroke-width="1"'
    for tick in nice_ticks(frame.y0, frame.y1):
        py = float(frame.fy(tick))
        out.append(f'<line x1="{frame.px0}" x2="{frame.px1}" y1="{py:.1f}" y2="{py:.1f}" {grid}/>')
        out.append(f'<text x="{frame.px0 - 6}" y="{py + 4:.1f}" text-anchor="end" font-size="11" '
                   f'{FONT} fill="#444">{_fmt(tick)}</text>')
    if frame.log_x:
        # 1-2-5 per decade when the axis spans few decades, else decades only.
        steps = (1, 2, 5) if frame.x1 - frame.x0 <= 3 else (1,)
        x_ticks = [
            m * 10.0**e
            for e in range(math.floor(frame.x0), math.ceil(frame.x1) + 1)
            for m in steps
            if frame.x0 - 1e-9 <= math.log10(m * 10.0**e) <= frame.x1 + 1e-9
        ]
    else:
        x_ticks = nice_ticks(frame.x0, frame.x1, 8)
    for tick in x_ticks:
        px = float(frame.fx(tick))
        out.append(f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{frame.py1}" y2="{frame.py0}" {grid}/>')
        out.append(f'<text x="{px:.1f}" y="{frame.py0 + 15}" text-anchor="middle" font-size="11" '
                   f'{FONT} fill="#444">{_fmt(tick)}</text>')
    out.append(f'<rect x="{frame.px0}" y="{frame.py1}" width="{frame.px1 - frame.px0}" '
               f'height="{frame.py0 - frame.py1}" fill="none" stroke="#999"/>')
    out.append(f'<text x="{(frame.px0 + frame.px1) / 2:.0f}" y="{HEIGHT - 6}" text-anchor="middle" '
               f'font-size="11" {FONT} fill="#222">{escape(chart.x_label)}</text>')
    out.append(
        f'<text transform="translate(13,{(frame.py0 + frame.py1) / 2:.0f}) rotate(-90)" '
        f'text-anchor="middle" font-size="11" {FONT} fill="#222">{escape(chart.y_label)}</text>'
    )
    return out


def _legend_svg(chart: Chart) -> list[str]:
    seen, out = set(), []
    x: float = LEFT
    for line in chart.lines:
        if line.label in seen:
            continue
        seen.add(line.label)
        label = line.label if len(line.label) <= 28 else line.label[:27] + "…"
        out.append(
            f'<rect x="{x}" y="27" width="10" height="10" fill="{line.colour}"/>'
            f'<text x="{x + 14}" y="36" font-size="11" {FONT} fill="#222">{escape(label)}</text>'
        )
        x += 24 + 6.5 * len(label)
        if x > WIDTH - 80:
            break
    return out


def render_svg(chart: Chart, *, standalone: bool = False) -> str:
    frame = _Frame(chart)
    body = [f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#fff"/>',
            f'<text x="{LEFT}" y="18" font-size="14" font-weight="600" {FONT} fill="#111">'
            f'{escape(chart.title)}</text>']
    body += _legend_svg(chart)
    body += _axes_svg(chart, frame)
    for y, label in chart.hlines:
        py = float(frame.fy(y))
        body.append(f'<line class="hline" x1="{frame.px0}" x2="{frame.px1}" y1="{py:.1f}" '
                    f'y2="{py:.1f}" stroke="#c00" stroke-dasharray="2,3"><title>{escape(label)} '
                    f'{_fmt(y)}</title></line><text class="hline-label" x="{frame.px1 - 4}" '
                    f'y="{py - 4:.1f}" text-anchor="end" font-size="10" {FONT} fill="#c00">'
                    f'{escape(label)} {_fmt(y) if label == "SLO" else ""}</text>')
    for x, label in chart.vlines:
        px = float(frame.fx(x))
        body.append(f'<line class="vline" x1="{px:.1f}" x2="{px:.1f}" y1="{frame.py1}" '
                    f'y2="{frame.py0}" stroke="#555" stroke-dasharray="6,3" stroke-width="1.5">'
                    f'<title>{escape(label)}: {_fmt(x)}</title></line>'
                    f'<text x="{px + 4:.1f}" y="{frame.py0 - 6}" font-size="10" {FONT} '
                    f'fill="#555">oracle</text>')
    for marker in chart.markers:
        px = float(frame.fx(marker.x))
        if marker.kind == "slo":  # the SLO limit on a CDF: say what the line is
            body.append(
                f'<text class="marker-label" x="{px + 4:.1f}" y="{frame.py1 + 20}" '
                f'font-size="10" {FONT} fill="{marker.colour}">SLO {_fmt(marker.x)} s</text>'
            )
        prefix = f"{marker.group}: " if marker.group else ""
        tip = f"{prefix}{marker.kind} {marker.detail} at {_fmt(marker.x)}"
        # A faint full-height rule to line events up with the curves, a solid tick on top.
        body.append(
            f'<g class="marker" data-group="{escape(marker.group, quote=True)}">'
            f'<title>{escape(tip)}</title><line x1="{px:.1f}" x2="{px:.1f}" '
            f'y1="{frame.py1}" y2="{frame.py0}" stroke="{marker.colour}" stroke-opacity="0.25"/>'
            f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{frame.py1}" y2="{frame.py1 + 9}" '
            f'stroke="{marker.colour}" stroke-width="2.5"/></g>'
        )
    body += [_line_svg(line, frame) for line in chart.lines]
    attrs = (
        f'class="chart" data-chart="{escape(chart.chart_id, quote=True)}" '
        f'data-timeline="{int(chart.timeline)}" data-x0="{frame.x0:.6g}" data-x1="{frame.x1:.6g}" '
        f'data-px0="{frame.px0}" data-px1="{frame.px1}" data-y0="{frame.y0:.6g}" '
        f'data-y1="{frame.y1:.6g}" data-py0="{frame.py0}" data-py1="{frame.py1}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" '
        f'aria-label="{escape(chart.title, quote=True)}"'
    )
    if not standalone:
        # HTML5 needs no namespace on inline SVG; leaving it out keeps the page free of URLs.
        return f'<svg {attrs}>{"".join(body)}</svg>'
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<svg xmlns="http://www.w3.org/2000/svg" {attrs}>{"".join(body)}</svg>\n')
