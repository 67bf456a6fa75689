"""Roofline model against calibration rows A1-A4 (../shared/reference/calibration.md)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.catalog import get_gpu, get_model
from gpuscale.catalog.specs import Precision
from gpuscale.serving.performance import (
    ReplicaHardware,
    StepCost,
    allreduce_time_s,
    decode_segment,
    elementwise_time_s,
    gemm_time_s,
    layer_linear_time_s,
    step_time_s,
)


def _hw(
    gpu: str, model: str, tp: int = 1, precision: Precision = Precision.BF16
) -> ReplicaHardware:
    return ReplicaHardware(get_gpu(gpu), get_model(model), precision, precision, tp)


@pytest.mark.parametrize(
    ("row", "gpu", "model", "tp", "tokens", "measured_ms", "tolerance"),
    [
        ("A1", "H100-SXM", "Llama-2-70B", 1, 1, 0.593, 0.15),
        ("A2", "H100-SXM", "Llama-2-70B", 1, 4096, 10.09, 0.15),
        ("A3", "A100-80GB", "Llama-3.1-70B", 1, 1, 1.073, 0.15),
        ("A3", "A100-80GB", "Llama-3.1-70B", 1, 4096, 30.37, 0.15),
        ("A3", "A100-80GB", "Llama-3.1-70B", 8, 1, 0.154, 0.25),
        ("A3", "A100-80GB", "Llama-3.1-70B", 8, 4096, 3.865, 0.15),
    ],
)
def test_linear_layer_time_matches_vidur_profiles(row, gpu, model, tp, tokens, measured_ms,
                                                   tolerance):
    predicted_ms = layer_linear_time_s(_hw(gpu, model, tp), tokens) * 1e3
    assert abs(predicted_ms / measured_ms - 1) <= tolerance, (row, predicted_ms, measured_ms)


@pytest.mark.parametrize(
    ("model", "precision", "expected_bytes"),
    [
        ("Llama-3.1-8B", Precision.BF16, 131_072),
        ("Llama-3.1-70B", Precision.BF16, 327_680),
        ("Qwen2.5-7B", Precision.BF16, 57_344),
        ("DeepSeek-V3", Precision.BF16, 70_272),
        ("DeepSeek-V3", Precision.FP8, 35_136),
    ],
)
def test_kv_bytes_per_token_row_a4_exact(model, precision, expected_bytes):
    assert get_model(model).kv_bytes_per_token(precision) == expected_bytes


def test_decode_is_memory_bound_and_prefill_compute_bound():
    hw = _hw("H100-SXM", "Llama-3.1-70B", tp=2, precision=Precision.FP8)
    one = step_time_s(hw, decode_seqs=1, decode_context_tokens=1000)
    many = step_time_s(hw, decode_seqs=64, decode_context_tokens=64_000)
    # 64x the sequences costs far less than 64x the time (weights are read once per step)...
    assert many < 3 * one
    # ...while an 8k-token prefill is compute bound: time grows ~linearly with tokens.
    p4k = step_time_s(hw, decode_seqs=0, decode_context_tokens=0, prefill_chunks=((4096, 0),))
    p8k = step_time_s(hw, decode_seqs=0, decode_context_tokens=0, prefill_chunks=((8192, 0),))
    assert 1.8 < p8k / p4k < 2.3


@settings(max_examples=200, deadline=None)
@given(
    gpu=st.sampled_from(["H100-SXM", "A100-80GB", "L40S", "H200"]),
    model=st.sampled_from(["Llama-3.1-8B", "Llama-3.1-70B", "Mixtral-8x7B", "DeepSeek-V3"]),
    tp=st.sampled_from([1, 2, 4, 8]),
    decode_seqs=st.integers(0, 512),
    context=st.integers(0, 2_000_000),
    chunks=st.lists(st.tuples(st.integers(1, 8192), st.integers(0, 30_000)), max_size=3),
)
def test_fast_step_cost_equals_reference_formula(gpu, model, tp, decode_seqs, context, chunks):
    hw = _hw(gpu, model, tp, Precision.FP8)
    context = context if decode_seqs else 0
    expected = step_time_s(hw, decode_seqs=decode_seqs, decode_context_tokens=context,
                           prefill_chunks=tuple(chunks))
    cost = StepCost(hw)
    assert cost.step_s(decode_seqs, context, tuple(chunks)) == pytest.approx(expected, rel=1e-9)
    if decode_seqs and not chunks:  # the inlined decode-stretch builder agrees too
        assert cost.segment(decode_seqs, context).first_step_s == pytest.approx(expected,
                                                                                rel=1e-9)


@settings(max_examples=200, deadline=None)
@given(seqs=st.integers(1, 256), context=st.integers(0, 500_000), steps=st.integers(1, 5000))
def test_decode_segment_duration_is_the_sum_of_its_steps(seqs, context, steps):
    hw = _hw("H100-SXM", "Llama-3.1-70B", tp=2, precision=Precision.FP8)
    seg = decode_segment(hw, seqs, context)
    direct = sum(step_time_s(hw, decode_seqs=seqs, decode_context_tokens=context + seqs * k)
                 for k in range(min(steps, 300)))
    assert seg.duration_s(min(steps, 300)) == pytest.approx(direct, rel=1e-9)
    # steps_within inverts duration_s exactly at and just before step boundaries.
    total = seg.duration_s(steps)
    assert seg.steps_within(total) == steps
    assert seg.steps_within(total - 1e-12 - total * 1e-12) == steps - 1


@settings(max_examples=300, deadline=None)
@given(
    gpu=st.sampled_from(["H100-SXM", "A100-80GB", "L40S", "H200", "B200"]),
    model=st.sampled_from(["Llama-3.1-8B", "Llama-3.1-70B", "Mixtral-8x7B", "DeepSeek-V3"]),
    tp=st.sampled_from([1, 2, 4, 8]),
    precision=st.sampled_from([Precision.BF16, Precision.FP8]),
    custom_allreduce=st.booleans(),
    num_tokens=st.integers(0, 70_000),
)
def test_folded_token_terms_are_the_reference_floats(gpu, model, tp, precision,
                                                     custom_allreduce, num_tokens):
    # StepCost folds the constant factors of the per-token terms at construction; the result
    # must be the very same float (bit for bit), or the goldens would move.
    hw = dataclasses.replace(_hw(gpu, model, tp, precision), custom_allreduce=custom_allreduce)
    expected = (gemm_time_s(hw, num_tokens) + elementwise_time_s(hw, num_tokens)
                + allreduce_time_s(hw, num_tokens))
    assert StepCost(hw)._tokens_uncached_s(num_tokens) == expected
