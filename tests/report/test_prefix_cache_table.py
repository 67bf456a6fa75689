"""The prefix-cache table appears only when a run looked prompts up."""

import io

from rich.console import Console

from gpuscale.report.terminal import print_summary

from .results import tiny_json


def _printed(data: dict) -> str:
    buffer = io.StringIO()
    print_summary(data, Console(file=buffer, width=200))
    return buffer.getvalue()


def test_hit_rate_is_shown_when_the_trace_had_hashes():
    data = tiny_json(series=False)
    for run in data["runs"]:
        run["prefix_cache"] = {"hit_rate": None, "hits_tokens": 0, "queries_tokens": 0}
    assert "prefix cache" not in _printed(data)
    data["runs"][0]["prefix_cache"] = {"hit_rate": 0.375, "hits_tokens": 3,
                                       "queries_tokens": 8}
    text = _printed(data)
    assert "prefix cache" in text and "37.5%" in text
