"""The trace readers' vectorised fast paths read exactly what their per-row slow paths read.

`int_column` joins a column of plain digits into one `np.fromstring`, and `_azure_arrivals`
checks same-width ASCII timestamps as one byte matrix (and skips the coarse range parse when
the years cannot fail it). Each test runs a generated column both ways, the slow way with the
fast path switched off, and fails on any difference in values, dtype or error text.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.errors import UserInputError
from gpuscale.workloads import columns, traces
from gpuscale.workloads.columns import Column, int_column

FIXTURES = Path(__file__).parent / "fixtures"
AZURE_CONV = Path(__file__).parents[2] / "../shared/traces/azure_llm_2023/" \
    "AzureLLMInferenceTrace_conv.csv"


def _outcome(read, col: Column):
    # numpy warns on some odd timestamps (a non-ASCII digit read as a time zone): the
    # warnings are part of what must match.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            arr = read(col)
        except UserInputError as exc:
            result = ("error", str(exc), exc.field)
        else:
            result = ("ok", str(arr.dtype), arr.tobytes())
    return result, [str(w.message) for w in caught]


def _column(values: list[str]) -> Column:
    return Column("t.csv", "x", values, range(2, len(values) + 2))


# ---------------------------------------------------------------- int_column
DIGITS = st.text(alphabet="0123456789", min_size=1, max_size=21)
ODD_INT = st.sampled_from(["", " 5", "5 ", "+5", "-5", "-0", "1_000", "\u0663", "1,2", "1e3",
                           "5.0", "0x10", "\x00", "9223372036854775807",
                           "9223372036854775808", "-9223372036854775809", "99999999999999999999"])
INT_VALUE = st.one_of(DIGITS, DIGITS, DIGITS, ODD_INT)


@settings(max_examples=400, deadline=None)
@given(st.lists(INT_VALUE, max_size=8), st.sampled_from([0, 1, 5]))
def test_int_column_fast_path_matches_the_numpy_parse(values, min_value):
    col = _column(values)
    fast = _outcome(lambda c: int_column(c, min_value), col)
    with mock.patch.object(columns, "_plain_ints", lambda values: None):
        slow = _outcome(lambda c: int_column(c, min_value), col)
    assert fast == slow


def test_plain_digits_take_the_fast_path():
    assert columns._plain_ints(["374", "0044", "999999999999999999"]).tolist() == \
        [374, 44, 999999999999999999]
    for odd in (["1", ""], ["1", " 2"], ["1,2"], ["1" * 19], ["\u0663"], ["+1"]):
        assert columns._plain_ints(odd) is None, odd


# ---------------------------------------------------------------- Azure timestamps
@st.composite
def timestamps(draw, frac_digits: int, year: int) -> str:
    """A timestamp in the century from `year` (or any year, or at a bound); now and then
    with fields past their ranges, or one character mangled."""
    edges = [1677, 1678, 2261, 2262, year + 98, year + 99, year + 100, year + 101]
    year = draw(st.one_of(st.integers(year - 5, year + 105), st.sampled_from(edges),
                          st.integers(0, 9999)))
    if draw(st.integers(0, 5)):  # mostly a real date, so the range checks are reached
        month, day = draw(st.integers(1, 12)), draw(st.integers(1, 28))
        hour, minute, sec = draw(st.integers(0, 23)), draw(st.integers(0, 59)), \
            draw(st.integers(0, 59))
    else:
        month, day = draw(st.integers(0, 13)), draw(st.integers(0, 32))
        hour, minute, sec = draw(st.integers(0, 24)), draw(st.integers(0, 60)), \
            draw(st.integers(0, 60))
    frac = draw(st.sampled_from([frac_digits] * 4 + list(range(0, 11))))
    text = f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{sec:02d}"
    if frac:
        text += "." + "".join(draw(st.lists(st.sampled_from("0123456789"),
                                            min_size=frac, max_size=frac)))
    if draw(st.integers(0, 14)) == 0:  # one character replaced, dropped or added
        at = draw(st.integers(0, len(text)))
        odd = draw(st.sampled_from(["T", "\u0663", "\x00", " ", "a", "-", ":", ".", "+", ""]))
        text = text[:at] + odd + text[at + draw(st.integers(0, 1)):]
    return text


@st.composite
def stamp_columns(draw) -> list[str]:
    frac_digits = draw(st.sampled_from([0, 7, 7, 9, 3]))
    year = draw(st.sampled_from([2023, 1678, 2160, 1700, 2100, 1900, 5000]))
    return draw(st.lists(timestamps(frac_digits, year), max_size=6))


@pytest.mark.slow
@settings(max_examples=600, deadline=None)
@given(stamp_columns())
def test_azure_timestamp_fast_path_matches_the_per_row_match(values):
    col = _column(values)
    fast = _outcome(traces._azure_arrivals, col)
    with mock.patch.object(traces, "_uniform_stamp_years", lambda values: None):
        slow = _outcome(traces._azure_arrivals, col)
    assert fast == slow


def _stamp(year: int, rest: str = "06-15 12:00:00.0000000") -> str:
    return f"{year:04d}-{rest}"


@pytest.mark.parametrize("values", [
    [_stamp(1677), _stamp(1700)], [_stamp(1678, "01-01 00:00:00.0000000")],
    [_stamp(2261, "12-31 23:59:59.9999999")], [_stamp(2262, "01-01 00:00:00.0000000")],
    [_stamp(1900, "01-01 00:00:00.0000000"), _stamp(1998, "12-31 23:59:59.9999999")],
    [_stamp(1900, "01-01 00:00:00.0000000"), _stamp(1999, "12-31 23:59:59.9999999")],
    [_stamp(1900, "01-01 00:00:00.0000000"), _stamp(2000, "01-01 00:00:00.0000001")],
    [_stamp(1901, "01-01 00:00:00.0000000"), _stamp(2001, "01-01 00:00:00.0000000")],
    [_stamp(1900, "01-01 00:00:00.0000000"), _stamp(2000, "12-31 00:00:00.0000000")],
    [_stamp(2100), _stamp(2201)], [_stamp(0), _stamp(2023)], [_stamp(9999)],
])
def test_azure_year_bounds_match_at_their_edges(values):
    col = _column(values)
    fast = _outcome(traces._azure_arrivals, col)
    with mock.patch.object(traces, "_uniform_stamp_years", lambda values: None):
        assert fast == _outcome(traces._azure_arrivals, col)


def test_azure_timestamps_take_the_fast_path():
    values = ["2023-11-16 18:15:46.6805900", "2024-01-01 00:00:00.0000001"]
    assert traces._uniform_stamp_years(values).tolist() == [2023, 2024]
    for odd in (values + ["2023-11-16 18:15:46.680590"], ["2023-11-16T18:15:46.6805900"],
                ["\u0663023-11-16 18:15:46.6805900"], ["2023-11-16 18:15:46."]):
        assert traces._uniform_stamp_years(odd) is None, odd


def test_the_real_azure_trace_reads_the_same_both_ways():
    path = AZURE_CONV if AZURE_CONV.is_file() else FIXTURES / "azure_midnight.csv"
    cols = columns.read_csv_columns(path, ("TIMESTAMP", "ContextTokens", "GeneratedTokens"))
    fast = [_outcome(traces._azure_arrivals, cols["TIMESTAMP"]),
            _outcome(int_column, cols["ContextTokens"])]
    with mock.patch.object(traces, "_uniform_stamp_years", lambda values: None), \
            mock.patch.object(columns, "_plain_ints", lambda values: None):
        slow = [_outcome(traces._azure_arrivals, cols["TIMESTAMP"]),
                _outcome(int_column, cols["ContextTokens"])]
    (stamps, stamp_warnings), _ = fast
    assert fast == slow and stamps[0] == "ok" and not stamp_warnings
    assert traces._uniform_stamp_years(cols["TIMESTAMP"].values) is not None
    assert np.asarray(columns._plain_ints(cols["ContextTokens"].values)).size == \
        len(cols["ContextTokens"].values)


# ---------------------------------------------------------------- Azure files from their bytes
HEADERS = st.sampled_from(["TIMESTAMP,ContextTokens,GeneratedTokens"] * 6 + [
    "\ufeffTIMESTAMP,ContextTokens,GeneratedTokens", " TIMESTAMP,ContextTokens,GeneratedTokens",
    "TIMESTAMP,GeneratedTokens,ContextTokens", "TIMESTAMP,ContextTokens,GeneratedTokens,x",
    "TIMESTAMP,ContextTokens"])
COUNT = st.one_of(st.integers(1, 5000).map(str), st.sampled_from(["0", "00"]), INT_VALUE)
MANGLE = st.sampled_from(['"', ",", "\x00", "\u00e9", " ", "\r", "\n", "\r\n", "0", "-", "x"])


@st.composite
def clean_stamps(draw, year: int) -> str:
    stamp = np.datetime64(f"{year}-01-01") + np.timedelta64(
        draw(st.integers(0, 99 * 365 * 86_400 * 10**7 // 10**4)), "ms")
    return str(stamp).replace("T", " ") + "".join(
        draw(st.lists(st.sampled_from("0123456789"), min_size=4, max_size=4)))


@st.composite
def azure_files(draw) -> str:
    """Mostly Azure's own layout and valid, so the bytes path answers; then one odd row, an
    odd header, a blank line or one mangled character, so it must decline."""
    eol = draw(st.sampled_from(["\r\n", "\n"]))
    year = draw(st.sampled_from([2023, 1678, 2160, 1900]))
    clean_count = st.integers(1, 99999).map(str)
    rows = draw(st.lists(st.tuples(clean_stamps(year), clean_count, clean_count),
                         min_size=1, max_size=6))
    if draw(st.integers(0, 3)) == 0:  # one row from the wide strategies
        at = draw(st.integers(0, len(rows) - 1))
        rows[at] = draw(st.tuples(timestamps(7, year), COUNT, COUNT))
    lines = [draw(HEADERS)] + [",".join(row) for row in rows]
    if draw(st.integers(0, 7)) == 0:  # a blank line somewhere
        lines.insert(draw(st.integers(1, len(lines))), "")
    text = eol.join(lines) + draw(st.sampled_from([eol, eol, "", eol + eol]))
    if draw(st.integers(0, 5)) == 0:  # one character anywhere replaced, dropped or added
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(MANGLE) + text[at + draw(st.integers(0, 1)):]
    return text


def _file_outcome(path: Path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            req = traces.read_azure_llm_csv(path)
        except UserInputError as exc:
            result = ("error", str(exc), exc.field)
        else:
            result = ("ok", *(str(a.dtype) + a.tobytes().hex() for a in
                              (req.arrival_s, req.prompt_tokens, req.output_tokens)))
    return result, [str(w.message) for w in caught]


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(azure_files())
def test_azure_bytes_path_matches_the_general_reader(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("az") / "az.csv"
    path.write_bytes(text.encode("utf-8"))
    fast = _file_outcome(path)
    with mock.patch.object(traces, "read_fixed_layout", lambda path: None):
        slow = _file_outcome(path)
    assert fast == slow


def test_azure_layout_files_take_the_bytes_path(tmp_path):
    from gpuscale.workloads.azure_layout import read_fixed_layout
    rows = ["2023-11-16 18:15:46.6805900,374,44", "2023-11-16 18:15:50.9951690,396,109"]
    for eol, end in (("\r\n", ""), ("\r\n", "\r\n"), ("\n", "\n")):
        path = tmp_path / "az.csv"
        path.write_bytes(eol.join(["TIMESTAMP,ContextTokens,GeneratedTokens", *rows]).encode()
                         + end.encode())
        stamps, context, generated = read_fixed_layout(path)
        assert context.tolist() == [374, 396] and generated.tolist() == [44, 109]
        assert np.diff(stamps).astype(np.int64).tolist() == [4_314_579_000]
    path.write_bytes(b"TIMESTAMP,ContextTokens,GeneratedTokens\n" + rows[0].encode() + b"\r\n")
    assert read_fixed_layout(path) is None  # CRLF after an LF header: the general reader's
    if AZURE_CONV.is_file():
        assert read_fixed_layout(AZURE_CONV) is not None
