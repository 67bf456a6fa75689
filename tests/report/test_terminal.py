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
    # Columns line up: every row of the summary table has its separators at the same
    # positions (a second table, "nodes and evictions", follows when nodes moved).
    summary = text.split("nodes and evictions")[0]
    rows = [line for line in summary.splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + len(tiny_json(series=False)["runs"])
    assert len({tuple(m.start() for m in re.finditer(r"\|", r)) for r in rows}) == 1


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
    for expected in ("karpenter", "284s", "393s", "consolidation 3", "74", "2.2"):
        assert expected in text, expected
