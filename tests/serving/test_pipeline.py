"""Pipeline parallelism (serving/pipeline.py): a token budget per micro-batch, and a prefill
chunk riding one micro-batch whole, whose trip through every stage bounds the period (issue
28: Vidur's TP2 x PP2 Llama-2-70B on A100 read TPOT -28 % / -35 %)."""

from __future__ import annotations

import dataclasses

import pytest

from gpuscale.catalog import get_gpu, get_model
from gpuscale.catalog.specs import Precision
from gpuscale.serving.engines import get_engine_profile, with_engine
from gpuscale.serving.performance import ReplicaHardware, StepCost, step_time_s
from gpuscale.serving.pipeline import step_token_budget

# Vidur 0.0.26 on the same setup (bench/bench_vidur_pp.py; sarathi, 2 replicas, the Azure
# conversation trace): a micro-batch of ~62 decodes and a ~449-token chunk (512 tokens) took
# 0.215 s through both stages (median of its batch_execution_time at 512 tokens), and its
# decode-only micro-batches of ~16 sequences 0.0625 s.
VIDUR_FULL_MICRO_BATCH_S = 0.215
VIDUR_LIGHT_MICRO_BATCH_S = 0.0625


def _hw(pp: int = 2) -> ReplicaHardware:
    return with_engine(ReplicaHardware(get_gpu("A100-80GB"), get_model("Llama-2-70B"),
                                       Precision.BF16, Precision.BF16, 2 * pp, pp=pp),
                       get_engine_profile("sarathi"))


def test_a_period_carries_a_budget_per_micro_batch():
    assert step_token_budget(512, 1) == 512
    assert step_token_budget(512, 2) == 1024
    assert step_token_budget(4096, 4) == 16384


def test_a_chunk_rides_one_micro_batch_and_its_trip_bounds_the_period():
    hw = _hw()
    one_chunk = step_time_s(hw, decode_seqs=16, decode_context_tokens=16 * 1200,
                            prefill_chunks=((496, 0),))
    # The same tokens spread evenly (two half chunks) pass the stages in less time.
    halves = step_time_s(hw, decode_seqs=16, decode_context_tokens=16 * 1200,
                         prefill_chunks=((248, 0), (248, 0)))
    assert one_chunk > 1.4 * halves
    # The 512-token micro-batch's trip is Vidur's measured one; a period of only decodes too.
    assert one_chunk == pytest.approx(VIDUR_FULL_MICRO_BATCH_S, rel=0.15)
    light = step_time_s(hw, decode_seqs=30, decode_context_tokens=30 * 1300)
    assert light == pytest.approx(VIDUR_LIGHT_MICRO_BATCH_S, rel=0.15)


def test_without_pipeline_the_chunk_placement_does_not_matter():
    hw = dataclasses.replace(_hw(), tp=2, pp=1)
    one = step_time_s(hw, decode_seqs=16, decode_context_tokens=19_200,
                      prefill_chunks=((496, 0),))
    halves = step_time_s(hw, decode_seqs=16, decode_context_tokens=19_200,
                         prefill_chunks=((248, 0), (248, 0)))
    assert one == pytest.approx(halves, rel=0.05)  # only the causal attention differs


def test_the_engines_step_cost_takes_the_pipelined_formula():
    hw = _hw()
    cost = StepCost(hw)
    chunks = [(0, 400, 100), (1, 90, 0)]
    assert cost.engine_step_s(20, 24_000.0, chunks) == step_time_s(
        hw, decode_seqs=20, decode_context_tokens=24_000.0, prefill_chunks=((400, 100), (90, 0)))
