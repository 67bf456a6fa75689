"""The backtest section of a result: what the history held, how the traffic was rebuilt, how
the replay of today's manifests agrees with what was recorded (numbers, lines, charts)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpuscale.backtest import agreement, buckets
from gpuscale.backtest.history import TTFT, History, Selector, sample_times
from gpuscale.backtest.replay import Timing
from gpuscale.backtest.signals import Grid, read_signals
from gpuscale.backtest.traffic import Traffic
from gpuscale.backtest.windows import Irregularities, engine_matchers, histogram_windows
from gpuscale.promql.store import SeriesStore
from gpuscale.report.charts import GREY, PALETTE, Chart, Line

RECORDED_COLOUR, REPLAYED_COLOUR = GREY, PALETTE[0]
CHARTED = (("replicas", "Replicas (the Deployment's spec)", "replicas"),
           ("queue", "Queue depth (vllm:num_requests_waiting)", "requests"),
           ("ttft_p99_s", "P99 TTFT (1 min rate of the buckets)", "seconds"))


@dataclass
class Section:
    data: dict
    lines: list[str] = field(default_factory=list)
    charts: list[Chart] = field(default_factory=list)


def ttft_within(store: SeriesStore, selector: Selector, grid: Grid, slo_s: float
                ) -> float | None:
    """The share of first tokens within `slo_s` over the grid's span, from the TTFT buckets."""
    edges = grid.start_ms + grid.step_ms * np.arange(grid.count, dtype=np.int64)
    hist = histogram_windows(store, TTFT, engine_matchers(selector.namespace,
                                                          selector.model_name),
                             edges, grid.step_ms, Irregularities(), sample_times(store))
    if hist is None:
        return None
    counts, _, _ = hist.pooled(0, len(hist.totals))
    return buckets.share_at_most(counts, hist.upper, slo_s)


def recorded_grid(history: History) -> Grid:
    return Grid(history.start_ms, history.step_ms, len(history.grid_ms))


def aligned(history: History, at: Timing, recorded: dict, store: SeriesStore,
            selector: Selector) -> tuple[agreement.Aligned, Grid]:
    """Recorded and replayed signals on the same steps (the run starts `offset_s` in)."""
    full = recorded_grid(history)
    lag = min(at.lag_steps, full.count - 1)
    grid = Grid(history.start_ms + round(at.offset_s * 1000), history.step_ms, full.count - lag)
    simulated = read_signals(store, selector, grid)
    rec = {k: v[lag:lag + grid.count] for k, (v, _) in recorded.items()}
    sim = {k: v for k, (v, _) in simulated.items()}
    return agreement.Aligned(rec, sim, history.step_ms / 1000.0, lag * history.step_ms / 1000.0
                             ), grid


def history_json(history: History, traffic: Traffic, recorded: dict) -> dict:
    seen = traffic.seen
    gaps = seen.merged_gaps()
    return {
        "source": history.source, "format": history.format,
        "step_s": history.step_ms / 1000.0, "span_s": history.span_s,
        "gaps": [{"from_s": round(a - history.start_ms / 1000.0, 3),
                  "to_s": round(b - history.start_ms / 1000.0, 3)} for a, b in gaps],
        "counter_resets": seen.resets, "engine_restarts": seen.restarts,
        "series_started": seen.started,
        "signals": {k: q or None for k, (_, q) in recorded.items()},
    }


def build(history: History, selector: Selector, traffic: Traffic, at: Timing, recorded: dict,
          store: SeriesStore, run_selector: Selector, slo_ttft_s: float,
          run_name: str) -> Section:
    """The section for the replay of today's manifests (`store`: that run's series)."""
    both, grid = aligned(history, at, recorded, store, run_selector)
    rec_grid = Grid(history.start_ms + round(both.start_s * 1000), history.step_ms, grid.count)
    shares = (ttft_within(history.store, selector, rec_grid, slo_ttft_s),
              ttft_within(store, run_selector, grid, slo_ttft_s))
    numbers = agreement.compare(both, shares)
    data = {"history": history_json(history, traffic, recorded), "traffic": traffic.resolved,
            "replayed": run_name, "offset_s": round(at.offset_s, 3), "agreement": numbers}
    return Section(data, lines(data), charts(both))


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, unit: str = "") -> str:
    return "n/a" if value is None else f"{value:.3g}{unit}"


def lines(data: dict) -> list[str]:
    """The section as the terminal prints it."""
    hist, traffic, agree = data["history"], data["traffic"], data["agreement"]
    out = [f"history {hist['source']} ({hist['format']}): {hist['span_s']:g} s at "
           f"{hist['step_s']:g} s steps; {traffic['requests']} requests rebuilt for "
           f"{traffic['group']['model_name']} in {traffic['group']['namespace']}"]
    if hist["gaps"] or hist["counter_resets"] or hist["engine_restarts"]:
        spans = ", ".join(f"{g['from_s']:g}-{g['to_s']:g} s" for g in hist["gaps"][:5])
        out.append(f"  scrape gaps {len(hist['gaps'])} ({spans or 'none'}: increases spread "
                   f"over them); counter resets {hist['counter_resets']} (as rate() reads "
                   f"them); engines silent while others were scraped {hist['engine_restarts']}"
                   " (read as restarts: counted from 0 when back)")
    events = agree["scale_events"]
    gpu, slo = agree["gpu_hours"], agree["ttft_within_slo_frac"]
    out += [
        f"agreement of {data['replayed']} with the history: "
        + {True: "AGREES", False: "DIVERGES"}.get(
            agree["agrees"], "CANNOT TELL (no replica count in the history: export "
                             "kube_deployment_spec_replicas, docs/backtest.md)"),
        f"  replicas within one of the recorded {_pct(agree['replicas_within_one_frac'])} of "
        f"the time; scale events {events['matched']}/{events['recorded']} matched "
        f"(replayed {events['simulated']}, median lag {_num(events['lag_s_median'], ' s')})",
        f"  GPU-hours recorded {_num(gpu['recorded'])}, replayed {_num(gpu['simulated'])} "
        f"({_pct(gpu['rel_error'])}); first tokens within the TTFT SLO recorded "
        f"{_pct(slo['recorded'])}, replayed {_pct(slo['simulated'])}",
        f"  queue mean {_num(agree['queue']['recorded_mean'])} vs "
        f"{_num(agree['queue']['simulated_mean'])}; KV use mean "
        f"{_num(agree['kv_usage']['recorded_mean'])} vs "
        f"{_num(agree['kv_usage']['simulated_mean'])}; TTFT p99 per-step error "
        f"{_pct(agree['ttft_p99_s']['median_rel_error'])}, ITL p50 "
        f"{_pct(agree['itl_p50_s']['median_rel_error'])}",
    ]
    first = agree["first_divergence"]
    if first is not None and agree["agrees"] is False:
        out.append(f"  first to diverge: {first['signal']} at {first['at_s']:g} s: "
                   f"{first['suggests']}")
    return out


def charts(both: agreement.Aligned) -> list[Chart]:
    """Per signal, the recorded panel above the replayed one, on one time axis."""
    count = len(both.recorded["replicas"])
    minutes = (both.start_s + both.step_s * np.arange(count)) / 60.0
    x_range = (float(minutes[0]), float(max(minutes[-1], minutes[0] + 1e-3)))
    out = []
    for name, title, unit in CHARTED:
        for side, values, colour in (("recorded", both.recorded[name], RECORDED_COLOUR),
                                     ("replayed", both.simulated[name], REPLAYED_COLOUR)):
            line = Line(side, minutes, np.asarray(values, dtype=float), colour, step=True)
            out.append(Chart(f"backtest_{name}_{side}", f"{title}: {side}", "time (min)", unit,
                             (line,), x_range=x_range))
    return out
