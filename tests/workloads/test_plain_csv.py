"""The plain-file CSV path (str splits, no per-row loop) reads exactly what `csv` reads: the
same columns, the same line numbers, the same one-line errors; files it cannot vouch for
(quotes, lone carriage returns, NULs) go to `csv` itself."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.errors import UserInputError
from gpuscale.workloads import columns
from gpuscale.workloads.columns import _csv_columns, _plain_columns, read_csv_columns

FIELD = st.text(alphabet="0123 ab-", max_size=4)
ROW = st.lists(FIELD, min_size=1, max_size=4).map(",".join)
ENDS = st.sampled_from(["\n", "\r\n"])
ODD = st.sampled_from(["", "", "", "\r", '"', '"x"', "\x00", "\r\r\n"])


def _outcome(read, path):
    try:
        cols = read(path)
    except UserInputError as exc:
        return ("error", str(exc), exc.field)
    return {name: (col.source, col.name, list(col.values), list(col.lines))
            for name, col in cols.items()}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.one_of(ROW, st.just("")), ENDS, ODD), max_size=12),
       st.booleans(), st.sampled_from(["", "\ufeff"]))
def test_same_columns_and_errors_as_csv(tmp_path_factory, rows, final_end, bom):
    text = bom + "".join(row + odd + end for row, end, odd in rows)
    if final_end and rows:
        text = text.rstrip("\r\n")
    path = tmp_path_factory.mktemp("csv") / "t.csv"
    path.write_bytes(text.encode("utf-8"))
    required = ("a",) if text.lstrip("\ufeff").startswith("a") else ()
    assert _outcome(lambda p: read_csv_columns(p, required), path) == \
        _outcome(lambda p: _csv_columns(p, required, str(p)), path)


def test_the_plain_path_takes_crlf_and_blank_lines(tmp_path, monkeypatch):
    path = tmp_path / "t.csv"
    path.write_bytes(b"a,b\r\n1,2\r\n\r\n3,4\r\n")

    def no_csv(*args):
        raise AssertionError("fell back to csv")

    monkeypatch.setattr(columns, "_csv_columns", no_csv)
    cols = read_csv_columns(path, ("a", "b"))
    assert list(cols["a"].values) == ["1", "3"] and list(cols["b"].lines) == [2, 4]


@pytest.mark.parametrize("text", ['a\n"1"\n', "a\n1\r2\n", "a\n1\x00\n"])
def test_files_the_plain_path_cannot_vouch_for_go_to_csv(text):
    assert _plain_columns(text, ("a",), "t.csv") is None


def test_a_short_row_names_its_line(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b"a,b\n1,2\n\n3\n")
    with pytest.raises(UserInputError) as exc:
        read_csv_columns(path, ("a",))
    assert exc.value.field == "line 4"
    assert "expected 2 fields like the header, got 1" in str(exc.value)
