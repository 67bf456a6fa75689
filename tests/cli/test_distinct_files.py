"""An output that is another output of the same run, or a file the command reads, is refused
before any work, --force or not (cli/distinct_files.py; found by tests/fuzz/fuzz_cli.py's
`names` class): `--out r.json --report r.json` left r.json holding the HTML report with exit
2, and `--out` naming the scenario, a result or a grid replaced it with `--force`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gpuscale.cli import cli

from ..importer.bundle import TRACE, load_docs
from ..poisson_scenario import FIXED_ONE, poisson_scenario

TINY = poisson_scenario("tiny", duration_s=60, rate_per_s=0.5, strategies=FIXED_ONE)
GRID = 'parameters:\n  "strategies[fixed1].autoscaler.replicas": [1, 2]\n'


@pytest.fixture
def here(tmp_path, monkeypatch) -> Path:
    (tmp_path / "s.yaml").write_text(TINY)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _refused(args: list[str], *expected: str) -> None:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuscale: error:"), result.output
    for text in expected:
        assert text in lines[0], lines[0]


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


@pytest.mark.parametrize(("second", "spelled"), [("--report", "r.json"),
                                                  ("--decisions", "./r.json"),
                                                  ("--report", "sub/../r.json"),
                                                  ("--metrics-out", "r.json")])
def test_two_outputs_naming_one_file_are_refused_and_nothing_is_written(here, second, spelled):
    (here / "sub").mkdir()
    _refused(["simulate", "s.yaml", "--out", "r.json", second, spelled],
             f"--out and {second} name the same file")
    assert sorted(p.name for p in here.iterdir()) == ["s.yaml", "sub"]


def test_an_output_naming_the_scenario_is_refused_even_with_force(here):
    before = _snapshot(here)
    _refused(["simulate", "s.yaml", "--out", "s.yaml", "--force"],
             "--out names an input of this command (SCENARIO_FILE)")
    (here / "d").mkdir()
    (here / "d" / "up").symlink_to("..")  # the same file through a linked directory
    _refused(["compare", "s.yaml", "--report", "d/up/s.yaml", "--force"], "input")
    assert _snapshot(here) == before


def test_a_report_over_its_own_input_is_refused(here):
    result = CliRunner().invoke(cli, ["simulate", "s.yaml", "--out", "r.json"])
    assert result.exit_code == 0, result.output
    before = _snapshot(here)
    _refused(["report", "r.json", "--out", "r.json", "--force"], "(INPUTS)")
    assert _snapshot(here) == before


def test_a_sweep_table_over_its_grid_is_refused(here):
    (here / "g.csv").write_text(GRID)
    before = _snapshot(here)
    _refused(["sweep", "s.yaml", "--grid", "g.csv", "--out", "g.csv"], "(--grid)")
    assert _snapshot(here) == before


def test_an_emitted_scenario_over_the_manifest_it_imports_is_refused(here):
    (here / "m.yaml").write_text(yaml.safe_dump_all(load_docs(), sort_keys=False))
    before = _snapshot(here)
    _refused(["simulate", "--manifests", "m.yaml", "--trace", str(TRACE), "--emit-scenario",
              "m.yaml", "--force"], "--emit-scenario names an input", "(--manifests)")
    assert _snapshot(here) == before


def test_streams_and_a_link_to_the_input_are_still_written(here):
    # Devices are written in place and may be shared; a symlink at the output is replaced
    # (outputs.py), so the input it pointed to is untouched.
    result = CliRunner().invoke(cli, ["simulate", "s.yaml", "--out", "/dev/null", "--report",
                                      "/dev/null"])
    assert result.exit_code == 0, result.output
    (here / "link.json").symlink_to("s.yaml")
    result = CliRunner().invoke(cli, ["simulate", "s.yaml", "--out", "link.json", "--force"])
    assert result.exit_code == 0, result.output
    assert not os.path.islink(here / "link.json") and (here / "s.yaml").read_text() == TINY
