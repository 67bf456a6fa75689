"""`gpuscale backtest`'s outputs follow every command's rules (issue 30, on the backtest
command): an output over the history it reads, or over another output, is refused before any
work, --force or not; `--out x.json/` names a directory; `--emit-trace` is written by the safe
writer (a symlink there is replaced, not written through, as every output's is)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuscale.cli import cli

from . import roundtrip as rt

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "backtest"


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("history")
    trace = rt.write_trace(folder / "t.csv", "step", 7, 0.5, 5.0, minutes=15)
    path = folder / "history.om"
    rt.invoke(["simulate", "--manifests", str(EXAMPLE / "manifests"), "--trace", str(trace),
               "--metrics-out", str(path), "-o", "json"])
    return path


def _backtest(history: Path, *args: str):
    return CliRunner().invoke(cli, ["backtest", "--manifests", str(EXAMPLE / "manifests"),
                                    "--history", str(history), *args])


def _one_line(result, *expected: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuscale: error:"), result.output
    for text in expected:
        assert text in lines[0], lines[0]


@pytest.mark.parametrize("flag", ["--out", "--emit-trace", "--report", "--metrics-out"])
def test_an_output_over_the_history_is_refused_even_with_force(history, flag):
    before = history.read_bytes()
    _one_line(_backtest(history, flag, str(history), "--force"), f"{flag} names an input",
              "(--history)")
    assert history.read_bytes() == before


def test_the_emitted_trace_and_the_summary_on_one_file_are_refused(history, tmp_path):
    _one_line(_backtest(history, "--out", str(tmp_path / "x"), "--emit-trace",
                        str(tmp_path / "x")), "--emit-trace and --out name the same file")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("flag", ["--out", "--emit-trace"])
def test_a_path_ending_in_a_separator_names_a_directory(history, tmp_path, flag):
    _one_line(_backtest(history, flag, str(tmp_path / "x.csv") + "/"), "names a directory")
    assert list(tmp_path.iterdir()) == []


def test_an_emitted_trace_replaces_a_link_instead_of_writing_through_it(history, tmp_path):
    kept = tmp_path / "kept.csv"
    kept.write_text("mine\n")
    link = tmp_path / "trace.csv"
    link.symlink_to(kept)
    result = _backtest(history, "--emit-trace", str(link), "--force", "-o", "json")
    assert result.exit_code == 0, result.output
    assert kept.read_text() == "mine\n"
    assert not os.path.islink(link) and link.read_text().startswith("arrival_s,")
