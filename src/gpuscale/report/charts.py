"""What each chart shows, as data: the SVG (HTML, docs) and PNG (matplotlib) renderers share it.

A `Chart` is lines or points in data units plus event markers and reference lines; it knows
nothing of pixels. Builders turn RunViews (report/timeline.py) and sweep rows into charts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuscale.metrics.run_summary import load_run
from gpuscale.report.timeline import RunView

# Okabe-Ito: distinguishable with the common colour-vision deficiencies, and in greyscale print.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
GREY = "#888888"
SLO_RED = "#cc0000"
MARKER_COLOURS = {"scale_up": "#009E73", "scale_down": "#D55E00", "eviction": "#CC0000"}


@dataclass(frozen=True)
class Line:
    label: str
    x: np.ndarray
    y: np.ndarray
    colour: str
    dash: bool = False
    step: bool = False      # hold each value until the next sample (gauges scraped periodically)
    points: bool = False    # draw dots instead of a line (scatter)
    group: str = ""         # run name, so the page can hide one run across all charts
    labels: tuple[str, ...] = ()  # per-point labels for scatters (tooltips)
    nudge_px: float = 0.0   # horizontal offset, so runs with identical numbers stay visible
    show_labels: bool = False  # write each point's label beside it (few points only)


@dataclass(frozen=True)
class Marker:
    x: float
    kind: str
    detail: str
    colour: str
    group: str = ""


@dataclass(frozen=True)
class Chart:
    chart_id: str
    title: str
    x_label: str
    y_label: str
    lines: tuple[Line, ...]
    markers: tuple[Marker, ...] = ()
    hlines: tuple[tuple[float, str], ...] = ()  # (y, label) reference lines, e.g. the SLO
    vlines: tuple[tuple[float, str], ...] = ()  # (x, label), e.g. the oracle cost bound
    x_range: tuple[float, float] | None = None  # shared by timelines so they align
    y_max_frac: float | None = None  # 1.0 for fractions and CDFs
    log_x: bool = False
    timeline: bool = False


def run_colours(names: list[str]) -> dict[str, str]:
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}


def _per_second(view: RunView, column: str) -> np.ndarray:
    return view.columns[column] / view.interval_s if view.interval_s > 0 else view.columns[column]


# (chart id, title, y label, [(column or callable, dashed)], step, hline key or None)
def _timeline_specs():
    cols = lambda *names: lambda v: sum(v.columns[n] for n in names)  # noqa: E731
    return (
        ("completions", "Completions per second", "requests/s",
         [(lambda v: _per_second(v, "completions"), False)], False, None),
        ("queue", "Queue depth (engine waiting + gateway)", "requests",
         [(cols("queue_waiting", "gateway_queue"), False)], True, None),
        ("running", "Running requests", "requests", [(cols("running"), False)], True, None),
        ("kv_cache", "KV-cache use (mean over replicas)", "fraction",
         [(cols("kv_usage_mean"), False)], True, None),
        ("ttft_p99", "P99 TTFT, sliding 60 s window", "seconds",
         [(cols("ttft_p99_s"), False)], True, "ttft_s"),
        ("replicas", "Replicas: ready (solid), desired (dashed)", "replicas",
         [(cols("replicas_ready"), False), (cols("replicas_desired"), True)], True, None),
        ("nodes", "Nodes: ready (solid), launching (dashed)", "nodes",
         [(cols("nodes_ready"), False), (cols("nodes_launching"), True)], True, None),
        ("gpus", "GPUs: allocated (solid), busy (dashed)", "GPUs",
         [(cols("gpus_allocated"), False), (cols("gpus_busy"), True)], True, None),
        ("gpus_idle", "GPUs billed but idle (billed - busy)", "GPUs",
         [(lambda v: v.columns["gpus_billed"] - v.columns["gpus_busy"], False)], True, None),
        ("prefill", "Prefill replicas: ready (solid), desired (dashed)", "replicas",
         [(cols("prefill_ready"), False), (cols("prefill_desired"), True)], True, None),
        ("decode", "Decode replicas: ready (solid), desired (dashed)", "replicas",
         [(cols("decode_ready"), False), (cols("decode_desired"), True)], True, None),
        ("pending", "Pending pods", "pods", [(cols("pods_pending"), False)], True, None),
        ("cost", "Cumulative cost", "USD", [(cols("cost_usd"), False)], False, None),
    )


def timeline_charts(views: list[RunView]) -> list[Chart]:
    """One chart per series, one line per run, all on the same time axis (minutes)."""
    views = [v for v in views if v.has_series]
    if not views:
        return []
    colours = run_colours([v.name for v in views])
    end_min = max(float(v.columns["time_s"][-1]) for v in views) / 60.0
    x_range = (0.0, max(end_min, 1e-3))
    charts = []
    arrivals = views[0]
    arrivals_line = Line("arrivals", arrivals.columns["time_s"] / 60.0,
                         _per_second(arrivals, "arrivals"), GREY, group="")
    split = any(np.any(v.columns.get("prefill_desired", np.zeros(1)) > 0) for v in views)
    for chart_id, title, y_label, parts, step, hline_key in _timeline_specs():
        if chart_id in ("prefill", "decode") and not split:
            continue  # per-role charts only for prefill/decode (disaggregated) runs
        lines = [arrivals_line] if chart_id == "completions" else []
        for view in views:
            x = view.columns["time_s"] / 60.0
            for fn, dashed in parts:
                lines.append(
                    Line(
                        view.name,
                        x,
                        np.asarray(fn(view), dtype=float),
                        colours[view.name],
                        dash=dashed,
                        step=step,
                        group=view.name,
                    )
                )
        hlines: tuple[tuple[float, str], ...] = ()
        if hline_key and views[0].slo.get(hline_key):
            hlines = ((float(views[0].slo[hline_key]), "SLO"),)
        markers: tuple[Marker, ...] = ()
        if chart_id == "replicas":
            markers = tuple(Marker(t / 60.0, kind, detail, MARKER_COLOURS.get(kind, GREY), v.name)
                            for v in views for t, kind, detail in v.markers)
        charts.append(Chart(chart_id, title, "time (min)", y_label, tuple(lines), markers, hlines,
                            x_range=x_range, y_max_frac=1.0 if chart_id == "kv_cache" else None,
                            timeline=True))
    return charts


def cdf_charts(views: list[RunView]) -> list[Chart]:
    """TTFT and TPOT CDFs (percentile on y, latency on a log x axis), one line per run."""
    views = [v for v in views if v.cdf.get("q") is not None and len(v.cdf.get("q", ())) > 0]
    colours = run_colours([v.name for v in views])
    charts = []
    for key, title in (("ttft_s", "TTFT CDF"), ("tpot_s", "TPOT CDF")):
        lines = tuple(Line(v.name, v.cdf[key], v.cdf["q"], colours[v.name], group=v.name)
                      for v in views if len(v.cdf.get(key, ())) > 0)
        if not lines:
            continue
        slo = views[0].slo.get(key)
        charts.append(
            Chart(
                f"cdf_{key}",
                title,
                f"{key.split('_')[0].upper()} (s, log)",
                "fraction of requests",
                lines,
                y_max_frac=1.0,
                log_x=True,
                hlines=(),
                markers=(Marker(float(slo), "slo", "SLO", SLO_RED),) if slo else (),
            )
        )
    return charts


def oracle_cost_usd(summary: dict) -> float | None:
    """The oracle's GPU-hours priced at this run's own $/GPU-hour (metrics/oracle.py): no
    policy that completes the workload on this hardware can spend less."""
    s = load_run(summary)
    if not s.gpu_hours:
        return None
    return s.oracle_gpu_hours * s.cost_usd / s.gpu_hours


def param_label(key: str) -> str:
    """A sweep column `set:strategies[keda-queue-depth].autoscaler.min_replica_count` as
    `keda-queue-depth min_replica_count`: the strategy and the last field, what a reader needs."""
    path = key[4:] if key.startswith("set:") else key
    strategy = ""
    if path.startswith("strategies[") and "]" in path:
        strategy, path = path[len("strategies["):path.index("]")], path[path.index("]") + 1:]
    field = path.strip(".").split(".")[-1] if path.strip(".") else path
    if "[" in field and field.endswith("]") and path.count(".") >= 1:
        field = ".".join(path.strip(".").split(".")[-2:])
    return f"{strategy} {field}".strip()


def cost_slo_chart(views: list[RunView], target_frac: float | None = None) -> Chart | None:
    """Cost (x) vs SLO attainment (y), one labelled point per run; the oracle cost bound and
    the attainment target as labelled lines. Runs with identical cost and attainment are
    drawn side by side and their labels say so, instead of one dot hiding the other."""
    if not views:
        return None
    colours = run_colours([v.name for v in views])
    typed = {v.name: load_run(v.summary) for v in views}
    spots: dict[tuple[float, float], list[str]] = {}
    for v in views:
        s = typed[v.name]
        spots.setdefault((round(s.cost_usd, 6), round(s.slo_attainment, 6)), []).append(v.name)
    lines = []
    for v in views:
        s = typed[v.name]
        same = spots[(round(s.cost_usd, 6), round(s.slo_attainment, 6))]
        label = (
            v.name
            if len(same) == 1
            else f"{v.name} (= {', '.join(n for n in same if n != v.name)})"
        )
        lines.append(Line(v.name, np.array([s.cost_usd]), np.array([s.slo_attainment]),
                          colours[v.name], points=True, group=v.name, labels=(label,),
                          nudge_px=7.0 * same.index(v.name), show_labels=True))
    bounds = [b for b in (oracle_cost_usd(v.summary) for v in views) if b is not None]
    vlines = ((min(bounds), "oracle bound: least cost of any policy that serves the workload"),) \
        if bounds else ()
    hlines = ((float(target_frac), f"SLO target {100 * target_frac:g} %"),) if target_frac else ()
    return Chart("cost_vs_slo", "Cost vs SLO attainment (up and left is better)", "cost (USD)",
                 "SLO attainment", tuple(lines), y_max_frac=1.0, vlines=vlines, hlines=hlines)


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats: lower cost and at least as high attainment.

    Returned in order of increasing cost; ties in cost keep the higher attainment only.
    """
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1]))
    front, best = [], -np.inf
    for i in order:
        if points[i][1] > best:
            front.append(i)
            best = points[i][1]
    return front


def pareto_chart(rows: list[dict]) -> Chart | None:
    """All sweep runs as points, the Pareto frontier of cost vs SLO attainment as a line."""
    usable = [
        r for r in rows if r.get("cost_usd") is not None and r.get("slo_attainment") is not None
    ]
    if not usable:
        return None
    points = [(float(r["cost_usd"]), float(r["slo_attainment"])) for r in usable]
    front = pareto_front(points)
    params = [k for k in usable[0] if k.startswith("set:")]
    # Tooltips name what was varied (strategy and parameter values), not the run hash.
    labels = tuple("; ".join([str(r.get("strategy", ""))] +
                             [f"{param_label(k)}={r.get(k)}" for k in params]) for r in usable)
    all_points = Line(
        "sweep runs",
        np.array([p[0] for p in points]),
        np.array([p[1] for p in points]),
        PALETTE[5],
        points=True,
        labels=labels,
    )
    fx = np.array([points[i][0] for i in front])
    fy = np.array([points[i][1] for i in front])
    frontier = Line("Pareto frontier", fx, fy, PALETTE[1], step=True,
                    labels=tuple(labels[i] for i in front))
    # The frontier's runs numbered on the chart, as the table under it numbers them: a dot
    # with no label said nothing without a mouse (and nothing at all in an exported PNG).
    numbered = Line("frontier runs, numbered", fx, fy, PALETTE[1], points=True,
                    labels=tuple(f"#{n}" for n in range(1, len(front) + 1)), show_labels=True)
    return Chart("pareto", f"Sweep: cost vs SLO attainment, {len(usable)} runs", "cost (USD)",
                 "SLO attainment", (all_points, frontier, numbered), y_max_frac=1.0)
