import json

import yaml
from click.testing import CliRunner

from gpuscale.cli import cli
from gpuscale.report.timeline import SERIES_KEY

from .scenarios import tiny
from .test_html import NETWORK, count_charts


def _scenario_file(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny()))
    return path


def test_simulate_with_report_writes_html_and_json_with_series(tmp_path):
    scenario = _scenario_file(tmp_path)
    out, report = tmp_path / "r.json", tmp_path / "r.html"
    result = CliRunner().invoke(cli, ["simulate", str(scenario), "--strategy", "keda-queue",
                                      "--out", str(out), "--report", str(report)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert [r["name"] for r in data["runs"]] == ["keda-queue"]
    assert SERIES_KEY in data["runs"][0]
    html = report.read_text()
    assert "replicas" in count_charts(html).charts and not NETWORK.findall(html)


def test_json_without_series_flag_has_only_the_public_keys(tmp_path):
    scenario = _scenario_file(tmp_path)
    result = CliRunner().invoke(cli, ["compare", str(scenario), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert all(SERIES_KEY not in run for run in json.loads(result.output)["runs"])
    result = CliRunner().invoke(cli, ["compare", str(scenario), "--format", "json", "--series"])
    assert all(SERIES_KEY in run for run in json.loads(result.output)["runs"])


def test_report_from_json_scenario_and_sweep_table(tmp_path):
    scenario = _scenario_file(tmp_path)
    out = tmp_path / "r.json"
    runner = CliRunner()
    assert runner.invoke(cli, ["simulate", str(scenario), "--series", "--out", str(out),
                               "--format", "json"]).exit_code == 0
    table = tmp_path / "sweep.csv"
    table.write_text("run_id,strategy,scenario_hash,set:seed,cost_usd,slo_attainment\n"
                     "a,s,h,1,1.5,0.9\nb,s,h,2,1.0,0.95\n")
    html = tmp_path / "report.html"
    result = runner.invoke(cli, ["report", str(out), str(table), "--out", str(html),
                                 "--charts-dir", str(tmp_path / "charts")])
    assert result.exit_code == 0, result.output
    charts = count_charts(html.read_text()).charts
    assert "pareto" in charts and "replicas" in charts
    assert (tmp_path / "charts" / "pareto.svg").exists()
    again = runner.invoke(cli, ["report", str(scenario), "--out", str(html)])
    assert again.exit_code == 2 and "exists" in again.output
    result = runner.invoke(cli, ["report", str(scenario), "--out", str(html), "--force"])
    assert result.exit_code == 0 and "cdf_ttft_s" in count_charts(html.read_text()).charts


def test_report_rejects_a_file_that_is_not_a_result(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text('{"hello": 1}')
    result = CliRunner().invoke(cli, ["report", str(bad), "--out", str(tmp_path / "r.html")])
    assert result.exit_code == 2 and "not a gpuscale result" in result.output


def test_a_hand_edited_result_or_table_is_refused_in_one_line(tmp_path):
    """Found by fuzzing: a result JSON whose series held strings, or whose summary numbers were
    lists, raised from the middle of the report."""
    scenario = _scenario_file(tmp_path)
    out = tmp_path / "r.json"
    runner = CliRunner()
    assert runner.invoke(cli, ["simulate", str(scenario), "--series", "--out", str(out),
                               "--format", "json"]).exit_code == 0
    data = json.loads(out.read_text())
    columns = data["runs"][0][SERIES_KEY]["columns"]
    columns["time_s"] = ["a"] * len(columns["time_s"])
    out.write_text(json.dumps(data))
    result = runner.invoke(cli, ["report", str(out), "--out", str(tmp_path / "r.html")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"{out}: a value in it is not what gpuscale writes" in result.output
    assert not (tmp_path / "r.html").exists()
    table = tmp_path / "sweep.csv"
    table.write_text("run_id,strategy,scenario_hash,set:seed,cost_usd,slo_attainment\n"
                     "a,s,h,1,[1],0.9\nb,s,h,2,1.0,0.95\n")
    result = runner.invoke(cli, ["report", str(table), "--out", str(tmp_path / "s.html")])
    assert result.exit_code == 2 and "gpuscale sweep" in result.output
