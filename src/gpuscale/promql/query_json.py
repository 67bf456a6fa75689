"""A Prometheus HTTP API response read into a store: a matrix (each series' `values`) or a
vector (each series' one `value`). A backtest replays such an export of a real cluster
through the same evaluator. The raw samples are what an instant query of a range selector
returns (`/api/v1/query?query={__name__=~"vllm:.*"}[6h]&time=END`); a `query_range` answer is
resampled at its step (each step's value is the latest sample within the lookback), so
`*_over_time` and `rate` read it differently from the raw series. Values are the API's
strings ("NaN", "+Inf" included); times are Unix seconds, read to the millisecond.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gpuscale.promql import labels as lbl
from gpuscale.promql.errors import PromQLError
from gpuscale.promql.labels import Labels
from gpuscale.promql.store import SeriesStore


def _series(item: Any, where: str) -> tuple[str, Labels, list]:
    if not isinstance(item, dict) or not isinstance(item.get("metric"), dict):
        raise PromQLError(f"{where}: expected {{\"metric\": {{...}}, \"values\": [...]}}")
    metric = {str(k): str(v) for k, v in item["metric"].items()}
    name = metric.get(lbl.NAME)
    if not name:
        raise PromQLError(f"{where}: the series has no __name__ (a query's result, not raw "
                          "series: export them with a query_range of `{__name__=~\".+\"}`)")
    points = item.get("values")
    if points is None and "value" in item:
        points = [item["value"]]
    if not isinstance(points, list):
        raise PromQLError(f"{where}: expected `values` (query_range) or `value` (query)")
    return name, lbl.make(metric), points


def responses(document: Any) -> list[tuple[str, Any]]:
    """(where, response) of each API response in `document`: one response, or an object
    mapping names to responses (several queries saved in one file, as `calibrate --fit`
    reads them)."""
    if isinstance(document, dict) and document and "data" not in document and all(
            isinstance(v, dict) and "data" in v for v in document.values()):
        return [(f"{key}.", value) for key, value in document.items()]
    return [("", document)]


def _response_rows(response: Any, where: str, source: str,
                   by_name: dict[str, list[tuple[int, Labels, float]]]) -> None:
    if isinstance(response, dict) and response.get("status") == "error":
        raise PromQLError(f"{source}: {where}status: the query failed "
                          f"({response.get('error', 'no error text')})")
    data = response.get("data", response) if isinstance(response, dict) else None
    if not isinstance(data, dict) or data.get("resultType") not in ("matrix", "vector"):
        raise PromQLError(f"{source}: {where}data: expected a query_range (matrix) or query "
                          "(vector) response")
    result = data.get("result")
    if not isinstance(result, list):
        raise PromQLError(f"{source}: {where}data.result is not a list")
    for index, item in enumerate(result):
        at = f"{source}: {where}data.result[{index}]"
        name, labels, points = _series(item, at)
        rows = by_name.setdefault(name, [])
        for point in points:
            try:
                t_s, value = point
                rows.append((round(float(t_s) * 1000), labels, float(value)))
            except (TypeError, ValueError):
                raise PromQLError(f"{at}: bad sample {point!r} (expected [time, \"value\"])")\
                    from None


def read(document: Any, *, source: str = "<json>", origin_ms: int = 0) -> SeriesStore:
    """A store with every sample of `document` (the decoded JSON of an API response, or its
    `data` member, or an object mapping names to responses)."""
    by_name: dict[str, list[tuple[int, Labels, float]]] = {}
    for where, response in responses(document):
        _response_rows(response, where, source, by_name)
    store = SeriesStore(origin_ms=origin_ms)
    store.load(by_name)
    return store


def format_value(value: float) -> str:
    """A sample value as the API writes it (Go's FormatFloat 'f', -1: no exponent)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return np.format_float_positional(value, trim="-")


def range_response(store: SeriesStore, query: str, start_ms: int, end_ms: int,
                   step_ms: int) -> dict:
    """What `/api/v1/query_range` answers for `query` over the store: each resulting series at
    each step where it has a value (a raw selector's series: their latest sample within the
    5-minute lookback, the raw series a backtest exports; tests/backtest compare it with a
    real Prometheus' answer)."""
    from gpuscale.promql.engine import Engine
    from gpuscale.promql.values import Vector

    value = Engine(store).range_query(query, start_ms, end_ms, step_ms)
    if not isinstance(value, Vector):
        raise PromQLError(f"{query}: a range query's result is series, not a scalar or string")
    times = np.arange(start_ms, end_ms + 1, step_ms, dtype=np.int64) / 1000.0
    result = []
    for row, labels in sorted(enumerate(value.labels), key=lambda item: item[1]):
        present = np.flatnonzero(value.present[row])
        if len(present):
            result.append({"metric": dict(labels), "values": [
                [float(times[i]) if times[i] % 1 else int(times[i]),
                 format_value(float(value.values[row, i]))] for i in present]})
    return {"status": "success", "data": {"resultType": "matrix", "result": result}}
