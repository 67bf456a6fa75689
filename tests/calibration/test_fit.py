"""`calibrate --fit`: recovers efficiency factors from bench results it generated itself with
other constants, and writes an overlay `--catalog` takes."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from gpuscale.calibration.fit import BenchPoint, predict
from gpuscale.catalog import Precision, get_gpu, get_model
from gpuscale.catalog.specs import set_user_engine_overrides, set_user_entries
from gpuscale.cli import cli
from gpuscale.serving.performance import ReplicaHardware

TRUE_HBM, TRUE_COMPUTE = 0.62, 0.48  # not the catalog's H100 factors (0.86, 0.70)
TRUE_HOST_S = 1.5e-3  # not vLLM's 126 us: a slow host CPU


@pytest.fixture(autouse=True)
def _no_user_catalog():
    set_user_entries({}, {}, {})
    set_user_engine_overrides({})
    yield
    set_user_entries({}, {}, {})
    set_user_engine_overrides({})


def truth_hardware(gpu="H100-SXM", host_step_s=TRUE_HOST_S) -> ReplicaHardware:
    truth = replace(get_gpu(gpu), hbm_efficiency=TRUE_HBM, compute_efficiency=TRUE_COMPUTE)
    return ReplicaHardware(truth, get_model("Llama-3.1-8B"), Precision.BF16, Precision.BF16, 1,
                           host_step_s=host_step_s)


def synthetic_bench(path, rates=(0.5, 4.0, math.inf), n=400) -> None:
    """bench-serve result objects as vLLM writes them, measured on a GPU with other factors and
    a slower host. A rate of 0.5/s decodes ~1-2 sequences, inf ~100: host time and HBM
    efficiency separate on the pair."""
    rng = np.random.default_rng(7)
    prompt = np.clip(rng.lognormal(np.log(800), 0.6, n), 16, 4000).astype(int)
    output = np.clip(rng.lognormal(np.log(300), 0.6, n), 2, 2000).astype(int)
    hw = truth_hardware()
    results = []
    for rate in rates:
        r = predict(hw, BenchPoint("x", rate, prompt, output, 1, 1, 1, 256))
        results.append({"backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B-Instruct",
                        "request_rate": "inf" if math.isinf(rate) else rate,
                        "max_concurrency": None, "completed": len(prompt),
                        "total_input_tokens": int(prompt.sum()),
                        "total_output_tokens": int(output.sum()),
                        "input_lens": prompt.tolist(), "output_lens": output.tolist(),
                        "mean_ttft_ms": r.mean_ttft_s * 1e3, "mean_tpot_ms": r.mean_tpot_s * 1e3,
                        "output_throughput": r.output_tokens_per_s})
    path.write_text("\n".join(json.dumps(r) for r in results) + "\n")


@pytest.mark.slow
def test_fit_recovers_the_factors_and_writes_an_overlay(tmp_path):
    bench, overlay = tmp_path / "bench.jsonl", tmp_path / "overlay.yaml"
    synthetic_bench(bench)
    result = CliRunner().invoke(cli, ["calibrate", "--fit", str(bench), "--gpu", "H100-SXM",
                                      "--model", "Llama-3.1-8B", "--tp", "1", "--format", "json",
                                      "--overlay", str(overlay)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["input_format"] == "bench-serve"
    assert set(data["fitted"]) == {"hbm_efficiency", "compute_efficiency", "host_step_s"}
    # A replay's means move in whole steps: the fit is as exact as that noise allows.
    assert data["hbm_efficiency"] == pytest.approx(TRUE_HBM, rel=0.03)
    assert data["compute_efficiency"] == pytest.approx(TRUE_COMPUTE, rel=0.03)
    assert data["host_step_s"] == pytest.approx(TRUE_HOST_S, rel=0.15)
    assert len(data["points"]) == 3
    assert all(abs(e) < 0.02 for p in data["points"] for e in p["error_frac"].values())
    written = yaml.safe_load(overlay.read_text())
    entry = written["gpus"]["H100-SXM"]
    assert entry["hbm_efficiency"] == pytest.approx(TRUE_HBM, rel=0.03)
    assert written["engines"]["vllm"]["host_step_ms"] == pytest.approx(TRUE_HOST_S * 1e3,
                                                                       rel=0.15)
    # The overlay is a catalog file: with it, the GPU and the engine run with the fit.
    from gpuscale.importer.catalog_files import use_catalogs
    from gpuscale.serving.engines import get_engine_profile

    use_catalogs([overlay])
    assert get_gpu("H100-SXM").hbm_efficiency == entry["hbm_efficiency"]
    assert "fit to 3 bench-serve point(s)" in get_gpu("H100-SXM").efficiency_source
    assert get_engine_profile("vllm").host_step_s == pytest.approx(
        written["engines"]["vllm"]["host_step_ms"] / 1e3)


def test_loaded_rates_alone_cannot_separate_host_time_from_hbm(tmp_path):
    """Two loaded rates (batches ~30 and ~100: too alike a host-to-HBM mix): host time is kept
    at the engine's, and said so."""
    bench = tmp_path / "bench.json"
    synthetic_bench(bench, rates=(8.0, math.inf), n=200)
    result = CliRunner().invoke(cli, ["calibrate", "--fit", str(bench), "--gpu", "H100-SXM",
                                      "--model", "Llama-3.1-8B", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert "host_step_s" in data["kept"] and "host_step_s" not in data["fitted"]
    assert data["host_step_s"] == pytest.approx(126e-6)
    assert "engines" not in data["overlay"]


def test_fit_table_shows_error_per_point(tmp_path):
    bench = tmp_path / "bench.json"
    synthetic_bench(bench, rates=(4.0,))
    result = CliRunner().invoke(cli, ["calibrate", "--fit", str(bench), "--gpu", "H100-SXM",
                                      "--model", "Llama-3.1-8B"])
    assert result.exit_code == 0, result.output
    assert "mean_tpot_s" in result.output and "host_step_s" in result.output


@pytest.mark.parametrize("content, expected", [
    ('{"completed": 10}', "total_input_tokens: expected a number > 0"),
    ('{"status": "error", "data": {}, "error": "bad"}', "status: expected \"success\""),
    ('{"status": "success", "data": {"resultType": "vector", "result": []}}',
     "data.resultType: expected \"matrix\""),
    ('{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": '
     '{"__name__": "vllm:num_requests_running"}, "values": [[1, "x"]]}]}}',
     "data.result[0].values[0]: expected [unix seconds"),
    ('{"q": {"status": "success", "data": {"resultType": "matrix", "result": [{"metric": '
     '{"__name__": "rate(vllm:x[1m])"}, "values": []}]}}}', "q.data.result[0].metric.__name__"),
    ('{"status": "success", "data": {"resultType": "matrix", "result": []}}', "no window to fit"),
    ('{"completed": 10, "max_concurrency": 8}', "max_concurrency"),
    ("not json", "not JSON"),
    ("[1]", "expected a bench result object"),
])
def test_bad_bench_files_are_one_line(tmp_path, content, expected):
    bench = tmp_path / "bench.json"
    bench.write_text(content)
    result = CliRunner().invoke(cli, ["calibrate", "--fit", str(bench), "--gpu", "H100-SXM",
                                      "--model", "Llama-3.1-8B"])
    assert result.exit_code == 2 and expected in result.output
    assert result.output.strip().count("\n") == 0


def test_fit_needs_gpu_and_model(tmp_path):
    result = CliRunner().invoke(cli, ["calibrate", "--fit", str(tmp_path / "b.json")])
    assert result.exit_code == 2 and "--gpu and --model" in result.output


def test_recorded_arrivals_and_token_budget_are_replayed_as_given():
    """A point with its own arrival times (a request log) and the server's token budget: the
    fit recovers the factors from predictions made with exactly those."""
    from gpuscale.calibration.fit import fit

    rng = np.random.default_rng(3)
    prompt = np.clip(rng.lognormal(np.log(600), 0.5, 150), 16, 3000).astype(int)
    output = np.clip(rng.lognormal(np.log(120), 0.5, 150), 2, 800).astype(int)
    arrival = np.cumsum(rng.exponential(0.2, 150))
    truth = replace(get_gpu("A100-80GB"), hbm_efficiency=0.55, compute_efficiency=0.6)
    hw = ReplicaHardware(truth, get_model("Llama-3.1-8B"), Precision.BF16, Precision.BF16, 1)
    template = BenchPoint("log", math.inf, prompt, output, 1, 1, 1, 128, 512, arrival)
    r = predict(hw, template)
    point = replace(template, mean_ttft_s=r.mean_ttft_s, mean_tpot_s=r.mean_tpot_s,
                    output_tokens_per_s=r.output_tokens_per_s)
    result = fit([point], "A100-80GB", "Llama-3.1-8B", 1)
    assert result.hbm_efficiency == pytest.approx(0.55, rel=0.03)
    assert result.compute_efficiency == pytest.approx(0.6, rel=0.05)


def synthetic_export(path, *, gpu="H100-SXM", buckets=False) -> None:
    """A Prometheus query_range export of two replicas whose windows were measured on a GPU
    with other factors and a slower host: the counters grow by what the step model predicts at
    those constants, for batches of 1 to 96 and a queued window (which must be left out)."""
    from gpuscale.calibration.fit_prometheus import WindowPoint

    hw = truth_hardware(gpu)
    step_s, prompt, output = 15.0, 900.0, 350.0
    levels = [1, 1, 2, 3, 6, 12, 24, 48, 96, 96, 60, 30, 8, 2]
    result = []
    for pod in ("a", "b"):
        running = levels if pod == "a" else levels[::-1]
        waiting = [0] * len(running)
        waiting[5] = waiting[6] = 4  # a queue in window 5: latency of the scheduler
        times = [1.7e9 + k * step_s for k in range(len(running))]
        sums = {n: [0.0] for n in ("tpot", "ttft")}
        counts = {n: [0.0] for n in ("tpot", "ttft")}
        gen_total, prompt_total = [0.0], [0.0]
        for k in range(len(running) - 1):
            batch = (running[k] + running[k + 1]) / 2
            steps = step_s / 0.02  # any step count: only the ratios matter
            generated, prompts = steps * batch, steps * batch / output
            point = WindowPoint(pod, 0, 1, batch, 0.0, 1.0, 1.0 if batch <= 2 else None,
                                prompt, output, prompts / steps)
            pred = point.predict_stats(hw)
            counts["tpot"].append(counts["tpot"][-1] + generated)
            sums["tpot"].append(sums["tpot"][-1] + generated * pred["mean_tpot_s"])
            counts["ttft"].append(counts["ttft"][-1] + prompts)
            sums["ttft"].append(sums["ttft"][-1] + prompts * pred.get("mean_ttft_s", 1.0))
            gen_total.append(gen_total[-1] + generated)
            prompt_total.append(prompt_total[-1] + prompts * prompt)
        n_done = [c / 1.0 for c in counts["ttft"]]
        labels = {"pod": pod, "model_name": "llama"}

        def add(name, values, labels=labels, times=times):
            result.append({"metric": {"__name__": name, **labels},
                           "values": [[t, str(v)] for t, v in zip(times, values, strict=True)]})

        add("vllm:num_requests_running", running)
        add("vllm:num_requests_waiting", waiting)
        add("vllm:inter_token_latency_seconds_sum", sums["tpot"])
        add("vllm:inter_token_latency_seconds_count", counts["tpot"])
        add("vllm:time_to_first_token_seconds_sum", sums["ttft"])
        add("vllm:time_to_first_token_seconds_count", counts["ttft"])
        add("vllm:request_prompt_tokens_sum", [c * prompt for c in n_done])
        add("vllm:request_prompt_tokens_count", n_done)
        add("vllm:request_generation_tokens_sum", [c * output for c in n_done])
        add("vllm:request_generation_tokens_count", n_done)
        add("vllm:prompt_tokens_total", prompt_total)
        add("vllm:generation_tokens_total", gen_total)
    path.write_text(json.dumps({"status": "success",
                                "data": {"resultType": "matrix", "result": result}}))


def test_fit_recovers_host_time_and_factors_from_a_prometheus_export(tmp_path):
    export, overlay = tmp_path / "prom.json", tmp_path / "overlay.yaml"
    synthetic_export(export)
    result = CliRunner().invoke(cli, ["calibrate", "--fit", str(export), "--gpu", "H100-SXM",
                                      "--model", "Llama-3.1-8B", "--format", "json",
                                      "--overlay", str(overlay)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["input_format"] == "prometheus"
    assert set(data["fitted"]) == {"hbm_efficiency", "compute_efficiency", "host_step_s"}
    assert data["hbm_efficiency"] == pytest.approx(TRUE_HBM, rel=0.01)
    assert data["compute_efficiency"] == pytest.approx(TRUE_COMPUTE, rel=0.01)
    assert data["host_step_s"] == pytest.approx(TRUE_HOST_S, rel=0.02)
    # 13 windows a replica; the three that touch the queue (samples 5 and 6) left out on each.
    assert len(data["points"]) == 20
    assert any("with a queue" in note for note in data["notes"])
    assert yaml.safe_load(overlay.read_text())["engines"]["vllm"]["host_step_ms"] == \
        pytest.approx(1.5, rel=0.02)


def test_prometheus_table_names_windows_and_batches(tmp_path):
    export = tmp_path / "prom.json"
    synthetic_export(export)
    result = CliRunner().invoke(cli, ["calibrate", "--fit", str(export), "--gpu", "H100-SXM",
                                      "--model", "Llama-3.1-8B"])
    assert result.exit_code == 0, result.output
    assert "prometheus point(s)" in result.output and "pod=a" in result.output
    assert "host_step_s" in result.output and "1.5" in result.output


def test_a_replayed_server_scraped_by_prometheus_fits_near_the_truth(tmp_path):
    """The export a scrape of gpuscale's own replay would hold (per-request timings, not the
    window model): the windows average over bursts, so the fit is near, not exact (the docs
    give the numbers)."""
    from gpuscale.calibration.fit import fit
    from gpuscale.calibration.fit_prometheus import read_export
    from gpuscale.calibration.prometheus_export import export_from_requests
    from gpuscale.serving.bench import replay
    from gpuscale.serving.kv_cache import num_kv_blocks
    from gpuscale.serving.replica import EngineConfig
    from gpuscale.workloads.base import Requests

    rng = np.random.default_rng(5)
    hw = truth_hardware()
    arrival = np.concatenate([k * 300 + np.sort(rng.uniform(0, 300, int(rate * 300)))
                              for k, rate in enumerate((0.3, 1, 3, 8))])
    n = len(arrival)
    prompt = np.clip(rng.lognormal(np.log(800), 0.6, n), 16, 4000).astype(int)
    output = np.clip(rng.lognormal(np.log(300), 0.6, n), 2, 2000).astype(int)
    blocks = num_kv_blocks(hw, gpu_memory_utilization=0.9, block_size=16,
                           activation_reserve_gib=2.0, non_torch_gib=0.5)
    cols = replay(hw, EngineConfig(256, 8192, 16, blocks, 10**6, 1e9),
                  Requests(arrival, prompt, output), 1).columns()
    export = export_from_requests(arrival_s=cols.arrival_s, scheduled_s=cols.first_token_s,
                                  first_token_s=cols.first_token_s, finish_s=cols.finish_s,
                                  prompt_tokens=cols.prompt_tokens,
                                  output_tokens=cols.output_tokens, replica=np.zeros(n, int))
    windows = read_export(export, "replay")
    result = fit(windows.points, "H100-SXM", "Llama-3.1-8B", 1, input_format="prometheus")
    assert result.compute_efficiency == pytest.approx(TRUE_COMPUTE, rel=0.1)
    assert result.hbm_efficiency == pytest.approx(TRUE_HBM, rel=0.25)
    # Far from the catalog's 0.86 / 0.70 it started at.
    assert result.hbm_efficiency < 0.75 and result.compute_efficiency < 0.6


def test_ttft_from_buckets_alone_matches_sum_and_count():
    """An export with only `_bucket` series for TTFT: the window means come from the bucket
    midpoints, within half a bucket of the _sum/_count means."""
    from gpuscale.calibration.fit_prometheus import TTFT_NAME, read_export
    from gpuscale.calibration.prometheus_export import export_from_requests

    rng = np.random.default_rng(2)
    n = 300
    arrival = np.sort(rng.uniform(0, 600, n))
    ttft = rng.uniform(0.06, 0.09, n)  # inside vLLM's 0.06-0.08-0.1 buckets
    first = arrival + ttft
    finish = first + rng.uniform(2, 4, n)
    export = export_from_requests(arrival_s=arrival, scheduled_s=first, first_token_s=first,
                                  finish_s=finish, prompt_tokens=np.full(n, 500),
                                  output_tokens=np.full(n, 100), replica=np.zeros(n, int),
                                  buckets=True)
    full = {p.start_s: p.mean_ttft_s for p in read_export(export, "x").points}
    result = export["data"]["result"]
    export["data"]["result"] = [s for s in result if s["metric"]["__name__"] not in
                                (f"{TTFT_NAME}_sum", f"{TTFT_NAME}_count")]
    from_buckets = {p.start_s: p.mean_ttft_s for p in read_export(export, "x").points}
    shared = [t for t in full if full[t] is not None and from_buckets.get(t) is not None]
    assert shared
    assert all(abs(from_buckets[t] - full[t]) <= 0.011 for t in shared)


def test_an_export_mapping_each_name_to_its_response_reads_the_same(tmp_path):
    """The other shape: {"vllm:...": <query_range response>} with series lacking __name__
    (one query per metric); without num_requests_waiting every window is used, said so."""
    from gpuscale.calibration.fit import read_points

    one = tmp_path / "one.json"
    synthetic_export(one)
    result = json.loads(one.read_text())["data"]["result"]
    by_name: dict = {}
    for series in result:
        name = series["metric"].pop("__name__")
        if name != "vllm:num_requests_waiting":
            by_name.setdefault(name, []).append(series)
    many = tmp_path / "many.json"
    many.write_text(json.dumps({name: {"status": "success", "data": {
        "resultType": "matrix", "result": items}} for name, items in by_name.items()}))
    fmt, points, notes = read_points(many, 256)
    assert fmt == "prometheus" and len(points) == 26  # the queued windows are kept now
    assert any("no vllm:num_requests_waiting" in n for n in notes)


@pytest.mark.parametrize("change, expected", [
    # Found by tests/fuzz/fuzz_inputs.py: an OverflowError traceback, a ZeroDivisionError, and
    # lengths of the wrong type silently replaced by the totals' mean.
    ({"input_lens": [2**70]}, "input_lens: expected a list of token counts"),
    ({"output_lens": "300"}, "output_lens: expected a list of token counts"),
    ({"input_lens": [1.5, 2]}, "input_lens: expected a list of token counts"),
    ({"completed": 0.5}, "completed: expected a whole number of requests"),
    ({"completed": -3}, "completed: expected a whole number of requests"),
    ({"input_lens": None, "total_input_tokens": 1e300}, "total_input_tokens: expected at most"),
])
def test_hostile_bench_values_are_one_line(tmp_path, change, expected):
    bench = tmp_path / "bench.jsonl"
    synthetic_bench(bench, n=40)
    objs = [json.loads(line) for line in bench.read_text().splitlines()]
    objs[1].update(change)
    bench.write_text("\n".join(json.dumps(o) for o in objs) + "\n")
    result = CliRunner().invoke(cli, ["calibrate", "--fit", str(bench), "--gpu", "H100-SXM",
                                      "--model", "Llama-3.1-8B"])
    assert result.exit_code == 2, result.output
    assert f"[1].{expected}" in result.output and "bench.jsonl" in result.output
    assert result.output.strip().count("\n") == 0


def test_a_prompt_histogram_that_never_grew_is_read_as_absent(tmp_path):
    """Found by fuzzing: a request_prompt_tokens sum stuck at 0 (count growing) divided by a
    mean prompt of 0 tokens, a ZeroDivisionError traceback. It now fits on the assumed lengths
    and says so."""
    export = tmp_path / "prom.json"
    synthetic_export(export)
    data = json.loads(export.read_text())
    for series in data["data"]["result"]:
        if series["metric"]["__name__"] == "vllm:request_prompt_tokens_sum":
            series["values"] = [[t, "0"] for t, _ in series["values"]]
    export.write_text(json.dumps(data))
    result = CliRunner().invoke(cli, ["calibrate", "--fit", str(export), "--gpu", "H100-SXM",
                                      "--model", "Llama-3.1-8B", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert any("a mean of 0 tokens" in n for n in json.loads(result.output)["notes"])
