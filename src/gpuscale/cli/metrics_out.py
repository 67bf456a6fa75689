"""`--metrics-out FILE` and `--start-time`: the runs' series as OpenMetrics text, timestamped
from the wall-clock start, ready for `promtool tsdb create-blocks-from openmetrics`
(docs/promql.md walks from a run to a Grafana panel)."""

from __future__ import annotations

import io
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

import click

from gpuscale.cli.io import OutputFile, check_output_path


class Rfc3339(click.ParamType):
    """An RFC 3339 instant with an offset (2026-01-01T00:00:00Z)."""

    name = "rfc3339"

    def convert(self, value, param, ctx):
        if isinstance(value, datetime):
            return value
        text = str(value).strip()
        try:
            moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z"))
                                            else text)
        except ValueError:
            self.fail(f"{value!r} is not an RFC 3339 time (e.g. 2026-01-01T00:00:00Z)",
                      param, ctx)
        if moment.tzinfo is None:
            self.fail(f"{value!r} has no UTC offset (add Z or +02:00)", param, ctx)
        from gpuscale.units import outside_wall_clock_range

        if (why := outside_wall_clock_range(moment)) is not None:
            self.fail(why, param, ctx)
        return moment


def metrics_out_option(fn):
    """`--metrics-out FILE` (backtest: its runs start at the history's own time)."""
    return click.option("--metrics-out", "metrics_out", type=OutputFile(),
                        default=None,
                        help="Write every series of the run (vLLM, DCGM, kube-state-metrics, "
                             "gateway, KEDA, recording rules) here as OpenMetrics text, for "
                             "promtool tsdb create-blocks-from openmetrics.")(fn)


def metrics_options(fn):
    """`--metrics-out FILE` and `--start-time TIME`, shared by simulate and compare."""
    fn = click.option("--start-time", "start_time", type=Rfc3339(), default=None,
                      help="Wall-clock time of simulated t=0 (RFC 3339; default the "
                           "scenario's start_time, 2026-01-01T00:00:00Z): the exported "
                           "samples' timestamps.")(fn)
    return metrics_out_option(fn)


def check_metrics_path(path: Path | None, *, force: bool) -> None:
    if path is not None:
        check_output_path(path, force=force)


def write_metrics(path: Path, runs: list[Any], *, force: bool) -> int:
    """Each run's series (runs after the first, and the first when there are several, carry
    a `run` label so one Prometheus can hold them apart); returns the families written."""
    from gpuscale.outputs import write_streamed
    from gpuscale.promql import openmetrics

    check_output_path(path, force=force)
    written = [0]

    parts = []
    for run in runs:
        prometheus = run.prometheus
        if prometheus is not None:
            prometheus.store.materialise_all(prometheus.end_ms)
            parts.append((prometheus.store, {"run": run.name} if len(runs) > 1 else {}))

    def produce(handle: BinaryIO) -> None:
        text = io.TextIOWrapper(handle, encoding="utf-8", newline="\n")
        written[0] = openmetrics.write(text, parts)
        text.flush()
        text.detach()

    write_streamed(path, produce)
    return written[0]
