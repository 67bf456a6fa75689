"""The comparison tables printed by `simulate`, `compare` and `demo` (rich; plain when piped).

By default three narrow tables fit a 100-column terminal: the decision columns (SLO met,
latency tails, drops, replicas, cost), then the details (goodput, TTFT p50, scale events,
idle GPU time, SLO-breach minutes), then nodes and evictions when any run launched nodes.
`--wide` prints one table with every column instead. Strategy names are never cut: the
column is as wide as the longest name, and the other columns give way first.

On a terminal: SLO attainment coloured green (>= 99%), yellow (>= 90%) or red, the red also
bold, and the best attainment and the lowest cost bold. NO_COLOR drops the colours but keeps
bold (rich strips only colour). When stdout is not a terminal (a file, a CI log) the tables
are plain ASCII without styles and are never folded to a console width, so no row wraps.

A TTFT percentile that falls among requests that never got a first token (metrics/summary.py
counts them as infinite) prints as "timeout", not as a number.
"""

from __future__ import annotations

import math
import os

from rich import box
from rich.console import Console, JustifyMethod
from rich.table import Table
from rich.text import Text

from gpuscale.metrics.run_summary import load_run
from gpuscale.outputs import terminal_safe

# box.SIMPLE_HEAD in ASCII: no vertical rules, so each column costs 2 characters, not 3.
PLAIN_BOX = box.Box("    \n    \n -- \n    \n    \n -- \n    \n    \n", ascii=True)
PIPED_WIDTH = 1000  # piped output: wide enough that rich never folds a row
TIMEOUT = "timeout"


def _fmt(value, digits: int = 2, suffix: str = "") -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}{suffix}"


def ttft_text(value, total_requests: int) -> str:
    """A TTFT percentile: "timeout" when infinite (JSON writes it as null; with requests that
    arrived, a null TTFT percentile can only mean that)."""
    if (value is None and total_requests > 0) or (value is not None and math.isinf(value)):
        return TIMEOUT
    return _fmt(value, 2, "s")


SUMMARY_COLUMNS: tuple[tuple[str, JustifyMethod], ...] = (
    ("strategy", "left"), ("SLO met", "right"), ("goodput/s", "right"),
    ("TTFT p50", "right"), ("TTFT p99", "right"), ("TPOT p99", "right"),
    ("dropped", "right"), ("replicas mean/peak", "right"), ("scale ev.", "right"),
    ("GPU-h", "right"), ("cost $", "right"), ("idle GPU-min", "right"),
    ("SLO-breach min", "right"))


def summary_cells(run: dict) -> list[str]:
    """One run's full row (every column; shared by `--wide` and the HTML report). Read
    through the typed summary: a key gpuscale does not write fails here, loudly."""
    s = load_run(run)
    return [
        s.name,
        f"{100 * s.slo_attainment:.1f}%",
        _fmt(s.goodput_rps),
        ttft_text(s.ttft_s.p50, s.requests.total),
        ttft_text(s.ttft_s.p99, s.requests.total),
        _fmt(s.tpot_s.p99, 3, "s"),
        f"{s.requests.dropped}/{s.requests.total}",
        f"{s.replicas.mean:.1f}/{s.replicas.peak}",
        str(s.scale_events),
        _fmt(s.gpu_hours, 1),
        _fmt(s.cost_usd, 0 if s.cost_usd >= 100 else 2),
        _fmt(s.idle_gpu_minutes, 0),
        _fmt(s.slo_breach_minutes, 1),
    ]


# The narrow tables pick columns of the full row by header: (header shown, full header).
MAIN_COLUMNS = (("strategy", "strategy"), ("SLO met", "SLO met"), ("TTFT p99", "TTFT p99"),
                ("TPOT p99", "TPOT p99"), ("dropped", "dropped"),
                ("replicas", "replicas mean/peak"), ("GPU-h", "GPU-h"), ("cost $", "cost $"))
DETAIL_COLUMNS = (("strategy", "strategy"), ("goodput/s", "goodput/s"), ("TTFT p50", "TTFT p50"),
                  ("scale ev.", "scale ev."), ("idle GPU-min", "idle GPU-min"),
                  ("breach min", "SLO-breach min"))
_INDEX = {header: i for i, (header, _) in enumerate(SUMMARY_COLUMNS)}
_JUSTIFY = dict(SUMMARY_COLUMNS)


def _cell(value) -> Text:
    """A cell from data that may hold user text (strategy, scenario names): control
    characters escaped and never read as rich markup (`[/]` in a name crashed the table)."""
    return value if isinstance(value, Text) else Text(terminal_safe(value))


def slo_style(attainment: float) -> str:
    if attainment >= 0.99:
        return "green"
    return "yellow" if attainment >= 0.9 else "bold red"


def _table(title: str, plain: bool) -> Table:
    return Table(
        title=_cell(title),
        title_justify="left",
        box=PLAIN_BOX if plain else box.SIMPLE_HEAD,
        pad_edge=False,
        show_edge=False,
    )


def _add_columns(table: Table, columns, runs: list[dict]) -> None:
    longest = max((len(r["name"]) for r in runs), default=8)
    for shown, full in columns:
        if full == "strategy":  # never an ellipsis: as wide as the longest name, never shrunk
            table.add_column(shown, justify="left", min_width=max(longest, len(shown)),
                             no_wrap=True, overflow="fold")
        else:
            table.add_column(shown, justify=_JUSTIFY[full], no_wrap=True)


def summary_table(result_json: dict, *, plain: bool = False, wide: bool = False) -> Table:
    """The decision table (or, `wide`, every column); `plain` = ASCII and no styles."""
    runs = result_json["runs"]
    columns = tuple((h, h) for h, _ in SUMMARY_COLUMNS) if wide else MAIN_COLUMNS
    table = _table(f"gpuscale: {result_json['scenario']} (seed {result_json['seed']})", plain)
    _add_columns(table, columns, runs)
    best_slo = max((r["slo_attainment"] for r in runs), default=None)
    least_cost = min((r["cost_usd"] for r in runs), default=None)
    for run in runs:
        full: list = summary_cells(run)
        if not plain:
            bold = " bold" if run["slo_attainment"] == best_slo and len(runs) > 1 else ""
            full[_INDEX["SLO met"]] = Text(full[_INDEX["SLO met"]],
                                           style=slo_style(run["slo_attainment"]) + bold)
            if run["cost_usd"] == least_cost and len(runs) > 1:
                full[_INDEX["cost $"]] = Text(full[_INDEX["cost $"]], style="bold")
        table.add_row(*(_cell(full[_INDEX[name]]) for _, name in columns))
    return table


def details_table(result_json: dict, *, plain: bool = False) -> Table:
    """The columns the decision table leaves out, one row per run."""
    runs = result_json["runs"]
    table = _table("details", plain)
    _add_columns(table, DETAIL_COLUMNS, runs)
    for run in runs:
        full = summary_cells(run)
        table.add_row(*(_cell(full[_INDEX[name]]) for _, name in DETAIL_COLUMNS))
    return table


def _wait(nodes: dict) -> str:
    wait = nodes.get("provisioning_wait_s") or {}
    if wait.get("p50") is None and wait.get("p99") is None:
        return "-"
    return f"{_fmt(wait.get('p50'), 0)}/{_fmt(wait.get('p99'), 0)}s"


def nodes_table(result_json: dict, *, plain: bool = False) -> Table | None:
    """Layer 1 and 2 per run, when any run launched nodes or evicted pods: the provisioning
    wait (pod unschedulable -> GPUs allocatable) p50/p99, evictions and what they cost in
    requests (retried elsewhere, failed)."""
    runs = result_json["runs"]
    if not any(r.get("nodes", {}).get("launched") or r.get("nodes", {}).get("evictions")
               for r in runs):
        return None
    table = _table("nodes and evictions", plain)
    _add_columns(table, (("strategy", "strategy"),), runs)
    for header in ("provider", "launched", "wait p50/p99", "evictions", "retried", "failed"):
        table.add_column(header, justify="left" if header in ("provider", "evictions")
                         else "right")
    for run in runs:
        nodes = run.get("nodes", {})
        evictions = ", ".join(f"{k} {v}" for k, v in nodes.get("evictions", {}).items()) or "-"
        table.add_row(
            _cell(run["name"]),
            nodes.get("provider", "pool"),
            str(nodes.get("launched", 0)),
            _wait(nodes),
            evictions,
            str(nodes.get("requests_retried_after_eviction", 0)),
            str(nodes.get("requests_failed_by_eviction", 0)),
        )
    return table


def prefix_cache_table(result_json: dict, *, plain: bool = False) -> Table | None:
    """The prefix-cache hit rate per run, when any run looked prompts up (a trace with block
    hashes and prefix caching on); None otherwise, so other runs print as before."""
    runs = result_json["runs"]
    blocks = [(r, r.get("prefix_cache") or {}) for r in runs]
    if not any(b.get("hit_rate") is not None for _, b in blocks):
        return None
    table = _table("prefix cache (prompt tokens served from it)", plain)
    _add_columns(table, (("strategy", "strategy"),), runs)
    for header in ("hit rate", "hit tokens", "looked-up tokens"):
        table.add_column(header, justify="right")
    for run, block in blocks:
        rate = block.get("hit_rate")
        table.add_row(_cell(run["name"]), "-" if rate is None else f"{100 * rate:.1f}%",
                      str(block.get("hits_tokens", 0)), str(block.get("queries_tokens", 0)))
    return table


def print_summary(result_json: dict, console: Console | None = None, *,
                  wide: bool = False) -> None:
    console = console or make_console()
    plain = not console.is_terminal
    console.print(summary_table(result_json, plain=plain, wide=wide))
    if not wide:
        console.print()
        console.print(details_table(result_json, plain=plain))
    for extra in (nodes_table(result_json, plain=plain),
                  prefix_cache_table(result_json, plain=plain)):
        if extra is not None:
            console.print()
            console.print(extra)


# The tables are laid out for 100 columns (module docstring). A narrower terminal made rich
# shrink the columns and cut cells to an ellipsis ("SLO m…" at 80 columns): it gets the tables
# at 100 columns instead, wrapped by the terminal, every cell whole.
TABLE_WIDTH = 100


def make_console(stderr: bool = False) -> Console:
    """Colour only on a terminal and never with NO_COLOR set; plain text when piped."""
    console = Console(stderr=stderr, no_color=bool(os.environ.get("NO_COLOR")),
                      soft_wrap=False,
                      width=None if os.isatty(2 if stderr else 1) else PIPED_WIDTH)
    if console.width < TABLE_WIDTH:
        console.width = TABLE_WIDTH
    return console
