"""Prometheus itself as the oracle: the same series and queries through `promtool test rules`.

Each query becomes a `promql_expr_test` with no expected samples, so promtool prints what
Prometheus returned (labels and every digit of the value) or the evaluation error; a query
whose result is empty passes and prints nothing. A `# qN` comment after each query maps
promtool's lines back to the queries. Skipped (by the callers) without promtool.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from gpuscale.promql import Engine, PromQLError, Scalar, SeriesStore, Vector
from gpuscale.promql.labels import Labels
from gpuscale.promql.labels import make as make_labels

PROMTOOL = shutil.which("promtool")
STALE = "stale"
GAP = "_"


@dataclass(frozen=True)
class InputSeries:
    """One series of the promtool input notation: values at 0, interval, 2 x interval, ..."""

    name: str
    labels: dict
    values: tuple  # float, GAP or STALE

    def notation(self) -> str:
        body = ", ".join(f'{k}="{v}"' for k, v in sorted(self.labels.items()))
        return f"{self.name}{{{body}}}"

    def promtool_values(self) -> str:
        return " ".join(v if isinstance(v, str) else repr(float(v)) for v in self.values)


def store_of(series: list[InputSeries], interval_ms: int) -> SeriesStore:
    """The same samples in our store (a stale entry as Prometheus' staleness marker)."""
    from gpuscale.promql.store import STALE_NAN

    store = SeriesStore(origin_ms=0)
    steps = max(len(s.values) for s in series)
    for k in range(steps):
        for s in series:
            if k < len(s.values) and s.values[k] != GAP:
                value = STALE_NAN if s.values[k] == STALE else float(s.values[k])
                store.append(s.name, k * interval_ms, [s.labels], [value])
    return store


Result = dict[Labels, float] | str  # label set -> value, or "error"


def prometheus(series: list[InputSeries], queries: list[tuple[str, int]], interval_ms: int,
               tmp: Path, evaluation_interval_s: int = 15) -> list[Result]:
    """What Prometheus answers for each (query, eval time ms)."""
    tests = [{"expr": f"{q} # q{i}", "eval_time": f"{t}ms", "exp_samples": []}
             for i, (q, t) in enumerate(queries)]
    # promtool's in-memory head returns series in creation order; a Prometheus reading blocks
    # returns them sorted by labels, as our store does: create them in that order.
    series = sorted(series, key=lambda s: make_labels({**s.labels, "__name__": s.name}))
    doc = {"evaluation_interval": f"{evaluation_interval_s}s", "tests": [{
        "interval": f"{interval_ms}ms",
        "input_series": [{"series": s.notation(), "values": s.promtool_values()}
                         for s in series],
        "promql_expr_test": tests}]}
    path = tmp / "oracle.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert PROMTOOL is not None
    run = subprocess.run([PROMTOOL, "test", "rules", str(path)], capture_output=True,
                         text=True, timeout=300)
    return _parse(run.stdout + run.stderr, len(queries))


_EXPR = re.compile(r'expr: ".*# q(\d+)", time: [^,]*,(?: err: (.*))?$')
_SAMPLE = re.compile(r'(\{[^}]*\}) (\S+?)(?:, |$)')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def _parse(output: str, count: int) -> list[Result]:
    results: list[Result] = [{} for _ in range(count)]
    current = None
    for line in output.splitlines():
        found = _EXPR.search(line)
        if found:
            current = int(found.group(1))
            if found.group(2) is not None:
                results[current] = "error"
            continue
        stripped = line.strip()
        if current is not None and stripped.startswith("got:"):
            results[current] = {
                make_labels(_LABEL.findall(labels)): float(value)
                for labels, value in _SAMPLE.findall(stripped[len("got:"):].strip())}
    return results


def ours(store: SeriesStore, queries: list[tuple[str, int]],
         evaluation_interval_s: int = 15) -> list[Result]:
    engine = Engine(store, subquery_step_ms=evaluation_interval_s * 1000)
    out: list[Result] = []
    for query, t_ms in queries:
        try:
            value = engine.instant(query, t_ms)
        except PromQLError:
            out.append("error")
            continue
        if isinstance(value, Scalar):
            out.append({(): float(value.values[0])})
        else:
            assert isinstance(value, Vector)
            out.append(dict(value.rows()))
    return out


def same(a: float, b: float, rel: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if a == b:
        return True
    return rel > 0 and bool(np.isclose(a, b, rtol=rel, atol=0.0))


def mismatches(expected: list[Result], got: list[Result], queries: list[tuple[str, int]],
               rel: float = 0.0) -> list[str]:
    """Human-readable differences (empty when every query agrees)."""
    out = []
    for (query, t_ms), want, have in zip(queries, expected, got, strict=True):
        if isinstance(want, str) or isinstance(have, str):
            if want != have:
                out.append(f"{query} @ {t_ms}: prometheus {want!r}, gpuscale {have!r}")
            continue
        if set(want) != set(have) or not all(same(want[k], have[k], rel) for k in want):
            out.append(f"{query} @ {t_ms}: prometheus {want}, gpuscale {have}")
    return out
