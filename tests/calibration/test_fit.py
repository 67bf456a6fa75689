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
from gpuscale.catalog.specs import set_user_entries
from gpuscale.cli import cli
from gpuscale.serving.performance import ReplicaHardware

TRUE_HBM, TRUE_COMPUTE = 0.62, 0.48  # not the catalog's H100 factors (0.86, 0.70)


@pytest.fixture(autouse=True)
def _no_user_catalog():
    set_user_entries({}, {}, {})
    yield
    set_user_entries({}, {}, {})


def synthetic_bench(path, rates=(2.0, 8.0, math.inf)) -> None:
    """bench-serve result objects as vLLM writes them, measured on a GPU with other factors."""
    rng = np.random.default_rng(7)
    prompt = np.clip(rng.lognormal(np.log(800), 0.6, 200), 16, 4000).astype(int)
    output = np.clip(rng.lognormal(np.log(150), 0.6, 200), 2, 1000).astype(int)
    truth = replace(get_gpu("H100-SXM"), hbm_efficiency=TRUE_HBM, compute_efficiency=TRUE_COMPUTE)
    hw = ReplicaHardware(truth, get_model("Llama-3.1-8B"), Precision.BF16, Precision.BF16, 1)
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


def test_fit_recovers_the_factors_and_writes_an_overlay(tmp_path):
    bench, overlay = tmp_path / "bench.jsonl", tmp_path / "overlay.yaml"
    synthetic_bench(bench)
    result = CliRunner().invoke(cli, ["calibrate", "--fit", str(bench), "--gpu", "H100-SXM",
                                      "--model", "Llama-3.1-8B", "--tp", "1", "--format", "json",
                                      "--overlay", str(overlay)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["hbm_efficiency"] == pytest.approx(TRUE_HBM, rel=0.02)
    assert data["compute_efficiency"] == pytest.approx(TRUE_COMPUTE, rel=0.02)
    assert len(data["points"]) == 3
    assert all(abs(e) < 0.02 for p in data["points"] for e in p["error_frac"].values())
    entry = yaml.safe_load(overlay.read_text())["gpus"]["H100-SXM"]
    assert entry["hbm_efficiency"] == pytest.approx(TRUE_HBM, rel=0.02)
    # The overlay is a catalog file: with it, the GPU runs with the fitted factors.
    from gpuscale.importer.catalog_files import use_catalogs

    use_catalogs([overlay])
    assert get_gpu("H100-SXM").hbm_efficiency == entry["hbm_efficiency"]
    assert "fit to 3 vLLM bench point(s)" in get_gpu("H100-SXM").efficiency_source


def test_fit_table_shows_error_per_point(tmp_path):
    bench = tmp_path / "bench.json"
    synthetic_bench(bench, rates=(4.0,))
    result = CliRunner().invoke(cli, ["calibrate", "--fit", str(bench), "--gpu", "H100-SXM",
                                      "--model", "Llama-3.1-8B"])
    assert result.exit_code == 0, result.output
    assert "mean_tpot_s" in result.output and "host time per step not fitted" in result.output


@pytest.mark.parametrize("content, expected", [
    ('{"completed": 10}', "total_input_tokens: expected a number > 0"),
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
