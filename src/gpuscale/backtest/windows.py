"""Counters and histograms of the history as per-window increases on the step grid.

Each series is read as Prometheus' own functions read a counter (promql/functions.go,
`extrapolatedRate` and `resets`):
- a sample lower than the one before is a counter reset (the process restarted and counted
  from 0): the increase across it is the new value, not a negative step;
- a series first seen after the export's first step is a process that started then: its first
  sample is counted in full (the zero point `increase()` extrapolates toward), spread over the
  step before it;
- between two samples the increase is spread evenly in time (linear interpolation of the
  cumulative count), so a scrape gap's increase lands over the gap's windows rather than in
  the window after it, as a `rate()` over a range that spans the gap reads it.
Resets and gaps (a spacing over 1.5 steps) are counted and reported. A query_range export
repeats a series' last value for up to the 5-minute lookback, so an outage shorter than that
reads as a quiet stretch followed by the whole increase (docs/backtest.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpuscale.backtest import buckets
from gpuscale.promql import labels as lbl
from gpuscale.promql.parse import Matcher
from gpuscale.promql.store import SeriesStore

GAP_STEPS = 1.5  # a spacing above this many steps is a missed scrape


@dataclass
class Irregularities:
    """What the counters show of the history's own troubles."""

    resets: int = 0  # counter resets (restarted engines)
    restarts: int = 0  # silences of one series while others were scraped (engine down)
    gaps: list[tuple[float, float]] = field(default_factory=list)  # (start, end) Unix s
    started: int = 0  # series that began after the export's start (new pods)

    def merged_gaps(self) -> list[tuple[float, float]]:
        """The gaps of every series as disjoint spans (an outage shows in all at once)."""
        out: list[list[float]] = []
        for start, end in sorted(set(self.gaps)):
            if out and start <= out[-1][1]:
                out[-1][1] = max(out[-1][1], end)
            else:
                out.append([start, end])
        return [(a, b) for a, b in out]


def _cumulative(t_ms: np.ndarray, values: np.ndarray, new_series: bool, step_ms: int,
                restarted: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """(knot times, cumulative increase at them, resets) of one counter. `restarted[i]`: the
    process was down between samples i and i+1 (its count after starts from 0)."""
    steps = np.diff(values)
    resets = steps < 0
    increase = np.where(resets | restarted, values[1:], steps)
    cumulative = np.concatenate(([0.0], np.cumsum(increase)))
    if restarted.any():  # a restart's count lands in the step before its first sample
        at = np.flatnonzero(restarted) + 1
        t_ms = np.insert(t_ms, at, t_ms[at] - step_ms)
        cumulative = np.insert(cumulative, at, cumulative[at - 1])
    if new_series:  # counted from 0 by a process that started within the step before
        t_ms = np.concatenate(([t_ms[0] - step_ms], t_ms))
        cumulative = np.concatenate(([0.0], cumulative + values[0]))
    return t_ms, cumulative, int(resets.sum())


def scraped_between(scrapes_ms: np.ndarray, lo_ms: np.ndarray, hi_ms: np.ndarray,
                    step_ms: int) -> np.ndarray:
    """Whether the export holds a sample of any series well inside each (lo, hi)."""
    first = np.searchsorted(scrapes_ms, lo_ms + step_ms // 2, side="right")
    last = np.searchsorted(scrapes_ms, hi_ms - step_ms // 2, side="left")
    return last > first


def counter_windows(store: SeriesStore, name: str, matchers: tuple[Matcher, ...],
                    grid_ms: np.ndarray, step_ms: int, seen: Irregularities,
                    by: str | None = None, scrapes_ms: np.ndarray | None = None
                    ) -> dict[str, np.ndarray]:
    """Per-window increase of the selected series of counter `name`, summed per value of
    label `by` ("" when None): {value: array of len(grid) - 1}. `scrapes_ms`: every sample
    time of the export; a series silent while others were scraped was down, and counts from
    0 when it returns (a restart between samples, which no lower sample shows)."""
    out: dict[str, np.ndarray] = {}
    family = store.families.get(name)
    if family is None:
        return out
    wanted = {sid for fam, sid in store.select(
        (Matcher(lbl.NAME, "=", name), *matchers)) if fam is family}
    first_ms = int(grid_ms[0])
    for sid, (t_ms, values) in family.by_series().items():
        if sid not in wanted:
            continue
        new_series = int(t_ms[0]) > first_ms + step_ms
        seen.started += new_series
        gap = np.diff(t_ms) > GAP_STEPS * step_ms
        restarted = gap & scraped_between(scrapes_ms, t_ms[:-1], t_ms[1:], step_ms) \
            if scrapes_ms is not None else np.zeros(len(gap), dtype=bool)
        times, cumulative, resets = _cumulative(t_ms, values, new_series, step_ms, restarted)
        seen.resets += resets
        seen.restarts += int(restarted.sum())
        for i in np.flatnonzero(gap & ~restarted):
            seen.gaps.append((t_ms[i] / 1000.0, t_ms[i + 1] / 1000.0))
        at_edges = np.interp(grid_ms.astype(np.float64), times.astype(np.float64), cumulative)
        key = "" if by is None else lbl.get(family.labels[sid], by)
        total = out.setdefault(key, np.zeros(len(grid_ms) - 1))
        total += np.diff(at_edges)
    return out


@dataclass
class HistogramWindows:
    """A histogram's per-window bucket counts (not cumulative), sums and counts."""

    upper: np.ndarray  # the buckets' upper bounds, ascending, +Inf last
    counts: np.ndarray  # (windows, buckets)
    sums: np.ndarray  # (windows,)
    totals: np.ndarray  # (windows,)

    def pooled(self, lo: int, hi: int) -> tuple[np.ndarray, float, float]:
        """Bucket counts, sum and count over windows lo..hi-1."""
        return (self.counts[lo:hi].sum(axis=0), float(self.sums[lo:hi].sum()),
                float(self.totals[lo:hi].sum()))

    def shifted_back(self, lag_steps: np.ndarray) -> HistogramWindows:
        """The histogram as if bucket b's observations had been made `lag_steps[b]` windows
        earlier (`lag_steps[e, b]`: at window edge e, for a lag that varies in time; fractions
        spread linearly; what was observed after the export's end is missing from its last
        windows). Each observation's share of the window's `_sum` moves with it, placed in
        its bucket as the window's own mean implies."""
        windows = len(self.totals)
        edges = np.arange(windows + 1, dtype=np.float64)
        lags = np.broadcast_to(lag_steps, (windows + 1, len(self.upper)))
        low, high = buckets.bucket_edges(self.upper)
        has_sums = bool(np.isfinite(self.sums).all())
        shares = np.array([buckets.mean_share(row, low, high, total_sum / row.sum()
                                              if has_sums and row.sum() > 0 else None)
                           for row, total_sum in zip(self.counts, self.sums, strict=True)])
        amounts = self.counts * (low + np.outer(shares, high - low))

        def moved(values: np.ndarray) -> np.ndarray:
            cumulative = np.vstack([np.zeros(values.shape[1]), np.cumsum(values, axis=0)])
            out = []
            for b in range(values.shape[1]):
                # When what was observed by each edge had been first seen (in time order).
                started = np.maximum.accumulate(edges - lags[:, b])
                out.append(np.diff(np.interp(edges, started, cumulative[:, b])))
            return np.stack(out, axis=1)

        counts = moved(self.counts)
        sums = moved(amounts).sum(axis=1) if has_sums else np.full(windows, np.nan)
        return HistogramWindows(self.upper, counts, sums, counts.sum(axis=1))


def histogram_windows(store: SeriesStore, name: str, matchers: tuple[Matcher, ...],
                      grid_ms: np.ndarray, step_ms: int, seen: Irregularities,
                      scrapes_ms: np.ndarray | None = None) -> HistogramWindows | None:
    """Per-window bucket counts of histogram `name` over the selected series (None without
    its buckets)."""
    by_le = counter_windows(store, f"{name}_bucket", matchers, grid_ms, step_ms, seen,
                            by=lbl.BUCKET, scrapes_ms=scrapes_ms)
    if not by_le:
        return None
    bounds = sorted(by_le, key=float)
    upper = np.array([float(b) for b in bounds])
    cumulative = np.stack([by_le[b] for b in bounds], axis=1)
    # Cumulative buckets to per-bucket counts; a negative difference (buckets scraped at
    # slightly different moments) is no observation.
    counts = np.clip(np.diff(cumulative, axis=1, prepend=0.0), 0.0, None)
    quiet = Irregularities()  # the buckets have reported the series' troubles already
    sums = counter_windows(store, f"{name}_sum", matchers, grid_ms, step_ms, quiet,
                           scrapes_ms=scrapes_ms).get("")
    totals = counter_windows(store, f"{name}_count", matchers, grid_ms, step_ms, quiet,
                             scrapes_ms=scrapes_ms).get("")
    if totals is None:
        totals = counts.sum(axis=1)
    return HistogramWindows(upper, counts, sums if sums is not None else
                            np.full(len(totals), np.nan), totals)


def _sum_and_count(store: SeriesStore, name: str, matchers: tuple[Matcher, ...],
                   grid_ms: np.ndarray, step_ms: int, scrapes_ms: np.ndarray | None
                   ) -> tuple[np.ndarray, np.ndarray] | None:
    """Per-window increases of histogram `name`'s `_sum` and `_count` (None without both
    or without observations)."""
    quiet = Irregularities()
    sums, totals = (counter_windows(store, f"{name}_{part}", matchers, grid_ms, step_ms, quiet,
                                    scrapes_ms=scrapes_ms).get("") for part in ("sum", "count"))
    if sums is None or totals is None or totals.sum() <= 0 or not np.isfinite(sums).all():
        return None
    return sums, totals


def mean_observation(store: SeriesStore, name: str, matchers: tuple[Matcher, ...],
                     grid_ms: np.ndarray, step_ms: int,
                     scrapes_ms: np.ndarray | None = None) -> float | None:
    """Histogram `name`'s mean observation over the export: the increase of its `_sum` over
    that of its `_count` (the buckets are not needed). None without both or without
    observations."""
    found = _sum_and_count(store, name, matchers, grid_ms, step_ms, scrapes_ms)
    return None if found is None else float(found[0].sum() / found[1].sum())


def engine_matchers(namespace: str, model_name: str) -> tuple[Matcher, ...]:
    return (Matcher("namespace", "=", namespace), Matcher("model_name", "=", model_name))

