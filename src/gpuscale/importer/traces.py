"""`--trace FILE`: which of the trace formats the workloads layer reads it is, by its first line.

Generic CSV (`arrival_s,prompt_tokens,output_tokens`), Azure LLM 2023 (`TIMESTAMP,
ContextTokens,GeneratedTokens`), BurstGPT (`Timestamp,Model,Request tokens,Response tokens,
...`) and Mooncake JSONL (one JSON object a line with `timestamp`, `input_length`,
`output_length`, optionally the `hash_ids` the reader keeps for the prefix cache);
shared/traces/README.md describes each.
"""

from __future__ import annotations

import json
from pathlib import Path

from gpuscale.errors import UserInputError
from gpuscale.workloads.columns import check_exists
from gpuscale.workloads.trace_files import open_trace_text

_CSV_HEADERS = {
    "generic": {"arrival_s", "prompt_tokens", "output_tokens"},
    "azure": {"TIMESTAMP", "ContextTokens", "GeneratedTokens"},
    "burstgpt": {"Timestamp", "Model", "Request tokens", "Response tokens"},
}
_MOONCAKE_KEYS = {"timestamp", "input_length", "output_length"}


def detect_format(path: Path) -> str:
    """"generic", "azure", "burstgpt" or "mooncake"; anything else is bad input."""
    check_exists(path, str(path))  # regular files only, as every trace reader (/dev/zero...)
    try:
        with open_trace_text(path) as handle:
            first = handle.readline(64 * 1024).strip()
    except UnicodeDecodeError:
        raise UserInputError("not UTF-8 text (expected a CSV or JSONL trace)",
                             source=str(path)) from None
    if first.startswith("{"):
        try:
            keys = set(json.loads(first))
        except ValueError:
            keys = set()
        if keys >= _MOONCAKE_KEYS:
            return "mooncake"
    columns = {c.strip() for c in first.split(",")}
    for name, needed in _CSV_HEADERS.items():
        if needed <= columns:
            return name
    raise UserInputError(
        f"line 1: unknown trace format (header {first[:80]!r}); expected the generic CSV "
        "(arrival_s,prompt_tokens,output_tokens), Azure LLM 2023 (TIMESTAMP,ContextTokens,"
        "GeneratedTokens), BurstGPT (Timestamp,Model,Request tokens,Response tokens,...) or "
        "Mooncake JSONL (timestamp, input_length, output_length)", source=str(path))
