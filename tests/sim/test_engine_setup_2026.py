"""A scenario's engine at configuration time (issue 28): whole-prompt batching with a budget
below a prompt is refused (vLLM) or rejects those prompts (TensorRT-LLM) and `resolved` says
so; FP4 precisions an engine lacks are refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuscale.errors import UserInputError
from gpuscale.importer.resolved import resolved_for
from gpuscale.sim import simulate_scenario
from gpuscale.sim.replica_setup import engine_config, replica_hardware

from .scenarios import small_scenario


def _scenario(engine: dict, **kw):
    return small_scenario(duration_s=60.0, engine=engine, **kw)


def test_prefill_first_below_max_model_len_is_refused_as_vllm_does():
    scenario = _scenario({"kind": "vllm", "batching": "prefill_first",
                          "max_num_batched_tokens": 4096})
    with pytest.raises(UserInputError, match="vLLM refuses to start") as err:
        engine_config(scenario, replica_hardware(scenario))
    assert err.value.field == "engine.max_num_batched_tokens"
    ok = _scenario({"kind": "vllm", "batching": "prefill_first", "max_num_batched_tokens": 4096,
                    "max_model_len": 4096})
    assert engine_config(ok, replica_hardware(ok)).max_model_len == 4096


def test_trtllm_whole_prompts_take_at_most_the_budget_and_resolved_says_so():
    scenario = _scenario({"kind": "trtllm", "max_num_batched_tokens": 1024})
    cfg = engine_config(scenario, replica_hardware(scenario))
    assert cfg.batching == "whole_prompt" and cfg.max_model_len == 1025
    engine = resolved_for(scenario, scenario.strategies[0])["engine"]
    assert engine["max_prompt_tokens"] == 1024 and "rejected" in engine["note"]
    # The run drops the longer prompts (median 800, p90 2,000) instead of never starting them.
    result, _ = simulate_scenario(scenario, Path("."), strategies=["fixed-1"])
    assert result.runs[0].summary.drops_by_reason.get("exceeds_max_model_len", 0) > 0
    chunked = _scenario({"kind": "trtllm", "max_num_batched_tokens": 1024,
                         "batching": "chunked"})
    assert "note" not in resolved_for(chunked, chunked.strategies[0])["engine"]


def test_vllm_chunked_keeps_the_models_context():
    scenario = _scenario({"kind": "vllm", "max_num_batched_tokens": 1024})
    assert engine_config(scenario, replica_hardware(scenario)).max_model_len == 131072


def test_fp4_on_an_engine_and_gpu_without_it_is_refused_in_one_line():
    scenario = _scenario({"kind": "trtllm"}, model={"name": "Llama-3.1-8B",
                                                    "precision": "nvfp4", "tp": 1})
    with pytest.raises(UserInputError, match="nvfp4") as err:
        replica_hardware(scenario)  # L40S: no FP4 tensor cores, TensorRT-LLM no W4A16 NVFP4
    assert err.value.field == "model.precision"


def test_fp4_weights_default_to_an_fp8_kv_cache():
    scenario = _scenario({"kind": "vllm"}, model={"name": "Llama-3.1-8B", "precision": "mxfp4",
                                                  "tp": 1})
    assert replica_hardware(scenario).kv_precision.value == "fp8"
