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
    # Columns line up: every table row has its separators at the same positions.
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + len(tiny_json(series=False)["runs"])
    assert len({tuple(m.start() for m in re.finditer(r"\|", r)) for r in rows}) == 1
