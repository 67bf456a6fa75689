"""The inputs this round added (calibration rows, bench results, .gpuscale.yaml, a catalog's
config_json) are read by the one hardened reader: a device or an alias bomb ends in one line
and exit 2, quickly, never a hang or a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuscale.cli import cli

ROOT = Path(__file__).resolve().parents[2]
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdef", "bcdefg", strict=True)
) + "rows: *g\n"


def _one_line_error(result) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1, result.output
    return lines[0]


@pytest.mark.parametrize("args", [
    ["calibrate", "--rows", "/dev/zero"],
    ["calibrate", "--fit", "/dev/zero", "--gpu", "H100-SXM", "--model", "Llama-3.3-70B",
     "--tp", "2"],
])
def test_a_device_is_refused_with_the_limit(args):
    assert "limit" in _one_line_error(CliRunner().invoke(cli, args))


def test_an_alias_bomb_of_rows_is_refused(tmp_path):
    rows = tmp_path / "rows.yaml"
    rows.write_text(BOMB)
    line = _one_line_error(CliRunner().invoke(cli, ["calibrate", "--rows", str(rows)]))
    assert "alias" in line


def test_an_alias_bomb_in_the_defaults_file_is_refused(tmp_path, monkeypatch):
    (tmp_path / ".gpuscale.yaml").write_text(BOMB)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GPUSCALE_CONFIG", raising=False)
    line = _one_line_error(CliRunner().invoke(cli, ["demo", "-o", "json"]))
    assert ".gpuscale.yaml" in line and "alias" in line


def test_a_device_as_config_json_is_refused(tmp_path):
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text("models:\n  x:\n    config_json: /dev/zero\n")
    scenario = ROOT / "examples" / "pd-split" / "scenario.yaml"
    line = _one_line_error(CliRunner().invoke(
        cli, ["simulate", str(scenario), "--catalog", str(catalog)]))
    assert "not a regular file" in line
