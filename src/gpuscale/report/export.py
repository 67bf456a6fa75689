"""Export each chart as its own file for docs and tickets: SVG (built in) or PNG (matplotlib).

PNG needs matplotlib (`pip install 'gpuscale[report]'`), kept out of the base install; it draws
the same Chart data as the SVG, so both show the same lines, markers and reference lines.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gpuscale.errors import UserInputError
from gpuscale.outputs import write_atomic
from gpuscale.report.charts import Chart
from gpuscale.report.svg import render_svg

EXPORT_FORMATS = ("svg", "png")


def require_format(fmt: str) -> None:
    """Refuse a chart format this install cannot write; the CLI calls it before any output."""
    if fmt not in EXPORT_FORMATS:
        raise UserInputError(f"unknown chart format {fmt!r}; known: {', '.join(EXPORT_FORMATS)}")
    if fmt == "png":
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise UserInputError("PNG export needs matplotlib: pip install 'gpuscale[report]', "
                                 "or use --chart-format svg") from None


def _png_bytes(chart: Chart) -> bytes:
    require_format("png")
    import io

    import matplotlib

    matplotlib.use("Agg")  # no display; safe in CI and worker processes
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.6, 2.5), dpi=120)
    ax = fig.add_subplot()
    labelled = set()
    for line in chart.lines:
        label = None if line.label in labelled else line.label
        labelled.add(line.label)
        if line.points:
            ax.scatter(line.x, line.y, color=line.colour, label=label, s=24, alpha=0.8)
            if line.show_labels:  # as the SVG writes them: beside each point
                for x, y, text in zip(line.x, line.y, line.labels, strict=False):
                    ax.annotate(text, (x, y), xytext=(5, 5), textcoords="offset points",
                                fontsize=7, color=line.colour)
        else:
            ax.plot(
                line.x,
                line.y,
                color=line.colour,
                label=label,
                linewidth=1.4,
                linestyle="--" if line.dash else "-",
                drawstyle="steps-post" if line.step else "default",
            )
    for y, _label in chart.hlines:
        ax.axhline(y, color="#cc0000", linestyle=":", linewidth=1)
    for x, label in chart.vlines:
        ax.axvline(x, color="#555555", linestyle="--", linewidth=1.2, label=label.split(":")[0])
    for marker in chart.markers:
        ax.axvline(marker.x, ymin=0.94, ymax=1.0, color=marker.colour, linewidth=2)
    if chart.log_x:
        ax.set_xscale("log")
    if chart.x_range is not None:
        ax.set_xlim(*chart.x_range)
    # Same y range rule as the SVG: from zero (or below, for negative data) to 5% over the top.
    finite = [line.y[np.isfinite(line.y)] for line in chart.lines]
    values = np.concatenate([v for v in finite if len(v)] or [np.array([0.0, 1.0])])
    top = max(float(values.max()), chart.y_max_frac or 0.0)
    ax.set_ylim(bottom=min(0.0, float(values.min())), top=top * 1.05 if top > 0 else 1.0)
    ax.set_title(chart.title, fontsize=10, loc="left")
    ax.set_xlabel(chart.x_label, fontsize=9)
    ax.set_ylabel(chart.y_label, fontsize=9)
    ax.tick_params(labelsize=8)
    ax.grid(True, color="#e3e3e3")
    if labelled:
        ax.legend(fontsize=7, loc="best", frameon=False)
    fig.tight_layout()
    buffer = io.BytesIO()
    # Fixed metadata: the same chart gives the same bytes (no software/date stamp).
    fig.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def export_charts(charts: list[Chart], directory: Path, fmt: str = "svg") -> list[Path]:
    """Write `<chart_id>.<fmt>` per chart into `directory` (created if missing)."""
    require_format(fmt)
    if not directory.parent.exists():
        raise UserInputError(f"directory {directory.parent} does not exist")
    directory.mkdir(exist_ok=True)
    written = []
    for chart in charts:
        path = directory / f"{chart.chart_id}.{fmt}"
        # the safe writer: a link planted in the folder is replaced, never written through
        write_atomic(path, render_svg(chart, standalone=True) if fmt == "svg"
                     else _png_bytes(chart))
        written.append(path)
    return written
