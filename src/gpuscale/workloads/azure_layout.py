"""The Azure LLM trace read straight from its bytes, for files in the exact layout Azure ships.

Azure's files (shared/traces/README.md "azure_llm_2023") are one header,
`TIMESTAMP,ContextTokens,GeneratedTokens`, then rows `YYYY-MM-DD HH:MM:SS.fffffff,<int>,<int>`
with 7 fractional digits, all lines ended alike. Such a file is checked and converted here with
a few numpy passes over its bytes, never making a Python string per field: ~5 ms for the
19k-row conversation trace instead of ~12 ms through `read_csv_columns`, and the tiled
benchmark reads it on every run.

`read_fixed_layout` answers None for anything else, or for any value the general reader would
refuse (a bad row, a year out of range, an impossible date, a count below 1): the caller then
reads the file the general way, which names the file, line and column. So this path has no
error messages of its own, and where it answers, it answers what the general path answers: the
same timestamp parse (numpy's, of the same characters) and integers of at most 18 digits,
which every parser reads alike.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from gpuscale.workloads.trace_files import read_trace_bytes

_HEADER = b"TIMESTAMP,ContextTokens,GeneratedTokens"
_BOM = b"\xef\xbb\xbf"  # utf-8-sig, as the general reader opens the file
# `traces._AZURE_TIMESTAMP` at its longest, "0" standing for a digit; its widths 19 and 21-29
# are prefixes of this. Azure's files write 7 fractional digits: 27 bytes.
STAMP_TEMPLATE = np.frombuffer(b"0000-00-00 00:00:00.000000000", dtype=np.uint8)
_STAMP_BYTES = 27
_INT_DIGITS = 18  # always fits int64
_YEAR_PLACES = np.array([1000, 100, 10, 1], dtype=np.int32)
_LF, _CR, _COMMA = ord("\n"), ord("\r"), ord(",")


def read_fixed_layout(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(timestamps as datetime64[ns], ContextTokens, GeneratedTokens) in file order, or None
    when the file is not exactly in Azure's layout with every value valid."""
    data = read_trace_bytes(path)  # errors are the general reader's too: reported the same
    if data.startswith(_BOM):
        data = data[len(_BOM):]
    if not data.startswith(_HEADER):
        return None
    eol = data[len(_HEADER):len(_HEADER) + 2]
    eol = b"\r\n" if eol == b"\r\n" else eol[:1]
    if eol not in (b"\r\n", b"\n"):
        return None
    body = data[len(_HEADER) + len(eol):]
    if body.endswith(eol):
        body = body[:-len(eol)]
    return _convert(np.frombuffer(body, dtype=np.uint8), len(eol)) if body else None


def _convert(raw: np.ndarray, eol_bytes: int) -> tuple[np.ndarray, np.ndarray,
                                                         np.ndarray] | None:
    newlines = np.flatnonzero(raw == _LF)
    # Lines are the pieces between line ends, all alike: no CR but in a CRLF.
    returns = np.flatnonzero(raw == _CR)
    if len(returns) != (len(newlines) if eol_bytes == 2 else 0):
        return None
    if eol_bytes == 2 and not (returns == newlines - 1).all():
        return None
    starts = np.concatenate(([0], newlines + 1))
    ends = np.concatenate((newlines - (eol_bytes - 1), [len(raw)]))  # at the line end
    rows = len(starts)
    # Exactly two commas a row: right after the stamp, and between counts of 1-18 digits (a
    # blank line, which the general reader skips keeping the others' numbers, has none).
    commas = np.flatnonzero(raw == _COMMA)
    if len(commas) != 2 * rows:
        return None
    first, second = commas.reshape(rows, 2).T
    context_digits, generated_digits = second - first - 1, ends - second - 1
    if not ((first == starts + _STAMP_BYTES).all()
            and ((context_digits >= 1) & (context_digits <= _INT_DIGITS)).all()
            and ((generated_digits >= 1) & (generated_digits <= _INT_DIGITS)).all()):
        return None
    # Each row's first 27 bytes as one matrix (a row of a sliding window per line start).
    stamps = sliding_window_view(raw, _STAMP_BYTES)[starts]
    years = stamp_years(stamps)
    if years is None:
        return None
    # Each row's ",<context>,<generated>", back to back: the counts as one comma-separated
    # list once the leading comma is dropped. The mask is made by repeating, per row,
    # (drop the stamp, keep the rest, drop the line end) over those three lengths.
    pieces = np.empty((rows, 3), dtype=np.int64)
    pieces[:, 0] = _STAMP_BYTES
    pieces[:, 1] = ends - first
    pieces[:, 2] = eol_bytes
    pieces[-1, 2] = 0
    keep = np.repeat(np.tile(np.array([False, True, False]), rows), pieces.ravel())
    rest = raw[keep]
    if not ((rest - ord("0") <= 9) | (rest == _COMMA)).all():
        return None
    counts = np.fromstring(rest[1:].tobytes(), dtype=np.int64, sep=",")
    if len(counts) != 2 * rows or not (counts >= 1).all():
        return None  # `int_column` names the row below 1
    if not years_within_range(years):
        return None  # `_check_azure_range` decides (and words the error)
    try:
        stamps_ns = np.ascontiguousarray(stamps).view(f"S{_STAMP_BYTES}").ravel() \
            .astype("datetime64[ns]")
    except ValueError:  # an impossible date, e.g. month 13
        return None
    counts = counts.reshape(rows, 2)
    return stamps_ns, counts[:, 0].copy(), counts[:, 1].copy()


def stamp_years(table: np.ndarray) -> np.ndarray | None:
    """Each row's year, where every row of `table` (uint8, one stamp a row, all of one width
    of `STAMP_TEMPLATE`) has an ASCII digit wherever the template wants one and the template's
    separator elsewhere; None when one does not."""
    template = STAMP_TEMPLATE[:table.shape[1]]
    digit = template == ord("0")
    if not ((table[:, digit] - ord("0") <= 9).all()
            and (table[:, ~digit] == template[~digit]).all()):
        return None
    return (table[:, :4].astype(np.int32) - ord("0")) @ _YEAR_PLACES


def years_within_range(years: np.ndarray) -> bool:
    """True where neither check of `traces._check_azure_range` can fail: years 1678-2261,
    within 98 of each other (99 calendar years < 100 x 365.25 days)."""
    first, last = int(years.min()), int(years.max())
    return first >= 1678 and last <= 2261 and last - first <= 98
