"""The sweep results table: one row per run, written as each run finishes, safe to resume.

CSV (default): appended one line at a time, flushed and fsync'ed, so a sweep killed at any
moment keeps every finished row; a half-written last line (killed mid-write) is cut on resume.
Parquet (needs pyarrow, extra `parquet`): a Parquet file cannot be appended to, and one
without its footer is unreadable, so after each run the whole table is written to a temporary
file and renamed over the old one (atomic on POSIX). That is O(rows) per run, fine for the
thousands of rows a sweep has.

Columns: run_id, strategy, scenario_hash, one `set:<path>` column per override, then the
metrics of METRIC_COLUMNS (taken from the run summary; docs/metrics.md defines them).
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpuscale.errors import UserInputError
from gpuscale.metrics.run_summary import RunSummary
from gpuscale.outputs import write_atomic

KEY_COLUMNS = ("run_id", "strategy", "scenario_hash")
# (column, field of the typed run summary); a renamed field fails here, at import, not as None.
METRICS: tuple[tuple[str, Callable[[RunSummary], Any]], ...] = (
    ("slo_attainment", lambda s: s.slo_attainment),
    ("goodput_rps", lambda s: s.goodput_rps),
    ("ttft_p50_s", lambda s: s.ttft_s.p50),
    ("ttft_p99_s", lambda s: s.ttft_s.p99),
    ("tpot_p50_s", lambda s: s.tpot_s.p50),
    ("tpot_p99_s", lambda s: s.tpot_s.p99),
    ("requests_total", lambda s: s.requests.total),
    ("requests_completed", lambda s: s.requests.completed),
    ("requests_dropped", lambda s: s.requests.dropped),
    ("replicas_mean", lambda s: s.replicas.mean),
    ("replicas_peak", lambda s: s.replicas.peak),
    ("scale_events", lambda s: s.scale_events),
    ("nodes_peak", lambda s: s.nodes.peak),
    ("nodes_launched", lambda s: s.nodes.launched),
    ("gpu_hours", lambda s: s.gpu_hours),
    ("cost_usd", lambda s: s.cost_usd),
    ("idle_gpu_minutes", lambda s: s.idle_gpu_minutes),
    ("preemptions", lambda s: s.preemptions),
    ("slo_breach_minutes", lambda s: s.slo_breach_minutes),
    ("oracle_gpu_hours", lambda s: s.oracle_gpu_hours),
    ("efficiency", lambda s: s.efficiency),
)
METRIC_COLUMNS = tuple(name for name, _ in METRICS)


def metrics_of(summary: RunSummary) -> dict[str, Any]:
    return {name: read(summary) for name, read in METRICS}


def encode_cell(value: Any) -> str:
    """CSV text of a value: strings as they are, None empty, anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def decode_cell(text: str | None) -> Any:
    if text is None or text == "":  # None: a short row's missing cells (csv.DictReader)
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # a hand-edited cell: kept as its text
        return text


class ResultTable:
    """Open (or create) the table at `path`; `done` holds the run ids already in it."""

    def __init__(self, path: Path, columns: list[str], *, scenario_hash: str) -> None:
        self.path = path
        self.columns = list(columns)
        self.parquet = path.suffix == ".parquet"
        if not path.parent.exists():
            raise UserInputError(f"directory {path.parent} does not exist")
        if path.is_symlink():  # appends would go wherever the link points
            raise UserInputError(f"{path} is a symbolic link; give --out a plain file path")
        if path.exists() and not path.is_file():
            # A FIFO blocked the resume read forever; a device cannot be resumed or renamed over.
            raise UserInputError(f"{path} is not a regular file; the sweep table is a file "
                                 "that is appended to and resumed")
        # What resuming could not keep (a garbage line, a corrupt Parquet file), for the CLI
        # to say; those runs simply run again.
        self.dropped: list[str] = []
        self.rows: list[dict] = []
        if self.parquet:
            _require_pyarrow()
            if path.exists():
                self.rows = self._resume_parquet()
        elif path.exists():
            self._resume_csv()
        else:
            self._write_csv_text(_csv_line(self.columns))
        other = {r.get("scenario_hash") for r in self.rows} - {scenario_hash}
        if other:
            raise UserInputError("the table holds runs of a different scenario file or grid "
                                 "(scenario hash differs); write to a new --out", source=str(path))
        self.done = {str(r["run_id"]) for r in self.rows}

    def _resume_csv(self) -> None:
        """Keep every readable row; rewrite the file without the others (a half-written or
        garbage last line, bytes that are not UTF-8, a row of the wrong width)."""
        from gpuscale.inputs import read_bytes

        data = read_bytes(self.path, max_bytes=MAX_TABLE_BYTES, what="sweep table file")
        lines = data.split(b"\n")
        header_text = lines[0].decode("utf-8", errors="replace")
        header = next(csv.reader(io.StringIO(header_text)), [])
        if header != self.columns:
            raise UserInputError("the table's columns differ from this grid's; write to a new "
                                 "--out", source=str(self.path))
        good: list[str] = []
        blank_lines = False  # whitespace-only lines: no row, and not kept (csv reads " " as one)
        for number, raw in enumerate(lines[1:], start=2):
            if not raw.strip():
                blank_lines = blank_lines or (bool(raw) and number < len(lines))
                continue
            problem = None
            try:
                text = raw.decode("utf-8")
                cells = next(csv.reader(io.StringIO(text)), [])
                if len(cells) != len(self.columns):
                    problem = f"{len(cells)} fields, expected {len(self.columns)}"
                else:
                    row = _decode_row(dict(zip(self.columns, cells, strict=True)))
            except (UnicodeDecodeError, csv.Error, ValueError) as exc:
                problem = type(exc).__name__
            if number == len(lines) and not data.endswith(b"\n"):
                problem = problem or "cut short (killed mid-write)"
            if problem:
                self.dropped.append(f"line {number} ({problem})")
                continue
            good.append(text + "\n")
            self.rows.append(row)
        if self.dropped or blank_lines or not data.endswith(b"\n"):
            write_atomic(self.path, _csv_line(self.columns) + "".join(good))

    def _resume_parquet(self) -> list[dict]:
        """Rows of every readable row group; an unreadable file is moved aside, not deleted."""
        import pyarrow.parquet as pq

        try:
            handle = pq.ParquetFile(self.path)
        except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, ... for a bad footer
            aside = self.path.with_name(self.path.name + ".unreadable")
            if aside.exists() or aside.is_symlink():
                raise UserInputError(f"unreadable Parquet ({type(exc).__name__}) and {aside} "
                                     "exists; move one of them", source=str(self.path)) from None
            os.rename(self.path, aside)
            self.dropped.append(f"the whole file ({type(exc).__name__}: {str(exc)[:80]}); moved "
                                f"to {aside.name}")
            return []
        if handle.schema_arrow.names != self.columns:
            raise UserInputError("the table's columns differ from this grid's; write to a new "
                                 "--out", source=str(self.path))
        rows: list[dict] = []
        for group in range(handle.num_row_groups):
            try:
                rows.extend(handle.read_row_group(group).to_pylist())
            except Exception as exc:
                self.dropped.append(f"row group {group} ({type(exc).__name__})")
        return rows

    def _write_csv_text(self, text: str) -> None:
        with self.path.open("a", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())

    def append(self, row: dict) -> None:
        if set(row) != set(self.columns):
            raise ValueError(f"row columns {sorted(row)} != table columns {sorted(self.columns)}")
        self.rows.append(row)
        self.done.add(str(row["run_id"]))
        if self.parquet:
            _write_parquet_atomic(self.path, self.rows, self.columns)
        else:
            self._write_csv_text(_csv_line([encode_cell(row[c]) for c in self.columns]))


def _csv_line(cells: list[str]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(cells)
    return buffer.getvalue()


def _require_pyarrow():
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise UserInputError("Parquet output needs pyarrow: pip install 'gpuscale[parquet]', "
                             "or write a .csv table") from None
    return pyarrow


def _write_parquet_atomic(path: Path, rows: list[dict], columns: list[str]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    # Overrides may hold lists or mappings: stored as their JSON text, like in the CSV.
    def cell(value: Any) -> Any:
        return json.dumps(value, sort_keys=True) if isinstance(value, (list, dict)) else value

    table = pa.Table.from_pylist([{c: cell(r[c]) for c in columns} for r in rows])
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    # O_EXCL temporary file in the table's directory + rename: a planted `<out>.tmp` symlink
    # is never written through.
    write_atomic(path, sink.getvalue().to_pybytes())


# A table of the most runs one sweep starts (workloads/limits.py MAX_RUNS, 100,000 rows of a
# few hundred bytes) is tens of MiB; the cap keeps /dev/zero or a stray file from filling
# memory, read through the hardened reader (regular files, size checked first).
MAX_TABLE_BYTES = 512 * 2**20


def read_table(path: Path) -> list[dict]:
    """Rows of a sweep table (CSV or Parquet) as dicts of Python values."""
    from gpuscale.inputs import read_bytes

    data = read_bytes(path, max_bytes=MAX_TABLE_BYTES, what="sweep table file")
    if path.suffix.lower() == ".parquet":
        return _parquet_rows(data, str(path))
    text = data.decode("utf-8", errors="replace")
    if text and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]  # a partial last line is not a row
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in ("run_id", "strategy") if c not in (reader.fieldnames or ())]
    if missing:
        raise UserInputError(f"not a gpuscale sweep table: no column(s) {', '.join(missing)}",
                             source=str(path))
    # A whitespace-only line (a hand edit) is no run: csv would read it as a row of one cell.
    return [_decode_row(row) for row in reader
            if any(v.strip() for v in row.values() if isinstance(v, str))]


def _parquet_rows(data: bytes, source: str) -> list[dict]:
    _require_pyarrow()
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        rows = pq.read_table(pa.BufferReader(data)).to_pylist()
    except Exception as exc:  # ArrowInvalid, OSError, ...: pyarrow's types vary by damage
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UserInputError(f"not a readable Parquet file ({reason}); expected a sweep table "
                             "written by `gpuscale sweep --out T.parquet`", source=source) from None
    if rows and not {"run_id", "strategy"} <= set(rows[0]):
        raise UserInputError("not a gpuscale sweep table: no column(s) run_id, strategy",
                             source=source)
    return rows


def _decode_row(row: dict) -> dict:
    return {k: decode_cell(v) if k not in ("run_id", "strategy", "scenario_hash") else v
            for k, v in row.items()}
