import yaml
from click.testing import CliRunner

from gpuscale.cli import cli
from gpuscale.sweep import read_table

from ..report.scenarios import GRID, tiny


def _files(tmp_path, grid=GRID):
    scenario, grid_file = tmp_path / "s.yaml", tmp_path / "g.yaml"
    scenario.write_text(yaml.safe_dump(tiny()))
    grid_file.write_text(yaml.safe_dump(grid))
    return str(scenario), str(grid_file)


def test_dry_run_lists_every_run(tmp_path):
    scenario, grid = _files(tmp_path)
    result = CliRunner().invoke(cli, ["sweep", scenario, "--grid", grid, "--out",
                                      str(tmp_path / "t.csv"), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert result.output.strip().endswith("16 runs") and not (tmp_path / "t.csv").exists()


def test_sweep_then_rerun_skips_everything_and_report_draws_the_table(tmp_path):
    scenario, grid = _files(tmp_path, {"runs": [{"seed": 1}, {"seed": 2}],
                                       "strategies": ["keda-queue"]})
    out = tmp_path / "t.csv"
    runner = CliRunner()
    first = runner.invoke(
        cli, ["sweep", scenario, "--grid", grid, "--out", str(out), "--workers", "1"]
    )
    assert first.exit_code == 0, first.output
    assert "2 runs: 0 already" in first.output and len(read_table(out)) == 2
    second = runner.invoke(cli, ["sweep", scenario, "--grid", grid, "--out", str(out)])
    assert "2 runs: 2 already" in second.output and len(read_table(out)) == 2
    html = tmp_path / "r.html"
    assert runner.invoke(cli, ["report", str(out), "--out", str(html)]).exit_code == 0
    assert 'data-chart="pareto"' in html.read_text()


def test_bad_override_path_exits_2_naming_it(tmp_path):
    scenario, grid = _files(tmp_path, {"parameters": {"strategies[9].name": ["x"]}})
    result = CliRunner().invoke(
        cli, ["sweep", scenario, "--grid", grid, "--out", str(tmp_path / "t.csv")]
    )
    assert result.exit_code == 2 and "strategies[9].name" in result.output


def test_ray_backend_without_ray_or_address_misuse(tmp_path):
    scenario, grid = _files(tmp_path)
    result = CliRunner().invoke(cli, ["sweep", scenario, "--grid", grid, "--out",
                                      str(tmp_path / "t.csv"), "--address", "x:1"])
    assert result.exit_code == 2 and "--address only applies" in result.output


def test_out_must_be_a_table_path_report_can_read(tmp_path):
    scenario, grid = _files(tmp_path)
    result = CliRunner().invoke(cli, ["sweep", scenario, "--grid", grid, "--out",
                                      str(tmp_path / "t.txt"), "--dry-run"])
    assert result.exit_code == 2 and ".csv or .parquet" in result.output
    assert not (tmp_path / "t.txt").exists()
