"""Per-run time series in the JSON result, compactly, and read back for the HTML report.

The public summary (`ScenarioResult.to_json`) holds only summaries. When a report is wanted,
each run entry gains one extra key, `series`:

    {"interval_s": 15.0,                     # scrape interval: one row per scrape
     "slo": {"ttft_s": 2.0, "tpot_s": 0.2},
     "columns": {"time_s": [...], "arrivals": [...], ...},   # metrics/store.py SERIES_COLUMNS
     "markers": [[time_s, kind, detail], ...],  # scale_up / scale_down / eviction
     "cdf": {"q": [0, 0.01, ..., 1], "ttft_s": [...], "tpot_s": [...]}}

Values are rounded to 5 significant digits (integers stay integers): a 1-hour run at a 15 s
scrape is 240 rows x 20 columns, about 25 kB of JSON, whatever the request count.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np

from gpuscale.metrics.summary import latency_columns

SERIES_KEY = "series"
CDF_POINTS = 101  # percentiles 0..100: enough for a smooth CDF, small in JSON


def compact_number(value: float) -> float | int | None:
    """5 significant digits; integral values as int; NaN/inf as None (JSON has neither)."""
    value = float(value)
    if not math.isfinite(value):
        return None
    if value == int(value) and abs(value) < 2**53:
        return int(value)
    return float(f"{value:.5g}")


def compact_list(values) -> list:
    return [compact_number(v) for v in np.asarray(values, dtype=float)]


def latency_cdf(requests) -> dict:
    """TTFT and TPOT at percentiles 0..100 (empty lists when no request got that far)."""
    ttft, tpot, _ = latency_columns(requests)
    q = np.linspace(0.0, 1.0, CDF_POINTS)

    def quantiles(values: np.ndarray) -> list:
        return compact_list(np.percentile(values, q * 100)) if len(values) else []

    return {"q": compact_list(q), "ttft_s": quantiles(ttft), "tpot_s": quantiles(tpot)}


def run_series(run, *, interval_s: float, slo: dict) -> dict:
    """The `series` entry of one run (`run` is an engine RunResult)."""
    markers = [
        [compact_number(t), kind, detail] for t, kind, detail in run.extra.get("markers", ())
    ]
    return {
        "interval_s": interval_s,
        "slo": slo,
        "columns": {name: compact_list(values) for name, values in run.series.items()},
        "markers": markers,
        "cdf": latency_cdf(run.requests),
    }


def attach_series(data: dict, result) -> dict:
    """A copy of the JSON summary `data` with `series` added to each run (`result`:
    ScenarioResult)."""
    scenario = result.scenario
    slo = {"ttft_s": scenario.slo.ttft_s, "tpot_s": scenario.slo.tpot_s}
    runs = [
        dict(
            entry,
            **{SERIES_KEY: run_series(run, interval_s=scenario.metrics.scrape_interval_s, slo=slo)},
        )
        for entry, run in zip(data["runs"], result.runs, strict=True)
    ]
    return dict(data, runs=runs)


def finite_json(value):
    """`value` with every infinite float as None: JSON has no infinity, and an infinite TTFT
    percentile (requests that never got a first token) reads back as null (docs/metrics.md)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(v) for v in value]
    return value


def result_json_text(data: dict) -> str:
    """The result as indented JSON, each run's `series` on one line (else one number a line)."""
    compact: dict[str, str] = {}
    runs = []
    for index, run in enumerate(data.get("runs", [])):
        if SERIES_KEY in run:
            token = f"@@gpuscale-series-{index}@@"
            compact[json.dumps(token)] = json.dumps(run[SERIES_KEY], separators=(",", ":"))
            run = dict(run, **{SERIES_KEY: token})
        runs.append(run)
    text = json.dumps(finite_json(dict(data, runs=runs)), indent=2, allow_nan=False)
    for token, value in compact.items():
        text = text.replace(token, value, 1)
    return text + "\n"


@dataclass
class RunView:
    """One run as the report sees it: its summary, and its series when the JSON has them."""

    name: str
    summary: dict
    scenario: str
    columns: dict[str, np.ndarray] = field(default_factory=dict)
    markers: list[tuple[float, str, str]] = field(default_factory=list)
    cdf: dict[str, np.ndarray] = field(default_factory=dict)
    interval_s: float = 0.0
    slo: dict = field(default_factory=dict)

    @property
    def has_series(self) -> bool:
        return bool(self.columns) and len(self.columns.get("time_s", ())) > 0


def _array(values) -> np.ndarray:
    return np.asarray([np.nan if v is None else v for v in values], dtype=float)


def run_views(data: dict) -> list[RunView]:
    """RunViews of one result JSON; run names get the scenario name when results are merged."""
    views = []
    for entry in data.get("runs", []):
        series = entry.get(SERIES_KEY) or {}
        cdf = series.get("cdf") or {}
        views.append(
            RunView(
                name=str(entry.get("name", "?")),
                summary={k: v for k, v in entry.items() if k != SERIES_KEY},
                scenario=str(data.get("scenario", "")),
                columns={k: _array(v) for k, v in (series.get("columns") or {}).items()},
                markers=[
                    (float(t), str(kind), str(detail))
                    for t, kind, detail in series.get("markers", [])
                ],
                cdf={k: _array(v) for k, v in cdf.items()},
                interval_s=float(series.get("interval_s") or 0.0),
                slo=dict(series.get("slo") or {}),
            )
        )
    return views
