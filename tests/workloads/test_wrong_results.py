"""Inputs that were read into a wrong result with exit 0 (issue 30): Mooncake timestamps at the
int64 extremes (wrapped to 2 ms apart), a cap below the median (half the draws clipped),
a trace column or key named twice (the last won), and bench results whose counts disagree
(fitted as if they agreed). Each is now one line naming the file and field."""

from __future__ import annotations

import json

import numpy as np
import pytest
from pydantic import ValidationError

from gpuscale.calibration.fit_bench import bench_items, bench_points
from gpuscale.errors import UserInputError
from gpuscale.workloads.distributions import FixedTokens, LognormalTokens, UniformTokens
from gpuscale.workloads.traces import read_generic_csv, read_mooncake_jsonl


def _mooncake(tmp_path, *stamps: int) -> object:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"timestamp": t, "input_length": 10,
                                         "output_length": 5}) + "\n" for t in stamps))
    return path


def test_mooncake_timestamps_at_the_int64_extremes_are_refused_not_wrapped(tmp_path):
    with pytest.raises(UserInputError, match="span 584,542,046 years"):
        read_mooncake_jsonl(_mooncake(tmp_path, -(2**63) + 1, 2**63 - 1))
    # ... while a real span reads exactly, however large the epoch.
    trace = read_mooncake_jsonl(_mooncake(tmp_path, 1_700_000_000_000, 1_700_000_002_500))
    assert trace.arrival_s.tolist() == [0.0, 2.5]


def test_a_key_twice_in_a_mooncake_line_is_refused(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"timestamp": 0, "input_length": 10, "output_length": 5, '
                    '"input_length": 9000}\n')
    with pytest.raises(UserInputError, match="key 'input_length' appears twice"):
        read_mooncake_jsonl(path)


def test_a_trace_column_named_twice_is_refused(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,prompt_tokens,output_tokens,prompt_tokens\n0,10,5,9000\n")
    with pytest.raises(UserInputError, match="column 'prompt_tokens' appears more than once"):
        read_generic_csv(path)


@pytest.mark.parametrize(("make", "message"), [
    (lambda: LognormalTokens(median_tokens=1000, p90_tokens=2000, max_tokens=500), "below"),
    (lambda: LognormalTokens(median_tokens=1000, sigma=0.5, min_tokens=2000), "above"),
    (lambda: FixedTokens(value=800, max_tokens=500), "below"),
    (lambda: UniformTokens(low=100, high=1000, max_tokens=400), "below"),
])
def test_a_cap_on_the_wrong_side_of_the_median_is_refused(make, message):
    with pytest.raises(ValidationError, match=f"{message} the median length"):
        make()


def test_a_cap_in_the_tail_still_caps():
    dist = LognormalTokens(median_tokens=1000, p90_tokens=2000, max_tokens=1500)
    draws = dist.sample(np.random.default_rng(0), 10_000)
    assert draws.max() == 1500 and 0.05 < (draws == 1500).mean() < 0.5


BENCH = {"completed": 3, "request_rate": 1.0, "input_lens": [100, 200, 300],
         "output_lens": [10, 20, 30], "total_input_tokens": 600, "total_output_tokens": 60,
         "mean_ttft_ms": 50.0, "mean_tpot_ms": 20.0, "output_throughput": 30.0}


@pytest.mark.parametrize(("change", "field"), [
    ({"output_lens": [10, 20]}, "output_lens"),
    ({"completed": 7}, "completed"),
    ({"total_output_tokens": 61}, "total_output_tokens"),
    ({"total_input_tokens": 10}, "total_input_tokens"),
])
def test_bench_results_whose_counts_disagree_are_not_fitted(change, field):
    with pytest.raises(UserInputError, match=f"{field}: the counts disagree"):
        bench_points(bench_items(json.dumps({**BENCH, **change}), "b.json"), "b.json", 256)


def test_a_failed_request_keeps_its_slot_and_still_agrees():
    # vLLM keeps a failed request's prompt in input_lens with 0 in output_lens.
    failed = {**BENCH, "completed": 2, "output_lens": [10, 0, 30], "total_output_tokens": 40,
              "total_input_tokens": 400}
    (point,) = bench_points(bench_items(json.dumps(failed), "b.json"), "b.json", 256)
    assert point.output_tokens.tolist() == [20, 20]  # the totals' mean, a 0 being a failure
