"""Readers for request traces: Azure LLM 2023, generic CSV, Mooncake JSONL and BurstGPT CSV.

Every reader returns `Requests` with arrivals in seconds relative to the trace's first request
(so the first arrival is 0.0), and `Requests.start_time`, the first request's wall-clock
instant, where the format records one: Azure (its TIMESTAMP, read as UTC) and BurstGPT (its
seconds from 00:00 of the first day: the time of day, on the default start date). Generic CSV
and Mooncake times count from the first request and carry no wall clock. Formats are
described in shared/traces/README.md. Third-party
traces (Azure, Mooncake, BurstGPT) are stably sorted by arrival if a file is out of order,
since we cannot fix the publisher's file; the generic CSV is our own format and must be sorted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from gpuscale.errors import UserInputError
from gpuscale.inputs import check_json_depth
from gpuscale.units import DEFAULT_START_TIME
from gpuscale.workloads.azure_layout import (
    STAMP_TEMPLATE,
    read_fixed_layout,
    stamp_years,
    years_within_range,
)
from gpuscale.workloads.base import Requests
from gpuscale.workloads.columns import (
    Column,
    check_exists,
    float_column,
    int_column,
    read_csv_columns,
)
from gpuscale.workloads.prefix_blocks import MOONCAKE_BLOCK_TOKENS, ChainInterner, PrefixBlocks
from gpuscale.workloads.trace_files import open_trace_text


def _relative_sorted(arrival_s: np.ndarray, prompt: np.ndarray, output: np.ndarray,
                     blocks: PrefixBlocks | None = None, clock_zero: datetime | None = None
                     ) -> Requests:
    """Stably sort by arrival and shift so the first request arrives at 0.0. `clock_zero`:
    the wall-clock instant of `arrival_s` 0 as read, when the trace records one; the table's
    `start_time` is then the first request's."""
    if len(arrival_s) and np.any(np.diff(arrival_s) < 0):
        order = np.argsort(arrival_s, kind="stable")
        arrival_s, prompt, output = arrival_s[order], prompt[order], output[order]
        blocks = None if blocks is None else blocks.take(order)
    first_s = float(arrival_s[0]) if len(arrival_s) else 0.0
    if len(arrival_s):
        arrival_s = arrival_s - arrival_s[0]
    start = None if clock_zero is None else clock_zero + timedelta(seconds=first_s)
    return Requests(arrival_s.astype(np.float64), prompt, output, blocks, start)


def _utc(stamp: np.datetime64) -> datetime:
    """A zone-less timestamp read as UTC (Azure's files give no zone)."""
    value = stamp.astype("datetime64[us]").item()
    return value.replace(tzinfo=timezone.utc)


# ---------------------------------------------------------------- Azure LLM inference 2023
# `YYYY-MM-DD HH:MM:SS.fffffff`: 7 fractional digits (100 ns), no zone; README "azure_llm_2023".
_AZURE_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,9})?")


# Nanosecond timestamps hold 1678-2262 only, and their differences wrap past 292 years:
# outside these, numpy gives wrong times without an error (year 0001 read as 1754).
_NS_RANGE = (np.datetime64("1678-01-01", "us"), np.datetime64("2262-01-01", "us"))
MAX_TRACE_SPAN_YEARS = 100


def _check_azure_range(col: Column, expected: str) -> None:
    try:
        coarse = np.asarray(col.values, dtype="datetime64[us]")  # +-290,000 years: no wrap
    except ValueError:
        return  # an impossible date: the exact parse below names its row
    low, high = int(np.argmin(coarse)), int(np.argmax(coarse))
    if coarse[low] < _NS_RANGE[0] or coarse[high] >= _NS_RANGE[1]:
        bad = low if coarse[low] < _NS_RANGE[0] else high
        raise col.fail(bad, expected + " between 1678 and 2261")
    span_years = (coarse[high] - coarse[low]).astype(np.int64) / 1e6 / (365.25 * 86_400)
    if span_years > MAX_TRACE_SPAN_YEARS:
        raise col.fail(high, f"{expected} within {MAX_TRACE_SPAN_YEARS} years of the others "
                       f"(the trace spans {span_years:.0f} years)")


# `_AZURE_TIMESTAMP`'s widths: 19 (no fraction) and 21-29 (1-9 fractional digits).
_STAMP_WIDTHS = frozenset((19, *range(21, len(STAMP_TEMPLATE) + 1)))


def _uniform_stamp_years(values: Sequence[str]) -> np.ndarray | None:
    """Each row's year when every value is ASCII of one width and fits `_AZURE_TIMESTAMP`
    there, checked as one byte matrix; None when not (then the per-row match decides).

    Every Azure file writes 7 fractional digits on every row: one numpy pass instead of a
    regex call per row (~6 ms on the 19k-row trace). It accepts only what the regex accepts:
    ASCII digits where it wants a digit, and a shorter value is padded with NULs, no digit
    and no separator. The width is known before the matrix is made (a long value is no
    gigabyte matrix)."""
    width = max(map(len, values))
    if width not in _STAMP_WIDTHS:
        return None
    try:
        raw = np.asarray(values, dtype=f"S{width}")
    except UnicodeEncodeError:
        return None
    return stamp_years(raw.view(np.uint8).reshape(len(values), width))


def _azure_arrivals(col: Column) -> np.ndarray:
    """Seconds since the first row."""
    stamps = _azure_stamps(col)
    return _seconds_since_first(stamps) if len(stamps) else np.zeros(0)


def _azure_stamps(col: Column) -> np.ndarray:
    """The timestamps (datetime64[ns]). numpy parses up to 9 fractional digits (strptime
    only 6), but it also accepts 'NaT' and bare dates, so each value is matched against the
    exact form first: as one byte matrix when the column has one width, else by the regex
    row by row."""
    expected = "a timestamp like '2023-11-16 18:15:46.6805900'"
    years = _uniform_stamp_years(col.values) if col.values else None
    if years is None:
        for i, text in enumerate(col.values):
            if not _AZURE_TIMESTAMP.fullmatch(text):
                raise col.fail(i, expected)
    if not col.values:
        return np.zeros(0, dtype="datetime64[ns]")
    # Years that cannot fail the range checks skip `_check_azure_range`'s coarse parse;
    # otherwise it runs and names the row as before.
    if years is None or not years_within_range(years):
        _check_azure_range(col, expected)
    try:
        stamps = np.asarray(col.values, dtype="datetime64[ns]")
    except ValueError:  # well-formed but impossible, e.g. month 13: find the row
        for i, text in enumerate(col.values):
            try:
                np.datetime64(text, "ns")
            except ValueError:
                raise col.fail(i, expected) from None
        raise
    return stamps


def _seconds_since_first(stamps: np.ndarray) -> np.ndarray:
    # Differences in integer nanoseconds first, then seconds: no float rounding of the epoch.
    return (stamps - stamps[0]).astype(np.int64) / 1e9


def read_azure_llm_csv(path: str | Path) -> Requests:
    """Azure LLM inference trace 2023 (`TIMESTAMP,ContextTokens,GeneratedTokens`).

    A file in Azure's own layout is read from its bytes (`read_fixed_layout`); any other, or
    one with a value to refuse, goes through `read_csv_columns` and the checks below."""
    path = Path(path)
    check_exists(path, str(path))
    fixed = read_fixed_layout(path)
    if fixed is not None:
        stamps, prompt, output = fixed
    else:
        cols = read_csv_columns(path, ("TIMESTAMP", "ContextTokens", "GeneratedTokens"))
        stamps = _azure_stamps(cols["TIMESTAMP"])
        prompt, output = int_column(cols["ContextTokens"]), int_column(cols["GeneratedTokens"])
    if not len(stamps):
        return _relative_sorted(np.zeros(0), prompt, output)
    # TIMESTAMP is the wall clock (no zone given: read as UTC), so the run starts at it
    return _relative_sorted(_seconds_since_first(stamps), prompt, output,
                            clock_zero=_utc(stamps[0]))


# ---------------------------------------------------------------- generic request CSV
def read_generic_csv(path: str | Path) -> Requests:
    """gpuscale's own `arrival_s,prompt_tokens,output_tokens` CSV; rows sorted by arrival_s.

    Equal arrival times are allowed. Arrivals are shifted so the first row is at 0.0 (the
    format says it already is; a file cut from a longer trace need not be).
    """
    cols = read_csv_columns(Path(path), ("arrival_s", "prompt_tokens", "output_tokens"))
    arrival = float_column(cols["arrival_s"], min_value=0.0)
    back = np.diff(arrival) < 0
    if back.any():
        i = int(np.argmax(back)) + 1
        raise cols["arrival_s"].fail(
            i, f"rows sorted by arrival_s, i.e. a value >= {arrival[i - 1]:g} (the row above)"
        )
    prompt = int_column(cols["prompt_tokens"])
    output = int_column(cols["output_tokens"])
    return _relative_sorted(arrival, prompt, output)


# ---------------------------------------------------------------- Mooncake (FAST'25) JSONL
_MOONCAKE_KEYS = ("timestamp", "input_length", "output_length")


def _mooncake_int(obj: dict, key: str, min_value: int | None, source: str, line: int) -> int:
    value = obj.get(key)
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or abs(value) >= 2**63  # must fit the int64 column
        or (min_value is not None and value < min_value)
    ):
        expected = "an integer" + (f" >= {min_value}" if min_value is not None else "")
        got = "nothing (key missing)" if key not in obj else repr(value)
        raise UserInputError(
            f"expected {expected}, got {got}", source=source, field=f"line {line}, key {key}"
        )
    return value


def _mooncake_hashes(obj: dict, source: str, line: int) -> list[int] | None:
    """A line's `hash_ids` (None when the key is absent): a list of integers >= 0."""
    value = obj.get("hash_ids")
    if value is None and "hash_ids" not in obj:
        return None
    if not isinstance(value, list) or not all(
            isinstance(h, int) and not isinstance(h, bool) and 0 <= h < 2**63 for h in value):
        raise UserInputError(f"expected a list of integers >= 0, got {str(value)[:60]}",
                             source=source, field=f"line {line}, key hash_ids")
    return value


def read_mooncake_jsonl(path: str | Path) -> Requests:
    """Mooncake trace: one JSON object a line with `timestamp` (ms), `input_length`,
    `output_length` and optionally `hash_ids`, one id per 512-token prompt block.

    When any line carries `hash_ids`, the table gets `prefix_blocks` (chained ids, see
    workloads/prefix_blocks.py); a line without the key then has no shareable block. A file
    with no `hash_ids` at all reads exactly as a trace without hashes (no prefix cache)."""
    path = Path(path)
    source = str(path)
    check_exists(path, source)
    stamps: list[int] = []
    prompts: list[int] = []
    outputs: list[int] = []
    chains = ChainInterner()
    any_hashes = False
    try:
        with open_trace_text(path) as handle:
            for line_no, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                check_json_depth(line, source, field=f"line {line_no}")
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise UserInputError(
                        f"expected a JSON object, got invalid JSON ({exc.msg})",
                        source=source,
                        field=f"line {line_no}",
                    ) from None
                if not isinstance(obj, dict):
                    raise UserInputError(
                        f"expected a JSON object, got {type(obj).__name__}",
                        source=source,
                        field=f"line {line_no}",
                    )
                stamps.append(_mooncake_int(obj, "timestamp", None, source, line_no))
                prompts.append(_mooncake_int(obj, "input_length", 1, source, line_no))
                outputs.append(_mooncake_int(obj, "output_length", 1, source, line_no))
                hashes = _mooncake_hashes(obj, source, line_no)
                any_hashes = any_hashes or hashes is not None
                chains.add(hashes or ())
    except UnicodeDecodeError as exc:
        raise UserInputError(f"not UTF-8 text ({exc.reason})", source=source) from None
    stamps_ms = np.asarray(stamps, dtype=np.int64)
    arrival = (stamps_ms - stamps_ms.min()) / 1000.0 if len(stamps_ms) else np.zeros(0)
    return _relative_sorted(
        arrival, np.asarray(prompts, dtype=np.int64), np.asarray(outputs, dtype=np.int64),
        chains.build(MOONCAKE_BLOCK_TOKENS) if any_hashes else None,
    )


# ---------------------------------------------------------------- BurstGPT CSV
_BURSTGPT_COLUMNS = ("Timestamp", "Model", "Request tokens", "Response tokens", "Log Type")


def _filter_values(col: Column, wanted: str | None) -> np.ndarray | None:
    """Mask of rows whose value equals `wanted`; an unseen value lists the seen ones."""
    if wanted is None:
        return None
    values = np.char.strip(np.asarray(col.values, dtype=str))
    mask = values == wanted
    if not mask.any():
        seen = ", ".join(sorted(set(values.tolist()))) or "none (no rows)"
        raise UserInputError(
            f"no row has {col.name} {wanted!r}; values present: {seen}",
            source=col.source,
            field=f"column {col.name}",
        )
    return mask


def read_burstgpt_csv(
    path: str | Path,
    model: str | None = None,
    log_type: str | None = None,
    drop_failed: bool = True,
) -> Requests:
    """BurstGPT trace, columns read by name (`Session ID`, `Elapsed time` may be present).

    `model` ("ChatGPT", "GPT-4") and `log_type` ("Conversation log", "API log") keep only
    matching rows. Failed requests have `Response tokens` = 0: dropped when `drop_failed`;
    otherwise kept with 1 output token, since they still took a prefill and one step.
    """
    cols = read_csv_columns(Path(path), _BURSTGPT_COLUMNS)
    arrival = float_column(cols["Timestamp"])
    prompt = int_column(cols["Request tokens"], min_value=0)
    output = int_column(cols["Response tokens"], min_value=0)
    keep = np.ones(len(arrival), dtype=bool)
    for mask in (_filter_values(cols["Model"], model), _filter_values(cols["Log Type"], log_type)):
        if mask is not None:
            keep &= mask
    failed = output == 0
    if drop_failed:
        keep &= ~failed
    else:
        output = np.where(failed, 1, output)
    # An empty prompt is only acceptable on a row we drop anyway (a failed request).
    empty_prompt = keep & (prompt < 1)
    if empty_prompt.any():
        raise cols["Request tokens"].fail(int(np.argmax(empty_prompt)), "an integer >= 1")
    # `Timestamp` counts seconds from 00:00:00 of the trace's first day (BurstGPT README.md,
    # "Schema"): the time of day is recorded, the date and zone are not (read as UTC, on
    # the default start date)
    return _relative_sorted(arrival[keep], prompt[keep], output[keep],
                            clock_zero=DEFAULT_START_TIME)


# Formats whose times are wall-clock instants (so `Requests.start_time` is set): a run that
# gives no start_time starts at the trace's first request.
RECORDS_WALL_CLOCK = frozenset({"azure", "burstgpt"})

# Format name (the `format:` of a trace workload) -> reader. BurstGPT's options are passed
# through by the trace workload; the other readers take only a path.
TRACE_READERS: dict[str, Callable[..., Requests]] = {
    "azure": read_azure_llm_csv,
    "generic": read_generic_csv,
    "mooncake": read_mooncake_jsonl,
    "burstgpt": read_burstgpt_csv,
}
