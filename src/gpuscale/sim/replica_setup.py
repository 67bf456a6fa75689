"""A scenario's replica: its hardware (GPU, model, precisions, TP x PP) and its engine config.

Shared by every fleet of a run and by the tests that build one replica by hand.
"""

from __future__ import annotations

from gpuscale.catalog import get_instance_type, get_model
from gpuscale.errors import UserInputError
from gpuscale.scenario.models import Scenario
from gpuscale.serving.engine_defaults import default_max_num_batched_tokens, default_max_num_seqs
from gpuscale.serving.engines import get_engine_profile, with_engine
from gpuscale.serving.kv_cache import num_kv_blocks
from gpuscale.serving.performance import ReplicaHardware, step_token_budget
from gpuscale.serving.precision_support import default_kv_precision, precision_error
from gpuscale.serving.replica import EngineConfig


def replica_hardware(scenario: Scenario, tp: int | None = None) -> ReplicaHardware:
    instance = get_instance_type(scenario.cluster.instance_type)
    model = get_model(scenario.model.name)
    pp = 1 if tp else scenario.model.pp  # a P/D role's own tp has no pipeline
    tp = tp or scenario.model.tp
    if tp * pp > instance.num_gpus:
        raise UserInputError(
            f"tp={tp} x pp={pp} needs {tp * pp} GPUs in one pod but {instance.name} has "
            f"{instance.num_gpus}", field="model.tp" if pp == 1 else "model.pp")
    kv = scenario.model.kv_precision or default_kv_precision(scenario.model.precision)
    if error := precision_error(scenario.engine.kind, instance.gpu_spec,
                                scenario.model.precision, kv):
        raise UserInputError(error, field="model.precision")
    hw = ReplicaHardware(gpu=instance.gpu_spec, model=model,
                         weight_precision=scenario.model.precision, kv_precision=kv,
                         tp=tp * pp, pp=pp)
    # The engine's host time, which a user catalog's `engines:` entry may override (the
    # profile's own values are the ReplicaHardware defaults).
    return with_engine(hw, get_engine_profile(scenario.engine.kind))


def engine_config(scenario: Scenario, hw: ReplicaHardware) -> EngineConfig:
    """vLLM defaults by GPU size (serving-engine-metrics.md 1.4), overridable per scenario."""
    settings = scenario.engine
    profile = get_engine_profile(settings.kind)
    blocks = num_kv_blocks(hw, gpu_memory_utilization=settings.gpu_memory_utilization,
                           block_size=settings.block_size,
                           activation_reserve_gib=settings.activation_reserve_gib,
                           non_torch_gib=settings.non_torch_gib)
    if blocks == 0:
        weights_gib = hw.model.weight_bytes(hw.weight_precision) / hw.tp / 2**30
        raise UserInputError(
            f"{hw.model.name} ({hw.weight_precision.value}) needs {weights_gib:.1f} GiB of weights "
            f"per GPU at tp={hw.tp}, leaving no KV cache on {hw.gpu.name} "
            f"({hw.gpu.memory_gib} GiB); raise tp or use fp8", field="model")
    budget = settings.max_num_batched_tokens or default_max_num_batched_tokens(hw.gpu)
    batching = settings.batching or profile.batching
    return EngineConfig(
        max_num_seqs=settings.max_num_seqs or default_max_num_seqs(hw.gpu),
        # A budget per pipeline micro-batch (serving/pipeline.py); pp = 1: the budget.
        max_num_batched_tokens=step_token_budget(budget, hw.pp),
        block_size=settings.block_size,
        num_blocks=blocks,
        max_model_len=max_input_tokens(scenario, hw, budget, batching),
        request_timeout_s=scenario.request_timeout_s,
        # The scenario's batching, else the engine's default (TensorRT-LLM: whole prompts).
        batching=batching,
        enable_prefix_caching=settings.enable_prefix_caching,
        # The scenario's KV admission, else the engine's default (TensorRT-LLM: no-evict).
        admission=settings.admission or profile.admission,
    )


def max_input_tokens(scenario: Scenario, hw: ReplicaHardware, budget: int, batching: str) -> int:
    """The longest prompt the engine takes, plus one (the replica drops a prompt of this many
    tokens or more on arrival, as vLLM's server answers a 400 past max_model_len).

    Whole-prompt batching never splits a prompt, so the token budget bounds it, and the
    engines say so: vLLM without chunked prefill refuses to start with max_num_batched_tokens
    below max_model_len (SchedulerConfig._verify_args), so such a scenario is refused here;
    TensorRT-LLM without chunked context takes prompts up to min(max_seq_len - 1,
    max_num_tokens) (trtGptModel.h) and rejects longer ones per request (LlmRequest::validate;
    llmapi/llm.py "should not exceed max_num_tokens"), so they are dropped on arrival
    (`exceeds_max_model_len`) and `resolved` says so (`engine_resolved`)."""
    max_model_len = scenario.engine.max_model_len or hw.model.max_context_tokens
    if batching == "prefill_first" and budget < max_model_len:
        raise UserInputError(
            f"max_num_batched_tokens {budget} is below max_model_len {max_model_len}, and "
            "prefill_first batching runs every prompt whole in one step: vLLM refuses to start "
            "so; set engine.max_model_len <= the budget, raise the budget, or use batching: "
            "chunked", field="engine.max_num_batched_tokens")
    if batching == "whole_prompt":
        return min(max_model_len, budget + 1)
    return max_model_len


def engine_resolved(scenario: Scenario, hw: ReplicaHardware, cfg: EngineConfig) -> dict:
    """The engine a run simulated, for `resolved`: the scheduler and the longest prompt it
    takes (below the model's context when whole-prompt batching caps it at the budget)."""
    budget = cfg.max_num_batched_tokens // hw.pp  # per micro-batch: the configured one
    out: dict[str, str | int] = {"kind": scenario.engine.kind, "batching": cfg.batching,
                                 "max_num_batched_tokens": budget,
                                 "max_prompt_tokens": cfg.max_model_len - 1}
    if cfg.batching == "whole_prompt" and cfg.max_model_len <= budget + 1 \
            and cfg.max_model_len < (scenario.engine.max_model_len
                                     or hw.model.max_context_tokens):
        out["note"] = ("prompts longer than max_num_batched_tokens are rejected, as TensorRT-LLM "
                       "does without chunked context (batching: chunked runs them in chunks)")
    return out
