import pytest

from gpuscale.errors import UserInputError
from gpuscale.sweep.table import ResultTable, decode_cell, encode_cell, read_table

COLUMNS = ["run_id", "strategy", "scenario_hash", "set:seed", "set:x", "cost_usd"]


def row(i: int, **changes) -> dict:
    data = {"run_id": f"r{i}", "strategy": "s", "scenario_hash": "h", "set:seed": i,
            "set:x": [1, "a"], "cost_usd": 0.5 * i if i else None}
    data.update(changes)
    return data


def test_cells_round_trip():
    for value in (None, 0, 2, 2.5, -1e-9, True, "spot", [1, "a"], {"k": 1}):
        assert decode_cell(encode_cell(value)) == value


def test_csv_rows_are_readable_after_each_append_and_resume_sees_them(tmp_path):
    path = tmp_path / "t.csv"
    table = ResultTable(path, COLUMNS, scenario_hash="h")
    for i in range(3):
        table.append(row(i))
        assert len(read_table(path)) == i + 1  # on disk at once, not at close
    again = ResultTable(path, COLUMNS, scenario_hash="h")
    assert again.done == {"r0", "r1", "r2"}
    assert read_table(path) == [row(i) for i in range(3)]


def test_a_half_written_last_line_is_dropped_on_resume(tmp_path):
    path = tmp_path / "t.csv"
    table = ResultTable(path, COLUMNS, scenario_hash="h")
    table.append(row(1))
    table.append(row(2))
    text = path.read_text()
    path.write_text(text[:-7])  # killed mid-write of r2
    again = ResultTable(path, COLUMNS, scenario_hash="h")
    assert again.done == {"r1"}
    again.append(row(2))
    assert read_table(path) == [row(1), row(2)]


def test_a_table_of_another_grid_or_scenario_is_refused(tmp_path):
    path = tmp_path / "t.csv"
    ResultTable(path, COLUMNS, scenario_hash="h").append(row(1))
    with pytest.raises(UserInputError, match="columns differ"):
        ResultTable(path, COLUMNS[:-1], scenario_hash="h")
    with pytest.raises(UserInputError, match="different scenario"):
        ResultTable(path, COLUMNS, scenario_hash="other")


def test_parquet_table_is_complete_after_each_append(tmp_path):
    pytest.importorskip("pyarrow")
    path = tmp_path / "t.parquet"
    table = ResultTable(path, COLUMNS, scenario_hash="h")
    for i in range(3):
        table.append(row(i))
    rows = read_table(path)
    assert [r["run_id"] for r in rows] == ["r0", "r1", "r2"]
    assert rows[2]["cost_usd"] == 1.0 and rows[0]["cost_usd"] is None
    assert rows[1]["set:x"] == '[1, "a"]'  # lists stored as JSON text
    assert ResultTable(path, COLUMNS, scenario_hash="h").done == {"r0", "r1", "r2"}
    assert not list(tmp_path.glob("*.tmp"))
