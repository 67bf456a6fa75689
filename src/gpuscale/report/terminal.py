"""The comparison table printed by `simulate`, `compare` and `demo` (rich; plain when piped).

On a terminal: unicode box, SLO attainment coloured green (>= 99%), yellow (>= 90%) or red,
the red also bold, and the best attainment and the lowest cost bold. NO_COLOR drops the
colours but keeps bold (rich strips only colour), so the reading survives. When stdout is not
a terminal (a file, a CI log) the table is plain ASCII without styles, fixed 160 columns wide.
"""

from __future__ import annotations

import os

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from gpuscale.outputs import terminal_safe


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


def _cell(value) -> Text:
    """A cell from data that may hold user text (strategy, scenario names): control
    characters escaped and never read as rich markup (`[/]` in a name crashed the table)."""
    return value if isinstance(value, Text) else Text(terminal_safe(value))


def slo_style(attainment: float) -> str:
    if attainment >= 0.99:
        return "green"
    return "yellow" if attainment >= 0.9 else "bold red"


def summary_table(result_json: dict, *, plain: bool = False) -> Table:
    """The comparison table; `plain` = ASCII box and no styles (for files and logs)."""
    table = Table(title=_cell(f"gpuscale: {result_json['scenario']} (seed {result_json['seed']})"),
                  title_justify="left", box=box.ASCII if plain else box.HEAVY_HEAD)
    for header, justify in SUMMARY_COLUMNS:
        table.add_column(header, justify=justify)
    runs = result_json["runs"]
    best_slo = max((r["slo_attainment"] for r in runs), default=None)
    least_cost = min((r["cost_usd"] for r in runs), default=None)
    for run in runs:
        cells: list = summary_cells(run)
        if not plain:
            bold = " bold" if run["slo_attainment"] == best_slo and len(runs) > 1 else ""
            cells[1] = Text(cells[1], style=slo_style(run["slo_attainment"]) + bold)
            if run["cost_usd"] == least_cost and len(runs) > 1:
                cells[10] = Text(cells[10], style="bold")
        table.add_row(*map(_cell, cells))
    return table


def _wait(nodes: dict, key: str) -> str:
    value = (nodes.get("provisioning_wait_s") or {}).get(key)
    return "-" if value is None else f"{value:.0f}s"


def nodes_table(result_json: dict, *, plain: bool = False) -> Table | None:
    """Layer 1 and 2 per run, when any run launched nodes or evicted pods: the provisioning
    wait (pod unschedulable -> GPUs allocatable), evictions and what they cost in requests."""
    runs = result_json["runs"]
    if not any(r.get("nodes", {}).get("launched") or r.get("nodes", {}).get("evictions")
               for r in runs):
        return None
    table = Table(title="nodes and evictions", title_justify="left",
                  box=box.ASCII if plain else box.HEAVY_HEAD)
    for header in ("strategy", "provider", "launched", "wait p50", "wait p99", "evictions",
                   "requests retried", "requests failed", "SLO-breach min"):
        table.add_column(header, justify="left" if header in ("strategy", "provider",
                                                              "evictions") else "right")
    for run in runs:
        nodes = run.get("nodes", {})
        evictions = ", ".join(f"{k} {v}" for k, v in nodes.get("evictions", {}).items()) or "-"
        table.add_row(_cell(run["name"]), nodes.get("provider", "pool"), str(nodes.get("launched", 0)),
                      _wait(nodes, "p50"), _wait(nodes, "p99"), evictions,
                      str(nodes.get("requests_retried_after_eviction", 0)),
                      str(nodes.get("requests_failed_by_eviction", 0)),
                      _fmt(run.get("slo_breach_minutes"), 1))
    return table


def print_summary(result_json: dict, console: Console | None = None) -> None:
    console = console or make_console()
    plain = not console.is_terminal
    console.print(summary_table(result_json, plain=plain))
    extra = nodes_table(result_json, plain=plain)
    if extra is not None:
        console.print(extra)


def make_console(stderr: bool = False) -> Console:
    """Colour only on a terminal and never with NO_COLOR set; plain text when piped."""
    return Console(stderr=stderr, no_color=bool(os.environ.get("NO_COLOR")), soft_wrap=False,
                   width=None if os.isatty(2 if stderr else 1) else 160)
