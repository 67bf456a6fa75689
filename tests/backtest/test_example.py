"""The worked example of docs/backtest.md runs as written, and the figures the page quotes
are the ones it prints (so the page stays true when the model moves)."""

import json
import re
import runpy
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuscale.cli import cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "backtest"
DOC = ROOT / "docs" / "backtest.md"


@pytest.fixture(scope="module")
def example(tmp_path_factory) -> tuple[dict, str, Path]:
    folder = tmp_path_factory.mktemp("example")
    runpy.run_path(str(EXAMPLE / "make_history.py"), run_name="make_history")["main"](folder)
    args = ["backtest", "--manifests", str(EXAMPLE / "manifests"), "--manifests",
            str(EXAMPLE / "proposal"), "--history", str(folder / "history.om")]
    table = CliRunner().invoke(cli, [*args, "--report", str(folder / "backtest.html")])
    assert table.exit_code == 0, table.output
    data = CliRunner().invoke(cli, [*args, "-o", "json"])
    assert data.exit_code == 0, data.output
    return json.loads(data.output), table.output, folder


def _quoted(pattern: str) -> tuple[str, ...]:
    found = re.search(pattern, " ".join(DOC.read_text().split()))
    assert found, f"docs/backtest.md no longer says {pattern!r}"
    return found.groups()


def test_the_example_agrees_with_its_history_as_the_page_says(example):
    data, table, _ = example
    agree = data["backtest"]["agreement"]
    within, matched, recorded, lag, gpu_sim, gpu_rec, slo_sim, slo_rec = _quoted(
        r"replicas within one of the recorded ([\d.]+) % of the time, (\d+) of (\d+) scale "
        r"events matched with a median lag of (-?\d+) s, GPU-hours ([\d.]+) against ([\d.]+) "
        r"recorded, first tokens within the TTFT SLO ([\d.]+) % against ([\d.]+) %")
    assert f"{100 * agree['replicas_within_one_frac']:.1f}" == within
    events = agree["scale_events"]
    assert (str(events["matched"]), str(events["recorded"])) == (matched, recorded)
    assert f"{events['lag_s_median']:g}" == lag
    assert (f"{agree['gpu_hours']['simulated']:.2f}", f"{agree['gpu_hours']['recorded']:.2f}"
            ) == (gpu_sim, gpu_rec)
    slo = agree["ttft_within_slo_frac"]
    assert (f"{100 * slo['simulated']:.1f}", f"{100 * slo['recorded']:.1f}") == (slo_sim,
                                                                                 slo_rec)
    assert agree["agrees"] and data["backtest"]["replayed"] == "manifests"
    assert "agreement of manifests with the history: AGREES" in table


def test_the_alternative_is_judged_as_the_page_says(example):
    data, table, _ = example
    today, proposal = data["runs"]
    slo_today, gpu_today, slo_proposal, gpu_proposal = _quoted(
        r"today's setup meets the SLO for ([\d.]+) % of the requests at ([\d.]+) GPU-hours; "
        r"the proposal for ([\d.]+) % at ([\d.]+)")
    assert (f"{100 * today['slo_attainment']:.1f}", f"{today['gpu_hours']:.1f}") == \
        (slo_today, gpu_today)
    assert (f"{100 * proposal['slo_attainment']:.3g}", f"{proposal['gpu_hours']:.1f}") == \
        (slo_proposal, gpu_proposal)
    assert data["verdict"].startswith("verdict: proposal ")
    assert "verdict: proposal" in " ".join(table.split())


def test_the_report_draws_recorded_above_replayed(example):
    html = (example[2] / "backtest.html").read_text()
    assert "Backtest: recorded vs replayed" in html
    for name in ("replicas", "queue", "ttft_p99_s"):
        recorded = html.index(f'id="chart-backtest_{name}_recorded"')
        assert recorded < html.index(f'id="chart-backtest_{name}_replayed"')
