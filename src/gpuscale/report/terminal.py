"""The comparison table printed by `simulate`, `compare` and `demo` (rich; plain when piped)."""

from __future__ import annotations

import os

from rich.console import Console
from rich.table import Table


def _fmt(value, digits: int = 2, suffix: str = "") -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}{suffix}"


SUMMARY_COLUMNS = (("strategy", "left"), ("SLO met", "right"), ("goodput/s", "right"),
                   ("TTFT p50", "right"), ("TTFT p99", "right"), ("TPOT p99", "right"),
                   ("dropped", "right"), ("replicas mean/peak", "right"), ("scale ev.", "right"),
                   ("GPU-h", "right"), ("cost $", "right"), ("idle GPU-min", "right"))


def summary_cells(run: dict) -> list[str]:
    """One run's row of the comparison table, as text (shared by the terminal and HTML)."""
    req = run["requests"]
    return [
        run["name"],
        f"{100 * run['slo_attainment']:.1f}%",
        _fmt(run["goodput_rps"]),
        _fmt(run["ttft_s"]["p50"], 2, "s"),
        _fmt(run["ttft_s"]["p99"], 2, "s"),
        _fmt(run["tpot_s"]["p99"], 3, "s"),
        f"{req['dropped']}/{req['total']}",
        f"{run['replicas']['mean']:.1f}/{run['replicas']['peak']}",
        str(run["scale_events"]),
        _fmt(run["gpu_hours"], 1),
        _fmt(run["cost_usd"], 0 if (run["cost_usd"] or 0) >= 100 else 2),
        _fmt(run["idle_gpu_minutes"], 0),
    ]


def summary_table(result_json: dict) -> Table:
    table = Table(title=f"gpuscale: {result_json['scenario']} (seed {result_json['seed']})",
                  title_justify="left")
    for header, justify in SUMMARY_COLUMNS:
        table.add_column(header, justify=justify)
    for run in result_json["runs"]:
        table.add_row(*summary_cells(run))
    return table


def make_console(stderr: bool = False) -> Console:
    """Colour only on a terminal and never with NO_COLOR set; plain text when piped."""
    return Console(stderr=stderr, no_color=bool(os.environ.get("NO_COLOR")), soft_wrap=False,
                   width=None if os.isatty(2 if stderr else 1) else 160)
