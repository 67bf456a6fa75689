"""`gpuscale backtest` end to end: the same seed gives the same bytes, alternatives get the
verdict `compare` gives, the report draws recorded above replayed, and a scrape outage or a
restarted engine is handled and said."""

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuscale.cli import cli

from . import roundtrip as rt

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "backtest"


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> tuple[Path, dict]:
    folder = tmp_path_factory.mktemp("history")
    trace = rt.write_trace(folder / "t.csv", "step", 7, 0.5, 5.0, minutes=15)
    path = folder / "history.om"
    run = rt.invoke(["simulate", "--manifests", str(EXAMPLE / "manifests"), "--trace",
                     str(trace), "--metrics-out", str(path), "-o", "json"])
    return path, run


def _backtest(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["backtest", *args, "-o", "json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _without_wall(data: dict) -> dict:
    for run in data["runs"]:
        run.pop("wall_s")
    return data


def test_same_seed_same_result_other_seed_other_traffic(history, tmp_path):
    path, _ = history
    args = ["--manifests", str(EXAMPLE / "manifests"), "--history", str(path)]
    one, two = (_backtest(*args, "--emit-trace", str(tmp_path / f"{i}.csv")) for i in (1, 2))
    assert _without_wall(one) == _without_wall(two)
    assert (tmp_path / "1.csv").read_bytes() == (tmp_path / "2.csv").read_bytes()
    _backtest(*args, "--seed", "5", "--emit-trace", str(tmp_path / "5.csv"))
    assert (tmp_path / "5.csv").read_bytes() != (tmp_path / "1.csv").read_bytes()


def test_alternatives_run_on_the_same_traffic_with_the_verdict(history):
    path, _ = history
    data = _backtest("--manifests", str(EXAMPLE / "manifests"), "--manifests",
                     str(EXAMPLE / "proposal"), "--history", str(path))
    assert [r["name"] for r in data["runs"]] == ["manifests", "proposal"]
    assert {r["requests"]["total"] for r in data["runs"]} == \
        {data["backtest"]["traffic"]["requests"]}
    assert re.match(r"verdict: (proposal|manifests|no strategy) ", data["verdict"])
    assert data["backtest"]["replayed"] == "manifests"
    # The alternative starts from the history's replicas, within its own bounds (min 2).
    assert data["runs"][1]["replicas"]["initial"] == 2


def test_the_table_says_agreement_and_the_report_draws_both(history, tmp_path):
    path, _ = history
    report = tmp_path / "r.html"
    result = CliRunner().invoke(cli, ["backtest", "--manifests", str(EXAMPLE / "manifests"),
                                      "--history", str(path), "--report", str(report)])
    assert result.exit_code == 0, result.output
    assert re.search(r"agreement of llama-8b with the history: (AGREES|DIVERGES)",
                     result.output)
    assert "replicas within one of the recorded" in result.output
    html = report.read_text()
    for name in ("replicas", "queue", "ttft_p99_s"):
        for side in ("recorded", "replayed"):
            drawn = re.search(rf'id="chart-backtest_{name}_{side}".*?data-n="(\d+)"', html,
                              re.S)
            assert drawn and int(drawn.group(1)) > 10


def _drop_span(text: str, lo_s: float, hi_s: float, only: str | None = None) -> str:
    """The export without the samples in (lo, hi) (of series containing `only`, or all)."""
    kept = []
    for line in text.splitlines():
        parts = line.rsplit(" ", 1)
        if not line.startswith("#") and len(parts) == 2 and (only is None or only in line):
            t = float(parts[1]) - 1_767_225_600
            if lo_s < t < hi_s:
                continue
        kept.append(line)
    return "\n".join(kept) + "\n"


def test_a_scrape_outage_is_spread_and_reported(history, tmp_path):
    path, _ = history
    gapped = tmp_path / "gap.om"
    gapped.write_text(_drop_span(path.read_text(), 300, 400))
    data = _backtest("--manifests", str(EXAMPLE / "manifests"), "--history", str(gapped))
    assert data["backtest"]["history"]["gaps"] == [{"from_s": 300.0, "to_s": 405.0}]
    # The outage hides no request: its counts are spread over its windows.
    assert data["backtest"]["traffic"]["requests"] == \
        _backtest("--manifests", str(EXAMPLE / "manifests"), "--history",
                  str(path))["backtest"]["traffic"]["requests"]


def test_bundle_from_stdin_and_no_bundle_are_usage_errors(history):
    path, _ = history
    for args in (["--manifests", "-"], []):
        result = CliRunner().invoke(cli, ["backtest", *args, "--history", str(path)])
        assert result.exit_code == 2 and "--manifests" in result.output


def test_the_lengths_lag_needs_only_the_latency_sum_and_count(history):
    """The docs ask for vllm:e2e_request_latency_seconds_{sum,count}: without its buckets the
    lengths still come from the completions one mean decode after the first tokens."""
    path, _ = history
    full = _backtest("--manifests", str(EXAMPLE / "manifests"), "--history", str(path))
    bare = path.with_name("no-e2e-buckets.om")
    bare.write_text("".join(line for line in path.read_text().splitlines(keepends=True)
                            if not line.startswith("vllm:e2e_request_latency_seconds_bucket")))
    data = _backtest("--manifests", str(EXAMPLE / "manifests"), "--history", str(bare))
    lag_s = data["backtest"]["traffic"]["length_lag_s"]
    assert lag_s > 0 and lag_s == full["backtest"]["traffic"]["length_lag_s"]
    assert "_sum / _count" in data["backtest"]["traffic"]["length_lag_from"]


def test_the_replay_runs_as_compare_runs_a_bundle(history, tmp_path):
    """One run path with compare --manifests: the decision log and the replay's own series
    (on the history's clock, so both fit in one Prometheus), and --seeds refused in one
    line (the traffic is rebuilt once per --seed)."""
    path, _ = history
    series, log = tmp_path / "replay.om", tmp_path / "decisions.jsonl"
    data = _backtest("--manifests", str(EXAMPLE / "manifests"), "--history", str(path),
                     "--metrics-out", str(series), "--decisions", str(log))
    assert data["backtest"]["agreement"]["replicas_within_one_frac"] is not None
    assert any('"controller"' in line for line in log.read_text().splitlines())
    recorded = [float(line.rsplit(" ", 1)[1]) for line in path.read_text().splitlines()
                if line.startswith("kube_deployment_spec_replicas{")]
    replayed = [float(line.rsplit(" ", 1)[1]) for line in series.read_text().splitlines()
                if line.startswith("kube_deployment_spec_replicas{")]
    assert min(recorded) <= min(replayed) < min(recorded) + 60  # from the first request
    assert abs(max(replayed) - max(recorded)) <= 15.0  # to the history's end
    result = CliRunner().invoke(cli, ["backtest", "--manifests", str(EXAMPLE / "manifests"),
                                      "--history", str(path), "--seeds", "2"])
    assert result.exit_code == 2 and "--seeds" in result.output


def test_replicas_changed_by_hand_are_named_as_what_diverges_first(history, tmp_path):
    """The same history with three replicas more recorded from minute 5 (a hand edit the
    manifests do not carry): the load still agrees, so the replicas depart first."""
    path, _ = history
    edited = []
    for line in path.read_text().splitlines():
        if line.startswith("kube_deployment_spec_replicas{"):
            head, value, stamp = line.rsplit(" ", 2)
            if float(stamp) - 1_767_225_600 >= 300:
                line = f"{head} {float(value) + 3} {stamp}"
        edited.append(line)
    hand = tmp_path / "hand.om"
    hand.write_text("\n".join(edited) + "\n")
    agree = _backtest("--manifests", str(EXAMPLE / "manifests"), "--history",
                      str(hand))["backtest"]["agreement"]
    assert not agree["agrees"]
    assert agree["first_divergence"]["signal"] == "replicas"
    assert 300 <= agree["first_divergence"]["at_s"] <= 330


def test_without_a_replica_count_the_agreement_cannot_tell(history, tmp_path):
    """No kube-state-metrics replicas and no vLLM pods' gauges to count: not DIVERGES (which
    would send a user looking for a wrong setting) but what to export."""
    path, _ = history
    bare = tmp_path / "no-replicas.om"
    bare.write_text("".join(
        line for line in path.read_text().splitlines(keepends=True)
        if not line.startswith(("kube_deployment_", "vllm:num_requests_running"))))
    result = CliRunner().invoke(cli, ["backtest", "--manifests", str(EXAMPLE / "manifests"),
                                      "--history", str(bare)])
    assert result.exit_code == 0, result.output
    assert "with the history: CANNOT TELL" in result.output
    assert "kube_deployment_spec_replicas" in result.output
    data = _backtest("--manifests", str(EXAMPLE / "manifests"), "--history", str(bare))
    assert data["backtest"]["agreement"]["agrees"] is None
