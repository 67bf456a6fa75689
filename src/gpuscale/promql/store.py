"""The series store: per metric name, one family of columns (time, series id, value).

Samples of a family are kept in time order in three growing numpy columns, so the samples a
query needs (its window: lookback plus range) are one `searchsorted` slice, whatever the
length of the run; a series is an id into the family's label table. Memory is 20 bytes a
sample. A family may be *lazy*: a `materialise(t_ms)` callback fills it up to `t_ms` when a
query first reads it (recording rules, series derived from the request table), so nothing is
computed that no query or export reads.

Times are integer milliseconds since the Unix epoch, as Prometheus stores them: `origin_ms`
is the wall-clock instant of simulated t=0 (the scenario's `start_time`), so subquery steps
and `time()` fall where they fall in the user's Prometheus.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from gpuscale.promql import labels as lbl
from gpuscale.promql.labels import Labels
from gpuscale.promql.parse import Matcher

# Prometheus's staleness marker: a NaN with this bit pattern (model/value/value.go
# StaleNaN); a sample holding it ends the series for instant lookups and is skipped in ranges.
STALE_NAN_BITS = 0x7FF0000000000002
STALE_NAN = float(np.array([STALE_NAN_BITS], dtype=np.uint64).view(np.float64)[0])


def is_stale(values: np.ndarray) -> np.ndarray:
    return values.view(np.uint64) == np.uint64(STALE_NAN_BITS)


class _Column:
    """A numpy column that grows by doubling (appends are amortised O(1))."""

    __slots__ = ("data", "size")

    def __init__(self, dtype: type) -> None:
        self.data: np.ndarray = np.empty(64, dtype=dtype)
        self.size = 0

    def extend(self, values: np.ndarray | int | float, count: int | None = None) -> None:
        """Append `values` (an array, or one value `count` times)."""
        need = self.size + (len(values) if count is None else count)  # type: ignore[arg-type]
        if need > len(self.data):
            grown = np.empty(max(need, 2 * len(self.data)), dtype=self.data.dtype)
            grown[:self.size] = self.data[:self.size]
            self.data = grown
        self.data[self.size:need] = values
        self.size = need

    def view(self) -> np.ndarray:
        return self.data[:self.size]


@dataclass
class Family:
    """All series of one metric name, their samples in time order."""

    name: str
    help: str = ""
    type: str = "gauge"  # the OpenMetrics type of the exporter's family (export only)
    labels: list[Labels] = field(default_factory=list)
    index: dict[Labels, int] = field(default_factory=dict)
    t_ms: _Column = field(default_factory=lambda: _Column(np.int64))
    sid: _Column = field(default_factory=lambda: _Column(np.int32))
    val: _Column = field(default_factory=lambda: _Column(np.float64))
    materialise: Callable[[int], None] | None = None
    # Shared with the store: bumped by every append, so cached query results know they are old.
    revision: list[int] = field(default_factory=lambda: [0])

    def series_id(self, labels: Labels) -> int:
        found = self.index.get(labels)
        if found is None:
            found = self.index[labels] = len(self.labels)
            self.labels.append(labels)
        return found

    def append(self, t_ms: int | np.ndarray, sids: np.ndarray, values: np.ndarray) -> None:
        """Samples at or after the family's last time (in time order when `t_ms` varies)."""
        n = len(sids)
        if n == 0:
            return
        first = int(t_ms) if isinstance(t_ms, (int, np.integer)) else int(t_ms[0])
        if self.t_ms.size and first < self.t_ms.data[self.t_ms.size - 1]:
            raise ValueError(f"{self.name}: samples must be appended in time order")
        self.revision[0] += 1
        self.t_ms.extend(t_ms, n)
        self.sid.extend(np.asarray(sids, dtype=np.int32))
        self.val.extend(np.asarray(values, dtype=np.float64))

    def window(self, lo_ms: int, hi_ms: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(times, series ids, values) of the samples with lo <= t <= hi, in time order."""
        if self.materialise is not None:
            self.materialise(hi_ms)
        times = self.t_ms.view()
        start = int(np.searchsorted(times, lo_ms, side="left"))
        stop = int(np.searchsorted(times, hi_ms, side="right"))
        return times[start:stop], self.sid.view()[start:stop], self.val.view()[start:stop]

    def num_samples(self) -> int:
        return self.t_ms.size

    def by_series(self) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """Each series' (times, values) in time order, staleness markers left out (a lazy
        family: what it holds so far)."""
        t, sid, v = self.t_ms.view(), self.sid.view(), self.val.view()
        keep = ~is_stale(v)
        t, sid, v = t[keep], sid[keep], v[keep]
        order = np.argsort(sid, kind="stable")
        t, sid, v = t[order], sid[order], v[order]
        bounds = np.flatnonzero(np.diff(sid)) + 1
        out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for start, stop in zip(np.r_[0, bounds], np.r_[bounds, len(sid)], strict=True):
            if stop > start:
                out[int(sid[start])] = (t[start:stop], v[start:stop])
        return out


@dataclass
class SeriesStore:
    """Families by metric name; what `Engine` queries and `openmetrics` writes."""

    origin_ms: int = 0
    families: dict[str, Family] = field(default_factory=dict)
    # OpenMetrics family name -> (type, help, its sample names), for the export.
    metadata: dict[str, tuple[str, str, tuple[str, ...]]] = field(default_factory=dict)
    _selection_cache: dict[tuple, tuple[int, list]] = field(default_factory=dict)
    _selected: dict[tuple, list[tuple[Family, int]]] = field(default_factory=dict)
    _revision: list[int] = field(default_factory=lambda: [0])

    @property
    def revision(self) -> int:
        """Changes whenever a sample is added (query caches compare it)."""
        return self._revision[0]

    def family(self, name: str, *, help: str = "", type: str = "gauge") -> Family:
        found = self.families.get(name)
        if found is None:
            found = self.families[name] = Family(name, help, type, revision=self._revision)
            self._revision[0] += 1
        return found

    def describe(self, name: str, type: str, help: str, sample_names: tuple[str, ...]) -> None:
        """Declare an exporter's family (`vllm:prompt_tokens`, a counter, sampled as
        `vllm:prompt_tokens_total`): the export writes its samples under one `# TYPE`."""
        self.metadata[name] = (type, help, sample_names)
        for sample in sample_names:
            self.family(sample, help=help, type=type)

    def append(self, name: str, t_ms: int, labels: Sequence[Mapping[str, str] | Labels],
               values: Sequence[float] | np.ndarray) -> None:
        """One timestamp's samples of one metric: each label set (without `__name__`) with its
        value."""
        family = self.family(name)
        sids = np.fromiter((family.series_id(_with_name(name, ls)) for ls in labels),
                           dtype=np.int32, count=len(labels))
        family.append(t_ms, sids, np.asarray(values, dtype=np.float64))

    def load(self, rows_by_name: Mapping[str, list[tuple[int, Labels, float]]]) -> None:
        """Samples read from a file: per metric name, (t ms, labels with __name__, value) in
        any order (sorted here; a family must not hold samples yet)."""
        for name, rows in rows_by_name.items():
            rows = sorted(rows, key=lambda row: row[0])
            family = self.family(name)
            sids = np.array([family.series_id(labels) for _, labels, _ in rows],
                            dtype=np.int32)
            family.append(np.array([t for t, _, _ in rows], dtype=np.int64), sids,
                          np.array([v for _, _, v in rows]))

    def lazy(self, name: str, materialise: Callable[[int], None], *, help: str = "",
             type: str = "gauge") -> Family:
        """A family filled by `materialise(t_ms)` when first read up to `t_ms`."""
        family = self.family(name, help=help, type=type)
        family.materialise = materialise
        return family

    def materialise_all(self, t_ms: int) -> None:
        for family in list(self.families.values()):
            if family.materialise is not None:
                family.materialise(t_ms)

    def select(self, matchers: tuple[Matcher, ...], until_ms: int | None = None
               ) -> list[tuple[Family, int]]:
        """(family, series id) of every series the matchers select, sorted by labels (the
        order a Prometheus querier returns); lazy families are filled up to `until_ms` first
        (their series may not exist before)."""
        names = [m for m in matchers if m.name == lbl.NAME]
        if names and names[0].op == "=":
            candidates: Iterable[Family] = (
                [self.families[names[0].value]] if names[0].value in self.families else [])
        else:
            candidates = [f for f in self.families.values() if all(
                m.matches(f.name) for m in names)]
        candidates = list(candidates)
        for family in candidates:
            if family.materialise is not None and until_ms is not None:
                family.materialise(until_ms)
        # Families only grow: the selection is the same while no family gained a series.
        key = (matchers, tuple((f.name, len(f.labels)) for f in candidates))
        found = self._selected.get(key)
        if found is not None:
            return found
        out: list[tuple[Labels, Family, int]] = []
        for family in candidates:
            out.extend((ls, family, sid) for sid, ls in
                       enumerate(self._matching(family, matchers)) if ls is not None)
        out.sort(key=lambda item: item[0])
        found = [(family, sid) for _, family, sid in out]
        if len(self._selected) > 1024:
            self._selected.clear()
        self._selected[key] = found
        return found

    def _matching(self, family: Family, matchers: tuple[Matcher, ...]) -> list[Labels | None]:
        """Each series' labels if the matchers select it, else None (cached per family size:
        a family only grows)."""
        key = (family.name, matchers)
        cached = self._selection_cache.get(key)
        count = len(family.labels)
        if cached is not None and cached[0] == count:
            return cached[1]
        done: list = list(cached[1]) if cached is not None else []
        for ls in family.labels[len(done):]:
            ok = all(m.matches(lbl.get(ls, m.name)) for m in matchers if m.name != lbl.NAME)
            done.append(ls if ok else None)
        self._selection_cache[key] = (count, done)
        return done


def _with_name(name: str, labels: Mapping[str, str] | Labels) -> Labels:
    pairs = dict(labels)
    pairs[lbl.NAME] = name
    return lbl.make(pairs)
