"""`--trace` with --manifests reads only regular files, like every trace reader: /dev/zero
would be read until memory runs out, a FIFO would block."""

from __future__ import annotations

from click.testing import CliRunner

from gpuscale.cli import cli

from .bundle import CATALOG, MANIFESTS


def _simulate(trace: str):
    return CliRunner().invoke(cli, ["simulate", "--manifests", str(MANIFESTS), "--trace", trace,
                                    "--catalog", str(CATALOG)])


def test_a_device_as_the_trace_is_one_line_naming_it():
    result = _simulate("/dev/zero")
    assert result.exit_code == 2
    assert "/dev/zero: is not a regular file" in result.output
    assert "Traceback" not in result.output


def test_a_missing_trace_says_not_found(tmp_path):
    result = _simulate(str(tmp_path / "none.csv"))
    assert result.exit_code == 2 and "trace file not found" in result.output
