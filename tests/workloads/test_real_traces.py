"""The real Azure LLM 2023 traces from <repo>/../shared/traces (skipped when absent).

Expected figures are the README's independent characterization of those files
(shared/traces/README.md, "azure_llm_2023"), not this reader's own output.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from gpuscale.workloads import build_requests, parse_workload, read_azure_llm_csv

AZURE = Path(__file__).resolve().parents[2] / ".." / "shared" / "traces" / "azure_llm_2023"


def _path(name: str) -> Path:
    path = AZURE / f"AzureLLMInferenceTrace_{name}.csv"
    if not path.is_file():
        pytest.skip(f"{path} not present")
    return path


def test_azure_conv_matches_the_readme_characterization():
    path = _path("conv")
    started = time.perf_counter()
    req = read_azure_llm_csv(path)
    elapsed_s = time.perf_counter() - started
    assert len(req) == 19_366
    assert req.span_s == pytest.approx(3_501.7, abs=0.05)
    assert req.prompt_tokens.mean() == pytest.approx(1_155, abs=0.5)
    assert req.output_tokens.mean() == pytest.approx(211.1, abs=0.05)
    assert np.percentile(req.prompt_tokens, 50) == 1_020 and req.prompt_tokens.max() == 14_050
    gaps = np.diff(req.arrival_s)
    assert gaps.std() / gaps.mean() == pytest.approx(1.09, abs=0.005)
    # Measured ~0.05 s; the bound is loose so a loaded CI box does not fail it.
    assert elapsed_s < 1.0


def test_azure_code_matches_the_readme_characterization():
    req = read_azure_llm_csv(_path("code"))
    assert len(req) == 8_819
    assert req.span_s == pytest.approx(3_435.9, abs=0.05)
    assert req.output_tokens.mean() == pytest.approx(27.9, abs=0.05)
    gaps = np.diff(req.arrival_s)
    assert gaps.std() / gaps.mean() == pytest.approx(13.15, abs=0.01)


def test_ten_times_conv_is_about_200k_requests_at_the_same_mean_rate():
    path = _path("conv")
    spec = parse_workload({"kind": "trace", "format": "azure", "path": path.name, "repeat": 10})
    req = build_requests(spec, np.random.default_rng(0), path.parent)
    assert len(req) == 193_660
    # Mean rate stays the README's 5.530 req/s: tiling adds one mean gap per seam.
    assert len(req) / (req.span_s + req.span_s / (len(req) - 1)) == pytest.approx(5.530, abs=0.001)
