"""PromQL over columnar series: what Prometheus would answer, without a Prometheus.

Belongs here: the series store (`store.SeriesStore`: one family of columns per metric name,
filled by the simulation's scrape or read from a file), the parse adapter (`parse`), the
evaluator (`engine.Engine`: instant and range evaluation as Prometheus 2.x does it, vectorised
over steps with numpy), recording rules (`rules`), and the file formats (`openmetrics`: write
and read OpenMetrics text; `query_json`: read a `/api/v1/query_range` response). Must not
import the simulation: a backtest reads series from a file and queries them the same way.

    from gpuscale.promql import Engine, SeriesStore
    store = SeriesStore(origin_ms=0)
    store.append("vllm:num_requests_waiting", t_ms=15_000,
                 labels=[{"pod": "a"}, {"pod": "b"}], values=[3.0, 4.0])
    Engine(store).instant("sum(vllm:num_requests_waiting)", t_ms=30_000)  # -> Vector, one row

The API is documented in docs/promql.md; the semantics (lookback 5 min, closed range
windows, extrapolation, vector matching) follow Prometheus 2.42's `promql/engine.go` and
`promql/functions.go`, checked against promtool in tests/promql.
"""

from __future__ import annotations

from gpuscale.promql.engine import Engine, Scalar, StringValue, Vector
from gpuscale.promql.errors import PromQLError
from gpuscale.promql.store import SeriesStore

__all__ = ["Engine", "PromQLError", "Scalar", "SeriesStore", "StringValue", "Vector"]
