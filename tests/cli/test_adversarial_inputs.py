"""The adversarial results of issue 30, each a result or one line and exit 2: the process's
environment (closed or full streams, an ASCII terminal, a deleted working directory), defaults
files and environment variables held to the flags' rules, numbers past what a command or a
cluster can do (up-front work estimates), and the wrong results (seeds, strategies, jobs)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuscale.cli import cli

from ..poisson_scenario import poisson_scenario

TINY = poisson_scenario("tiny", duration_s=120, rate_per_s=0.5)

SCHEDULE = """name: sch
duration_s: 600
initial_nodes:
  - {name_prefix: n, instance_type: p5.48xlarge, count: 2}
jobs:
  - {name: a, num_pods: 2, gpus_per_pod: 8, duration_s: 60}
schedulers:
  - kind: kube-scheduler
"""


@pytest.fixture
def tiny(tmp_path) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(TINY)
    return path


def _invoke(args: list[str], env: dict | None = None, **kwargs):
    start = time.perf_counter()
    result = CliRunner(env=env).invoke(cli, args, **kwargs)
    assert time.perf_counter() - start < 30, "no hang: answered up front"
    return result


def _one_line(args: list[str], *expected: str, env: dict | None = None) -> str:
    result = _invoke(args, env)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("gpuscale: error:"), result.output
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


def _process(args: list[str], cwd: Path | None = None, encoding: str = "utf-8", **kwargs):
    env = dict(os.environ, **kwargs.pop("env", {}))
    kwargs.setdefault("stdout", subprocess.PIPE)
    return subprocess.run([sys.executable, "-m", "gpuscale", *args], cwd=cwd, env=env,
                          stderr=subprocess.PIPE, encoding=encoding, errors="backslashreplace",
                          timeout=120, **kwargs)


# ---------------------------------------------------------------- the process's environment
def test_a_full_stdout_is_one_line(tiny):
    with open("/dev/full", "w") as full:
        done = _process(["simulate", str(tiny), "-o", "json"], stdout=full)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == ("gpuscale: error: cannot write standard output: No space "
                                   "left on device")


def test_a_closed_stdout_is_an_error_not_a_lost_result(tiny):
    # `gpuscale simulate S >&-`: the interpreter starts without a stdout.
    done = _process(["simulate", str(tiny)], stdout=None, preexec_fn=lambda: os.close(1))
    assert done.returncode == 2
    assert "standard output is closed" in done.stderr and "Traceback" not in done.stderr


def test_a_closed_stdin_for_dash_is_one_line():
    done = _process(["simulate", "-"], stdin=subprocess.DEVNULL)
    assert done.returncode == 2  # /dev/null: empty, a plain input error
    closed = _process(["simulate", "-"], preexec_fn=lambda: os.close(0))
    assert closed.returncode == 2 and "standard input is closed" in closed.stderr
    assert "Traceback" not in closed.stderr


def test_a_deleted_working_directory_is_one_line(tmp_path, tiny):
    gone = tmp_path / "gone"
    gone.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", f"import os, sys; os.chdir({str(gone)!r}); os.rmdir({str(gone)!r});"
         "from gpuscale.cli import entry; sys.argv = ['gpuscale', 'simulate', "
         f"{str(tiny)!r}]; entry()"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "working directory is gone" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_names_the_terminal_cannot_encode_are_escaped(tmp_path, encoding):
    path = tmp_path / "s.yaml"
    path.write_text(TINY.replace("name: tiny", "name: 日本-tïny").replace(
        "name: fixed1", "name: fïxed-日"), encoding="utf-8")
    done = _process(["simulate", str(path)], env={"PYTHONIOENCODING": encoding},
                    encoding=encoding)
    assert done.returncode == 0, done.stderr
    shown = "f\\xefxed-\\u65e5" if encoding == "ascii" else "fïxed-\\u65e5"
    assert "Traceback" not in done.stderr and shown in done.stdout


# ---------------------------------------------------------------- defaults file, environment
@pytest.mark.parametrize(("text", "expected"), [
    ("simulate: {seeds: [1, 2]}\n", "simulate.seeds: expected one value, got a list"),
    ("simulat: {seeds: 2}\n", "no gpuscale command 'simulat'; did you mean 'simulate'?"),
    ("simulate: {seed: true}\n", "simulate.seed: expected an integer, got true"),
    ("simulate: {seeds: 1.5}\n", "simulate.seeds: expected a whole number, got 1.5"),
    ("simulate: {wide: 3}\n", "simulate.wide: expected true or false, got 3"),
    ("simulate: {seeds: 0}\n", "simulate.seeds"),
])
def test_the_defaults_file_is_held_to_the_flags_rules(tmp_path, tiny, monkeypatch, text,
                                                      expected):
    (tmp_path / ".gpuscale.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GPUSCALE_CONFIG", raising=False)
    _one_line(["simulate", str(tiny)], ".gpuscale.yaml", expected)


@pytest.mark.parametrize(("variable", "value", "expected"), [
    ("GPUSCALE_COMPARE_FAIL_UNDER_SLO", "nan", "'nan' is outside 0..100 %"),
    ("GPUSCALE_COMPARE_FAIL_UNDER", "nan", "'nan' is outside 0..100 %"),
    ("GPUSCALE_COMPARE_STRATEGY", "bogus", None),
    ("GPUSCALE_COMPARE_SEEDS", "1000000000", "--seeds"),
    ("GPUSCALE_COMPARE_SEDS", "3", "did you mean GPUSCALE_COMPARE_SEEDS?"),
])
def test_environment_values_are_validated_as_the_flags_are(tiny, variable, value, expected):
    if expected is None:  # compare has no --strategy: an unknown variable, named
        expected = f"{variable} sets no option of `gpuscale compare`"
    _one_line(["compare", str(tiny)], expected, env={variable: value})


def test_an_unknown_strategy_from_the_environment_is_refused(tiny):
    _one_line(["simulate", str(tiny)], "no strategy named 'bogus'",
              env={"GPUSCALE_SIMULATE_STRATEGY": "bogus"})


# ---------------------------------------------------------------- numbers and work up front
def test_a_billion_seeds_is_refused_before_any_run(tiny):
    _one_line(["simulate", str(tiny), "--seeds", "1000000000"], "--seeds")
    _one_line(["simulate", str(tiny), "--seeds", "60000"], "120,000 simulation runs")


def test_seeds_past_64_bits_are_refused_not_echoed(tiny):
    _one_line(["simulate", str(tiny), "--seed", str(2**80)], "64-bit")
    _one_line(["simulate", str(tiny), "--seed", str(2**63 - 1), "--seeds", "2"], "64-bit")


@pytest.mark.parametrize(("edit", "expected"), [
    (("replicas: 1}", "replicas: 1000000000}"), "150,000 pods"),
    (("max_replica_count: 2", "max_replica_count: 1000000000000"), "150,000 pods"),
    (("max_nodes: 2", "max_nodes: 1000000000"), "5,000 nodes"),
    (("seed: 1", "seed: true"), "seed"),
    (("threshold: 4", "threshold: true"), "expected a number, got true or false"),
    (("name: fixed1", "name: '  '"), "a strategy needs a name"),
    # past any calendar: a traceback from the wall-clock end of the traffic (cron windows)
    (("duration_s: 120", "duration_s: 1.0e15"), "31-day horizon"),
    (("seed: 1", "seed: 1\nstart_time: '9999-12-31T23:59:00Z'"), "start_time"),
    (("seed: 1", "seed: 1\nstart_time: '0001-01-01T00:00:00Z'"), "start_time"),
])
def test_a_scenario_past_any_cluster_or_with_a_bool_number_is_one_line(tmp_path, edit,
                                                                       expected):
    path = tmp_path / "s.yaml"
    path.write_text(TINY.replace(*edit))
    _one_line(["simulate", str(path)], expected)


@pytest.mark.parametrize(("edit", "expected"), [
    (("num_pods: 2", "num_pods: 1000000"), "1,000,000 pods"),
    (("count: 2", "count: 1000000000"), "5,000 nodes"),
    (("gpus_per_pod: 8", "gpus_per_pod: 0"), "gpus_per_pod"),
    (("schedulers:\n  - kind: kube-scheduler", "schedulers: []"), "schedulers"),
    (("jobs:\n", "jobs:\n  - {name: a, num_pods: 1, gpus_per_pod: 1, duration_s: 60}\n"),
     "both named 'a'"),
])
def test_schedule_work_and_names_are_checked_up_front(tmp_path, edit, expected):
    path = tmp_path / "sch.yaml"
    path.write_text(SCHEDULE.replace(*edit))
    _one_line(["schedule", str(path)], expected)


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_billion_run_grid_is_refused_before_it_is_listed(tmp_path, tiny, dry_run):
    grid = tmp_path / "grid.yaml"
    grid.write_text("parameters:\n  seed: [" + ", ".join(map(str, range(1, 40_001))) + "]\n"
                    "  duration_s: [" + ", ".join(map(str, range(100, 125_101))) + "]\n")
    out = tmp_path / "t.csv"
    _one_line(["sweep", str(tiny), "--grid", str(grid), "--out", str(out),
               *(["--dry-run"] if dry_run else [])], "10,000,080,000 simulation runs")
    assert not out.exists() and not (tmp_path / "t.csv.lock").exists()


@pytest.mark.parametrize("args", [
    ["audit", "--max-bytes", "100000000000000000000000", "x.yaml"],
    ["diagnose", "--max-bytes", "100000000000000000000000", "x.yaml"],
    ["plan", "x.yaml", "--time-budget-s", "nan"],
    ["plan", "x.yaml", "--time-budget-s", "inf"],
    ["sweep", "s.yaml", "--grid", "g.yaml", "--out", "t.csv", "--workers", "100000000"],
    ["plan", "x.yaml", "--workers", "100000000"],
    ["calibrate", "--fit", "x.json", "--tp", "1000000000"],
    ["calibrate", "--fit", "x.json", "--max-num-seqs", "1000000000000"],
])
def test_huge_and_non_finite_numbers_in_options_are_one_line(args):
    _one_line(args, "Invalid value")


# ---------------------------------------------------------------- wrong results
def test_a_repeated_strategy_runs_once(tiny):
    result = _invoke(["simulate", str(tiny), "--strategy", "fixed1", "--strategy", "fixed1",
                      "-o", "json"])
    assert result.exit_code == 0, result.output
    import json

    assert [r["name"] for r in json.loads(result.output)["runs"]] == ["fixed1"]


def test_an_empty_strategy_name_is_one_line(tiny):
    _one_line(["simulate", str(tiny), "--strategy", ""], "--strategy: an empty name")


@pytest.mark.parametrize("name", ["x.json/", "x.json/."])
def test_an_output_path_ending_in_a_separator_writes_nothing(tmp_path, tiny, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    _one_line(["simulate", str(tiny), "--out", name], "names a directory")
    assert not (tmp_path / "x.json").exists()


def test_a_300_character_output_name_is_one_line_before_the_run(tmp_path, tiny, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _one_line(["simulate", str(tiny), "--out", "a" * 300 + ".json"], "at most 255")
    assert [p.name for p in tmp_path.iterdir()] == ["s.yaml"]


# ---------------------------------------------------------------- report inputs and outputs
@pytest.mark.parametrize("body", [b"hello\n", b"PAR1" + b"x" * 8 + b"PAR1"])
def test_a_parquet_file_that_is_not_parquet_is_one_line(tmp_path, body):
    pytest.importorskip("pyarrow")
    bad = tmp_path / "t.parquet"
    bad.write_bytes(body)
    _one_line(["report", str(bad), "--out", str(tmp_path / "r.html")],
              "not a readable Parquet file")
    assert not (tmp_path / "r.html").exists()


def test_a_sweep_table_that_is_a_device_is_read_capped(tmp_path):
    table = tmp_path / "t.csv"
    table.symlink_to("/dev/zero")
    _one_line(["report", str(table), "--out", str(tmp_path / "r.html")], "limit")


def test_charts_dir_naming_a_file_is_one_line_before_any_output(tmp_path, tiny):
    result = _invoke(["simulate", str(tiny), "-o", "json", "--out", str(tmp_path / "r.json")])
    assert result.exit_code == 0, result.output
    a_file = tmp_path / "charts"
    a_file.write_text("not a directory")
    _one_line(["report", str(tmp_path / "r.json"), "--out", str(tmp_path / "r.html"),
               "--charts-dir", str(a_file)], "is not a directory")
    assert not (tmp_path / "r.html").exists() and a_file.read_text() == "not a directory"


# ---------------------------------------------------------------- signals mid-run
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_mid_run_ends_in_one_line_and_leaves_no_temporary_file(tmp_path, signum):
    path = tmp_path / "s.yaml"
    path.write_text(TINY.replace("duration_s: 120", "duration_s: 100000").replace(
        "rate_per_s: 0.5", "rate_per_s: 20"))
    # SIGINT as a terminal's program gets it: a suite started in the background by a
    # non-interactive shell inherits it ignored, and Python then keeps it ignored (the run
    # finished with exit 0 under `nohup make test &`).
    proc = subprocess.Popen([sys.executable, "-m", "gpuscale", "simulate", str(path), "--out",
                             str(tmp_path / "r.json")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(4)
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 2, stderr
    assert stderr.startswith("gpuscale: error: stopped by") and stderr.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]  # no .r.json.*.tmp


@pytest.mark.parametrize("text", ["", "[1, 2]\n", "just text\n"])
def test_a_sweep_of_a_file_that_is_no_scenario_is_one_line(tmp_path, text):
    # Found by tests/fuzz/fuzz_cli.py (`sweep /dev/null`): an AttributeError traceback.
    scenario, grid = tmp_path / "s.yaml", tmp_path / "g.yaml"
    scenario.write_text(text)
    grid.write_text('parameters:\n  seed: [1, 2]\n')
    _one_line(["sweep", str(scenario), "--grid", str(grid), "--out", str(tmp_path / "t.csv")],
              "expected a scenario")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.yaml", "s.yaml"]


def test_seeds_over_two_manifest_bundles_are_counted_before_any_run():
    """`compare --manifests A --manifests B`: the runs of every bundle count together."""
    from ..importer.bundle import CATALOG, MANIFESTS, TRACE

    _one_line(["compare", "--manifests", str(MANIFESTS), "--manifests", str(MANIFESTS),
               "--trace", str(TRACE), "--catalog", str(CATALOG), "--seeds", "60000"],
              "120,000 simulation runs")


def test_a_trace_spanning_millions_of_years_is_the_horizon_not_a_manifest_field(tmp_path):
    # The imported scenario's duration (the trace's span) overflowed the wall-clock end of the
    # traffic, which the importer reported as a field of the manifests with the wrong type.
    from ..importer.bundle import CATALOG, MANIFESTS

    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n1,100,10\n1e15,100,10\n")
    line = _one_line(["simulate", "--manifests", str(MANIFESTS), "--catalog", str(CATALOG),
                      "--trace", str(trace)], "31-day horizon")
    assert "a field has a type its API does not allow" not in line


@pytest.mark.parametrize("year", ["2250", "1690"])
def test_a_trace_clock_past_the_calendar_names_the_trace(tmp_path, year):
    # Azure's TIMESTAMP reads 1678..2261; a run starting past 2200 (or before the Unix epoch)
    # overflowed or exported negative timestamps; the importer took it as the run's start.
    from ..importer.bundle import CATALOG, MANIFESTS

    trace = tmp_path / "az.csv"
    trace.write_text(f"TIMESTAMP,ContextTokens,GeneratedTokens\n"
                     f"{year}-11-16 18:15:46.6805900,100,10\n")
    line = _one_line(["simulate", "--manifests", str(MANIFESTS), "--catalog", str(CATALOG),
                      "--trace", str(trace)], "az.csv", "first request", "1970-01-01 .. 2200")
    assert "Deployment" not in line


def test_a_start_time_option_past_the_calendar_is_one_line(tiny):
    _one_line(["simulate", str(tiny), "--start-time", "9999-12-31T23:59:00Z"], "--start-time",
              "2200-01-01")


def test_a_scenario_on_a_trace_clock_past_the_calendar_is_one_line(tmp_path):
    (tmp_path / "az.csv").write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                     "2250-11-16 18:15:46.6805900,100,10\n")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "name: t\nduration_s: 60\nmodel: {name: Llama-3.1-8B, precision: bf16, tp: 1}\n"
        "cluster: {instance_type: g6e.2xlarge, ready_nodes: 1, max_nodes: 2}\n"
        "workload: {kind: trace, path: az.csv, format: azure}\n"
        "strategies:\n  - {name: f, autoscaler: {kind: fixed, replicas: 1}}\n")
    _one_line(["simulate", str(scenario)], "the trace's first request", "2200-01-01")
