import io
import re

from rich.console import Console

from gpuscale.report.terminal import make_console, print_summary

from .results import tiny_json

COLOUR = re.compile(r"\x1b\[[0-9;]*(3[0-7]|38;|9[0-7])[0-9;]*m")  # a foreground colour
BOLD = re.compile(r"\x1b\[(?:[0-9;]*;)?1(?:;[0-9;]*)?m")


def _printed(**console_args) -> str:
    buffer = io.StringIO()
    print_summary(tiny_json(series=False), Console(file=buffer, width=200, **console_args))
    return buffer.getvalue()


def test_terminal_output_has_colour_and_bold():
    text = _printed(force_terminal=True, color_system="standard")
    assert COLOUR.search(text) and BOLD.search(text)


def test_no_color_keeps_bold_but_drops_colour(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    assert make_console().no_color
    text = _printed(force_terminal=True, color_system="standard", no_color=True)
    assert not COLOUR.search(text) and BOLD.search(text)


def test_piped_output_is_plain_ascii_with_every_run():
    text = _printed(force_terminal=False)
    assert "\x1b" not in text and text.isascii()
    for run in tiny_json(series=False)["runs"]:
        assert run["name"] in text
    # Columns line up: the header and every row of the decision table end at one width.
    summary = text.split("details")[0].splitlines()[1:]
    rows = [line.rstrip() for line in summary if line.strip() and not line.startswith("--")]
    assert len(rows) == 1 + len(tiny_json(series=False)["runs"])
    assert len({len(r) for r in rows}) == 1


def _long_name_result(name: str) -> dict:
    data = tiny_json(series=False)
    data["runs"][0]["name"] = name
    return data


def test_default_tables_fit_100_columns_and_never_cut_a_strategy_name():
    name = "keda-min0-on-gateway-queue-x2"
    for terminal in (True, False):
        buffer = io.StringIO()
        console = Console(file=buffer, width=100, force_terminal=terminal, color_system=None)
        print_summary(_long_name_result(name), console)
        text = buffer.getvalue()
        assert max(len(line.rstrip()) for line in text.splitlines()) <= 100
        assert name in text and "\u2026" not in text and "..." not in text


def test_piped_output_never_folds_a_row_and_wide_has_every_column():
    from gpuscale.report.terminal import SUMMARY_COLUMNS, make_console

    console = make_console()  # stdout is not a terminal under pytest
    assert not console.is_terminal and console.width >= 500
    buffer = io.StringIO()
    print_summary(tiny_json(series=False), Console(file=buffer, width=400), wide=True)
    text = buffer.getvalue()
    header = next(line for line in text.splitlines() if line.startswith("strategy"))
    for column, _ in SUMMARY_COLUMNS:
        assert column in header, column
    rows = [line for line in text.split("nodes and")[0].splitlines() if line.startswith("fixed-1")]
    assert len(rows) == 1  # one line per run: nothing wrapped


def test_a_ttft_that_never_came_prints_timeout_not_a_number():
    data = tiny_json(series=False)
    data["runs"][0]["ttft_s"]["p99"] = float("inf")
    data["runs"][1]["ttft_s"]["p99"] = None  # as read back from JSON, with requests arrived
    buffer = io.StringIO()
    print_summary(data, Console(file=buffer, width=200))
    assert buffer.getvalue().count("timeout") == 2 and "inf" not in buffer.getvalue()


def test_nodes_table_shows_provisioning_wait_and_evictions_only_when_nodes_moved():
    from rich.console import Console

    from gpuscale.report.terminal import nodes_table

    base = {"scenario": "s", "seed": 1}
    quiet = dict(base, runs=[{"name": "a", "nodes": {"launched": 0, "evictions": {}}}])
    assert nodes_table(quiet) is None
    busy = dict(base, runs=[{"name": "trap", "slo_breach_minutes": 2.25, "nodes": {
        "provider": "karpenter", "launched": 3, "evictions": {"consolidation": 3},
        "provisioning_wait_s": {"p50": 284.1, "p99": 393.0},
        "requests_retried_after_eviction": 0, "requests_failed_by_eviction": 74}}])
    console = Console(width=200, record=True)
    console.print(nodes_table(busy, plain=True))
    text = console.export_text()
    for expected in ("karpenter", "284/393s", "consolidation 3", "74"):
        assert expected in text, expected
