"""A scenario's replica: its hardware (GPU, model, precisions, TP x PP, expert parallelism and
the nodes it spans) and its engine config.

Shared by every fleet of a run, by the calibration rows (calibration/user_rows.py) and by the
tests that build one replica by hand.
"""

from __future__ import annotations

import dataclasses

from gpuscale.catalog import InstanceType, get_instance_type, get_model
from gpuscale.errors import UserInputError
from gpuscale.scenario.models import Scenario
from gpuscale.scenario.parallelism import ExpertParallelism
from gpuscale.serving.engine_defaults import default_max_num_batched_tokens, default_max_num_seqs
from gpuscale.serving.engines import get_engine_profile, with_engine
from gpuscale.serving.expert_parallel import ParallelLayout, network_gb_s_per_gpu
from gpuscale.serving.kv_cache import num_kv_blocks, weights_per_gpu_bytes
from gpuscale.serving.performance import ReplicaHardware, step_token_budget
from gpuscale.serving.precision_support import default_kv_precision, precision_error
from gpuscale.serving.replica import EngineConfig


def nodes_spanned(gpus: int, instance: InstanceType, field: str = "model.tp") -> int:
    """Nodes (LeaderWorkerSet pods) one replica of `gpus` GPUs spans on `instance`: each pod
    holds a whole node's GPUs, so a replica wider than a node must fill whole nodes."""
    per_node = instance.num_gpus
    if gpus <= per_node:
        return 1
    if gpus % per_node:
        raise UserInputError(
            f"a replica of {gpus} GPUs spans {gpus / per_node:.2f} {instance.name} nodes of "
            f"{per_node} GPUs; one spanning nodes takes whole nodes (a multiple of {per_node})",
            field=field)
    return gpus // per_node


def parallel_layout(par: ExpertParallelism, instance: InstanceType, tp: int,
                    gpus: int) -> ParallelLayout:
    """The step model's layout of a replica of `gpus` GPUs (`tp` per stage) on `instance`."""
    return ParallelLayout(
        ep=par.ep, attention_dp=par.attention_ranks(tp),
        nodes=nodes_spanned(gpus, instance),
        nvlink_domain_gpus=instance.nvlink_domain_gpus,
        network_gb_s_per_gpu=network_gb_s_per_gpu(instance.network_gb_s_per_gpu,
                                                  instance.gpu),
        redundant_experts=par.redundant_experts, eplb=par.eplb,
        two_batch_overlap=par.two_batch_overlap)


def per_rank_host(hw: ReplicaHardware) -> ReplicaHardware:
    """Each DP attention rank runs its own scheduler over its own sequences, in parallel: the
    replica's host time per sequence is one rank's over the ranks."""
    ranks = hw.layout.attention_dp
    if ranks <= 1:
        return hw
    return dataclasses.replace(hw, host_seq_s=hw.host_seq_s / ranks)


def replica_hardware(scenario: Scenario, role: str | None = None) -> ReplicaHardware:
    """The replica of the scenario's model (or of a P/D `role`'s pool: its own TP and EP, no
    pipeline)."""
    instance = get_instance_type(scenario.cluster.instance_type)
    model = get_model(scenario.model.name)
    if role is None:
        tp, pp, par = scenario.model.tp, scenario.model.pp, scenario.model
    else:  # a P/D role's own TP and EP, no pipeline
        assert scenario.disaggregation is not None
        tp, par = getattr(scenario.disaggregation, role).layout(scenario.model)
        pp = 1
    kv = scenario.model.kv_precision or default_kv_precision(scenario.model.precision)
    if error := precision_error(scenario.engine.kind, instance.gpu_spec,
                                scenario.model.precision, kv):
        raise UserInputError(error, field="model.precision")
    hw = ReplicaHardware(gpu=instance.gpu_spec, model=model,
                         weight_precision=scenario.model.precision, kv_precision=kv,
                         tp=tp * pp, pp=pp, layout=parallel_layout(par, instance, tp, tp * pp))
    # The engine's host time, which a user catalog's `engines:` entry may override (the
    # profile's own values are the ReplicaHardware defaults).
    return per_rank_host(with_engine(hw, get_engine_profile(scenario.engine.kind)))


def engine_config(scenario: Scenario, hw: ReplicaHardware) -> EngineConfig:
    """vLLM defaults by GPU size (serving-engine-metrics.md 1.4), overridable per scenario;
    with DP attention the limits are each rank's (each runs its own scheduler), the replica's
    the ranks' together."""
    settings = scenario.engine
    profile = get_engine_profile(settings.kind)
    ranks = hw.layout.attention_dp
    blocks = num_kv_blocks(hw, gpu_memory_utilization=settings.gpu_memory_utilization,
                           block_size=settings.block_size,
                           activation_reserve_gib=settings.activation_reserve_gib,
                           non_torch_gib=settings.non_torch_gib)
    if blocks == 0:
        weights_gib = weights_per_gpu_bytes(hw) / 2**30
        raise UserInputError(
            f"{hw.model.name} ({hw.weight_precision.value}) needs {weights_gib:.1f} GiB of weights "
            f"per GPU over {hw.tp} GPUs, leaving no KV cache on {hw.gpu.name} "
            f"({hw.gpu.memory_gib} GiB); raise tp (or ep) or use fp8", field="model")
    # Each DP attention rank's own budget, per pipeline micro-batch (serving/pipeline.py).
    budget = settings.max_num_batched_tokens or default_max_num_batched_tokens(hw.gpu)
    batching = settings.batching or profile.batching
    return EngineConfig(
        max_num_seqs=ranks * (settings.max_num_seqs or default_max_num_seqs(hw.gpu)),
        max_num_batched_tokens=ranks * step_token_budget(budget, hw.pp),
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
    # The configured budget: one DP attention rank's, per pipeline micro-batch.
    budget = cfg.max_num_batched_tokens // (hw.pp * hw.layout.attention_dp)
    out: dict[str, str | int] = {"kind": scenario.engine.kind, "batching": cfg.batching,
                                 "max_num_batched_tokens": budget,
                                 "max_prompt_tokens": cfg.max_model_len - 1}
    if cfg.batching == "whole_prompt" and cfg.max_model_len <= budget + 1 \
            and cfg.max_model_len < (scenario.engine.max_model_len
                                     or hw.model.max_context_tokens):
        out["note"] = ("prompts longer than max_num_batched_tokens are rejected, as TensorRT-LLM "
                       "does without chunked context (batching: chunked runs them in chunks)")
    return out
