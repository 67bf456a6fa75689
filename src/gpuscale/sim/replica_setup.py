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
from gpuscale.serving.performance import ReplicaHardware
from gpuscale.serving.replica import EngineConfig
from gpuscale.units import gpus_text


def replica_hardware(scenario: Scenario, tp: int | None = None) -> ReplicaHardware:
    instance = get_instance_type(scenario.cluster.instance_type)
    model = get_model(scenario.model.name)
    pp = 1 if tp else scenario.model.pp  # a P/D role's own tp has no pipeline
    tp = tp or scenario.model.tp
    if tp * pp > instance.num_gpus:
        raise UserInputError(
            f"tp={tp} x pp={pp} needs {gpus_text(tp * pp)} in one pod but {instance.name} has "
            f"{instance.num_gpus}", field="model.tp" if pp == 1 else "model.pp")
    hw = ReplicaHardware(gpu=instance.gpu_spec, model=model,
                         weight_precision=scenario.model.precision,
                         kv_precision=scenario.model.kv_precision or scenario.model.precision,
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
    return EngineConfig(
        max_num_seqs=settings.max_num_seqs or default_max_num_seqs(hw.gpu),
        max_num_batched_tokens=(settings.max_num_batched_tokens
                                or default_max_num_batched_tokens(hw.gpu)),
        block_size=settings.block_size,
        num_blocks=blocks,
        max_model_len=settings.max_model_len or hw.model.max_context_tokens,
        request_timeout_s=scenario.request_timeout_s,
        # The scenario's batching, else the engine's default (TensorRT-LLM: whole prompts).
        batching=settings.batching or profile.batching,
        enable_prefix_caching=settings.enable_prefix_caching,
        # The scenario's KV admission, else the engine's default (TensorRT-LLM: no-evict).
        admission=settings.admission or profile.admission,
    )
