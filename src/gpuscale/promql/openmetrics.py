"""OpenMetrics text: the store written for `promtool tsdb create-blocks-from openmetrics`, and
such text read back into a store (a backtest reads a run, or a cluster's export).

Written family by family (`# TYPE`, `# HELP`), each series' samples in time order; a
histogram's samples grouped per series and timestamp (buckets by `le`, then `_count` and
`_sum`), as the OpenMetrics specification groups a MetricPoint. Values round-trip exactly
(Python's shortest repr, which Go's ParseFloat reads back to the same bits). Timestamps are
seconds; promtool truncates `seconds x 1000` to an integer millisecond
(model/textparse/openmetricsparse.go), so each is written in a form that lands on its own
millisecond. Staleness markers are not written (the format has no way to say one).
"""

from __future__ import annotations

import math
import re
from collections.abc import Container, Iterator
from typing import TextIO

import numpy as np

from gpuscale.promql import labels as lbl
from gpuscale.promql.errors import PromQLError
from gpuscale.promql.labels import Labels
from gpuscale.promql.store import Family, SeriesStore


def format_value(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def format_timestamp(t_ms: int) -> str:
    """Seconds that promtool reads back as exactly `t_ms` (`int64(seconds * 1000)`)."""
    for text in (repr(t_ms / 1000), f"{t_ms / 1000:.3f}", f"{(t_ms + 0.25) / 1000:.5f}"):
        if int(float(text) * 1000) == t_ms:
            return text
    raise ValueError(f"no decimal form of {t_ms} ms survives promtool's truncation")


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _series_text(labels: Labels, extra: Labels) -> str:
    pairs = [(k, v) for k, v in lbl.make({**dict(labels), **dict(extra)}) if k != lbl.NAME]
    if not pairs:
        return ""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in pairs) + "}"


def _plain(out: TextIO, family: Family, extra: Labels) -> None:
    for sid, (times, values) in sorted(family.by_series().items(),
                                       key=lambda item: family.labels[item[0]]):
        prefix = family.name + _series_text(family.labels[sid], extra) + " "
        out.writelines(f"{prefix}{format_value(v)} {format_timestamp(t)}\n"
                       for t, v in zip(times.tolist(), values.tolist(), strict=True))


def _histogram(out: TextIO, families: list[Family], extra: Labels) -> None:
    """Buckets, count and sum of each series at each timestamp, together; one series (a
    label set less `le`) at a time, so memory holds one series' lines, not a family's."""
    by_key: dict[Labels, list[tuple[tuple[int, float], str, np.ndarray, np.ndarray]]] = {}
    for family in families:
        for sid, (times, values) in family.by_series().items():
            labels = family.labels[sid]
            bound = float(lbl.get(labels, lbl.BUCKET) or "inf")
            rank = (0, bound) if family.name.endswith("_bucket") else (
                (1, 0.0) if family.name.endswith("_count") else (2, 0.0))
            prefix = family.name + _series_text(labels, extra) + " "
            by_key.setdefault(lbl.without(labels, (lbl.NAME, lbl.BUCKET)), []).append(
                (rank, prefix, times, values))
    for key in sorted(by_key):
        members = sorted(by_key[key], key=lambda member: member[0])
        cells: dict[int, list[str]] = {}
        for _, prefix, times, values in members:
            for t, v in zip(times.tolist(), values.tolist(), strict=True):
                cells.setdefault(t, []).append(f"{prefix}{format_value(v)} "
                                               f"{format_timestamp(t)}\n")
        for t in sorted(cells):
            out.writelines(cells[t])


def write(out: TextIO, parts: list[tuple[SeriesStore, dict[str, str]]]) -> int:
    """Every family of every store, each with its extra labels (a `run` label keeps several
    runs apart), one `# TYPE` per family; returns the number of families written. Ends with
    `# EOF`. Lazy families (recording rules) must be filled first (`materialise_all`)."""
    metadata: dict[str, tuple[str, str, tuple[str, ...]]] = {}
    names: set[str] = set()
    for store, _ in parts:
        metadata.update(store.metadata)
        names.update(store.families)
    described = {sample for _, _, samples in metadata.values() for sample in samples}
    entries = [(name, *metadata[name]) for name in metadata] + [
        (name, "unknown", "", (name,)) for name in names - described]
    count = 0
    for name, kind, help_text, sample_names in sorted(entries):
        members = [(store.families[s], lbl.make(extra)) for store, extra in parts
                   for s in sample_names
                   if s in store.families and store.families[s].num_samples()]
        if not members:
            continue
        count += 1
        out.write(f"# TYPE {name} {kind}\n")
        if help_text:
            out.write(f"# HELP {name} {_escape(help_text)}\n")
        if kind == "histogram":
            for extra in dict.fromkeys(extra for _, extra in members):
                _histogram(out, [f for f, e in members if e == extra], extra)
        else:
            for family, extra in members:
                _plain(out, family, extra)
    out.write("# EOF\n")
    return count


_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)?(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})?\s+(\S+)'
                     r'(?:\s+(\S+))?\s*(?:#.*)?$')
_PAIR = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')


def _unescape(value: str) -> str:
    return re.sub(r'\\(.)', lambda m: "\n" if m.group(1) == "n" else m.group(1), value)


def parse_samples(text: str, *, source: str = "<text>", names: Container[str] | None = None
                  ) -> Iterator[tuple[str, Labels, float, int | None]]:
    """(name, labels, value, timestamp ms or None) of every sample line (OpenMetrics, the
    Prometheus text format, or `promtool tsdb dump`'s lines); comments and metadata skipped,
    and samples of metrics not in `names` (when given).

    `promtool tsdb dump` (Prometheus 2.x, cmd/promtool/tsdb.go `dumpSamples`) writes
    `{__name__="x", a="b"} value milliseconds`: the name among the labels and the timestamp in
    milliseconds, where OpenMetrics has seconds."""
    # A series' text repeats on every one of its samples: its name and labels are parsed
    # once (the regex still reads every line whose series is new, or that has no timestamp).
    series: dict[str, tuple[str, Labels, bool] | None] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.rsplit(None, 2)
        known = series.get(parts[0]) if len(parts) == 3 and "#" not in line else None
        if known is None:
            known = _series_of(line, number, source)
            found = _SAMPLE.match(line)
            assert found is not None
            value, stamp = found.group(3), found.group(4)
            if len(parts) == 3 and "#" not in line and (value, stamp) == (parts[1], parts[2]):
                series[parts[0]] = known  # the same split as the regex's: safe to reuse
        else:
            value, stamp = parts[1], parts[2]
        name, labels, dump = known
        if names is not None and name not in names:
            continue
        try:
            number_value = float(value)
            t_ms = None if stamp is None else (
                int(stamp) if dump else int(float(stamp) * 1000))
        except ValueError:
            raise PromQLError(f"{source}:{number}: bad value or timestamp in {line[:80]!r}") \
                from None
        yield name, labels, number_value, t_ms


def _series_of(line: str, number: int, source: str) -> tuple[str, Labels, bool]:
    """(name, labels, whether it is promtool's dump form) of a sample line."""
    found = _SAMPLE.match(line)
    if found is None or (found.group(1) is None and found.group(2) is None):
        raise PromQLError(f"{source}:{number}: not a sample line: {line[:80]!r}")
    name, body = found.group(1), found.group(2)
    pairs = {k: _unescape(v) for k, v in _PAIR.findall(body[1:-1])} if body else {}
    dump = name is None  # promtool's dump: milliseconds, the name a label
    name = pairs.get(lbl.NAME, "") if dump else name
    if not name:
        raise PromQLError(f"{source}:{number}: a sample without a metric name: {line[:80]!r}")
    return name, lbl.make({**pairs, lbl.NAME: name}), dump


def read(text: str, *, source: str = "<text>", origin_ms: int = 0,
         names: Container[str] | None = None) -> SeriesStore:
    """A store holding every timestamped sample of `text` (an untimestamped one is refused:
    a backfill needs times); only the metrics in `names` when given."""
    by_name: dict[str, list[tuple[int, Labels, float]]] = {}
    for name, labels, value, t_ms in parse_samples(text, source=source, names=names):
        if t_ms is None:
            raise PromQLError(f"{source}: sample {lbl.text(labels)} has no timestamp")
        by_name.setdefault(name, []).append((t_ms, labels, value))
    store = SeriesStore(origin_ms=origin_ms)
    store.load(by_name)
    return store
