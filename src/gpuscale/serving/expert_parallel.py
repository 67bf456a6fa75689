"""Where a replica's GPUs sit and what crosses the links between them: expert parallelism (EP),
data-parallel attention (DP attention) and replicas that span nodes.

A replica's `tp` GPUs (per pipeline stage, `G`) run one engine. Three choices place its work:

- **Attention** as `attention_dp` data-parallel ranks of `G / attention_dp` GPUs each (SGLang
  `--enable-dp-attention --dp-size`, vLLM `--data-parallel-size`, TensorRT-LLM
  `enable_attention_dp`): a rank keeps the KV cache of its own sequences, so an MLA model's
  latent (one KV "head") is not copied onto every GPU of a TP group. `attention_dp` 1 = TP
  attention over all `G` GPUs, as a dense model runs.
- **Routed experts** whole on `ep` GPUs, `(experts + redundant) / ep` on each (`ep` 1: every
  expert sharded over the `G` GPUs, TP-style). With DP attention the tokens of each rank are
  dispatched to their top-k experts' GPUs and combined back (DeepEP-style all-to-all).
- **Nodes**: the replica spans `nodes` nodes (a LeaderWorkerSet group of that many pods);
  traffic between GPUs outside one NVLink domain crosses the inter-node network (EFA or
  InfiniBand), `network_gb_s_per_gpu` per GPU per direction.

Costs per layer, per GPU (all collectives also pay a fixed latency):
- TP all-reduce within the attention group (the catalog's measured curve), hierarchical when
  the group spans NVLink domains (intra-domain all-reduce + the domain's share over the network);
- EP dispatch (FP8 hidden of each token to each of its k experts) and combine (BF16 back):
  latency(ep) + bytes x (share inside the NVLink domain / NVLink rate + rest / network rate),
  the rates NVLink x 0.8 and the network x 1.0 and the latency fitted on DeepEP's measured
  kernels (constants below, tests/serving/test_expert_parallel.py reproduces the table);
- two-batch overlap (SGLang `--enable-two-batch-overlap`, vLLM `--enable-dbo`) hides the
  communication behind the other micro-batch's compute: a layer costs max(compute, comm)
  instead of their sum.

Approximations, stated: DP ranks are taken as evenly loaded (the engine's batch is the sum of
the ranks'; a rank's scheduler, limits and host time are each rank's, so the replica's are `dp`
times one rank's); the LM head is counted as TP-sharded; pipeline sends between nodes use the
NVLink figure.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpuscale.catalog.specs import GpuSpec, ModelSpec
    from gpuscale.serving.hardware import ReplicaHardware

AllReduce = Callable[[int, float], float]  # (GPUs, payload bytes) -> seconds, one NVLink domain

# DeepEP dispatches FP8 hidden states and combines in BF16 (deepseek-ai/DeepEP docs/legacy.md,
# "FP8 dispatching and BF16 combining", the DeepSeek-V3 inference setting).
DISPATCH_BYTES_PER_ELEM = 1
COMBINE_BYTES_PER_ELEM = 2
# Share of a link's per-direction bandwidth an all-to-all reaches. NVLink: DeepEP's intranode
# kernels reach 153-158 GB/s of H800's 200 GB/s (V1, docs/legacy.md) and 726-740 GB/s of
# B200's 900 GB/s (V2, README, SM100 EP8): 0.77-0.82. Network: its internode kernels reach
# 43-58 GB/s (logical bytes, local ranks included) over CX7 400 Gb/s NICs of ~50 GB/s: 1.0.
A2A_NVLINK_EFFICIENCY = 0.8
A2A_NETWORK_EFFICIENCY = 1.0
# Fixed latency of one dispatch or combine, growing with the peers it waits for:
# 15.1 us + 10.2 us x log2(ep / 8), least squares over DeepEP's low-latency table (H800, CX7,
# 128 tokens, hidden 7168, top-8; EP 8-256 dispatch 77-194 us, combine 114-369 us) once the
# bytes over the two rates above are taken off: 8.1 % rms, worst -21 % (EP8 dispatch).
A2A_LATENCY_S = 15.1e-6
A2A_LATENCY_PER_DOUBLING_S = 10.2e-6
# Expert load imbalance under EP: popularity spread (coefficient of variation across experts)
# left after EPLB's placement, and without it. Fixed on LMSYS's DeepSeek-V3 runs on H100
# (lmsys.org/blog/2025-05-05-large-scale-ep): prefill at EP32 (288 slots, 9 per GPU) ran
# 50,302 tokens/s per node with EPLB against 59,337 with simulated perfect balance (x 1.18),
# so 0.18 = spread / sqrt(9) x sqrt(2 ln 32): 0.20; EPLB itself gave x 1.49 in prefill, so
# without it (256 experts, 8 per GPU) 1.76 = 1 + spread / sqrt(8) x 2.63: 0.82. The same
# statistics put EP72 decode (3.6 per GPU) without EPLB at x 2.27 against the blog's measured
# x 2.54 (a check, not fitted).
IMBALANCE_SPREAD_EPLB = 0.20
IMBALANCE_SPREAD_NO_EPLB = 0.82
# MLA decode attention (absorbed: every head against the latent) reaches 580 TFLOPS of H800's
# 989 BF16 dense peak when compute-bound (deepseek-ai/FlashMLA README, H800 SXM5, CUDA 12.8).
MLA_DECODE_COMPUTE_FRAC = 0.586
ACTIVATION_BYTES = 2  # BF16 hidden states between layers
# Inter-node bandwidth per GPU per direction where an instance type lists no network:
# aiconfigurator's system files (hardware-and-models.md 1.2): 25 GB/s A100 (CX6), 50 GB/s
# H100 / H200 (400G NDR), 100 GB/s B200 (800G).
DEFAULT_NETWORK_GB_S_PER_GPU = {"A100": 25.0, "H100": 50.0, "H200": 50.0, "B200": 100.0,
                                "GB200": 100.0}
FALLBACK_NETWORK_GB_S_PER_GPU = 50.0


def default_network_gb_s(gpu_name: str) -> float:
    """The GPU family's inter-node GB/s per GPU per direction (aiconfigurator), else 50."""
    for family, rate in sorted(DEFAULT_NETWORK_GB_S_PER_GPU.items(), key=lambda kv: -len(kv[0])):
        if gpu_name.upper().startswith(family):
            return rate
    return FALLBACK_NETWORK_GB_S_PER_GPU


@dataclass(frozen=True)
class ParallelLayout:
    """How one replica's GPUs split the model beyond tensor parallelism (module docstring)."""

    ep: int = 1
    attention_dp: int = 1
    nodes: int = 1
    nvlink_domain_gpus: int = 8
    network_gb_s_per_gpu: float = FALLBACK_NETWORK_GB_S_PER_GPU
    # Physical expert slots beyond the model's experts (EPLB replicas of hot experts: SGLang
    # --ep-num-redundant-experts, vLLM --num-redundant-experts) and whether the load balancer
    # runs (--enable-eplb); either lowers the expert load imbalance (serving/moe.py).
    redundant_experts: int = 0
    eplb: bool = False
    two_batch_overlap: bool = False

    @property
    def is_plain(self) -> bool:
        """One node, TP attention and TP experts: the step model before this module."""
        return self.ep == 1 and self.attention_dp == 1 and self.nodes == 1


PLAIN_LAYOUT = ParallelLayout()


def attention_tp(layout: ParallelLayout, gpus: int) -> int:
    """GPUs of one attention rank (the TP group of its heads)."""
    return max(1, gpus // max(1, layout.attention_dp))


def kv_shards_per_rank(model: ModelSpec, layout: ParallelLayout, gpus: int) -> int:
    """Ways one attention rank splits a token's KV over its GPUs. GQA: the KV heads over the
    rank's TP group, each GPU at least one head (vLLM replicates heads when TP exceeds them);
    MLA caches one latent that every GPU of the group holds whole (`kv_heads` 1)."""
    return max(1, min(attention_tp(layout, gpus), model.kv_heads))


def kv_read_gpus(model: ModelSpec, layout: ParallelLayout, gpus: int) -> int:
    """GPUs reading distinct KV in one decode step: ranks x shards per rank (= `gpus` for a
    dense GQA model at TP <= its KV heads; 1 for MLA at TP 8, whose 8 GPUs read the same)."""
    return max(1, layout.attention_dp) * kv_shards_per_rank(model, layout, gpus)


def network_gb_s_per_gpu(instance_network_gb_s: float, gpu_name: str) -> float:
    return instance_network_gb_s if instance_network_gb_s > 0 else default_network_gb_s(
        gpu_name)


def a2a_latency_s(ep: int) -> float:
    """Fixed time of one dispatch or combine over `ep` GPUs (DeepEP fit above)."""
    return A2A_LATENCY_S + A2A_LATENCY_PER_DOUBLING_S * max(0.0, math.log2(max(ep, 1) / 8.0))


def a2a_bytes_per_s(gpu: GpuSpec, layout: ParallelLayout) -> float:
    """Effective bytes/s of an all-to-all over the replica's EP group: the share of peers
    inside the NVLink domain at NVLink speed, the rest over the network (a harmonic mix)."""
    local = min(1.0, layout.nvlink_domain_gpus / max(layout.ep, 1))
    nvlink = gpu.link_gbps_per_direction * 1e9 * A2A_NVLINK_EFFICIENCY
    network = layout.network_gb_s_per_gpu * 1e9 * A2A_NETWORK_EFFICIENCY
    return 1.0 / (local / nvlink + (1.0 - local) / network)


def dispatch_combine_s(model: ModelSpec, gpu: GpuSpec, layout: ParallelLayout,
                       tokens_per_gpu: float) -> float:
    """One MoE layer's dispatch + combine on one GPU sending `tokens_per_gpu` tokens, each
    to its top-k experts (logical bytes, as DeepEP counts them)."""
    if tokens_per_gpu <= 0:
        return 0.0
    copies = tokens_per_gpu * model.experts_per_token * model.hidden
    payload = copies * (DISPATCH_BYTES_PER_ELEM + COMBINE_BYTES_PER_ELEM)
    return 2.0 * a2a_latency_s(layout.ep) + payload / a2a_bytes_per_s(gpu, layout)


def allreduce_across_s(one_domain_s: AllReduce, gpu_payload_bytes: float, group: int,
                       layout: ParallelLayout) -> float:
    """An all-reduce over `group` GPUs. Inside one NVLink domain it is `one_domain_s(group,
    bytes)` (the catalog's measured curve); across domains it runs hierarchically, as NCCL's
    tree / ring over nodes does: an all-reduce inside each domain, then each GPU's 1/domain
    share all-reduced over the network between the `group / domain` domains."""
    domain = max(1, layout.nvlink_domain_gpus)
    if group <= domain:
        return one_domain_s(group, gpu_payload_bytes)
    parts = group / domain
    share = gpu_payload_bytes / domain
    network = layout.network_gb_s_per_gpu * 1e9 * A2A_NETWORK_EFFICIENCY
    return (one_domain_s(domain, gpu_payload_bytes) + a2a_latency_s(group)
            + 2.0 * (parts - 1.0) / parts * share / network)


def layers_s(hw: ReplicaHardware, num_tokens: int, attention_s: float, floors_s: float,
             tokens_compute_s: Callable[[int], float], one_domain_s: AllReduce) -> float:
    """Every layer of one step: the token-count compute (`tokens_compute_s`: GEMMs and
    elementwise), the attention and its floors, and the collectives; with two-batch overlap
    the step runs as two micro-batches of half the tokens, each computed on its own (weights
    streamed twice, smaller GEMMs) while the other's all-to-all is in flight: the longer of
    the two micro-batches' compute and their communication."""
    layout: ParallelLayout = hw.layout
    if not layout.two_batch_overlap or num_tokens < 2:
        return (tokens_compute_s(num_tokens) + attention_s + floors_s
                + step_collectives_s(hw, num_tokens, one_domain_s))
    first = (num_tokens + 1) // 2
    second = num_tokens - first
    compute = tokens_compute_s(first) + tokens_compute_s(second) + attention_s + 2 * floors_s
    comm = step_collectives_s(hw, first, one_domain_s) \
        + step_collectives_s(hw, second, one_domain_s)
    return max(compute, comm)


def imbalance_factor(model: ModelSpec, layout: ParallelLayout) -> float:
    """Busiest GPU's expert load over the mean GPU's under EP (1 without EP): experts are not
    equally popular and a GPU's load is the sum of its `m` local experts', so the maximum of
    `ep` such loads exceeds the mean by ~ spread / sqrt(m) x sqrt(2 ln ep)."""
    if layout.ep <= 1:
        return 1.0
    per_gpu = (model.num_experts + layout.redundant_experts) / layout.ep
    balanced = layout.eplb or layout.redundant_experts > 0
    spread = IMBALANCE_SPREAD_EPLB if balanced else IMBALANCE_SPREAD_NO_EPLB
    return 1.0 + spread / math.sqrt(max(per_gpu, 1.0)) * math.sqrt(2.0 * math.log(layout.ep))


def step_collectives_s(hw: ReplicaHardware, num_tokens: int, one_domain_s: AllReduce) -> float:
    """Every layer's collectives in one step of `num_tokens` tokens: the attention output's
    all-reduce over each rank's GPUs (and a dense MLP's, which follows the attention layout),
    and each MoE layer's: with EP and DP attention the dispatch + combine all-to-all, waited
    on for the busiest GPU; otherwise an all-reduce over all GPUs (TP experts, or EP experts
    over tokens every GPU holds; with DP attention, the all-gather + reduce-scatter of the
    ranks' tokens cost the same)."""
    if num_tokens <= 0:
        return 0.0
    layout: ParallelLayout = hw.layout
    model = hw.model
    gpus = hw.tp_degree
    rank_gpus = attention_tp(layout, gpus)
    ranks = max(1, layout.attention_dp)

    def allreduce(group: int, payload: float) -> float:
        return 0.0 if group <= 1 else allreduce_across_s(one_domain_s, payload, group, layout)

    rank_layer = allreduce(rank_gpus, num_tokens / ranks * model.hidden * ACTIVATION_BYTES)
    total = (2 * model.layers - model.moe_layers) * rank_layer
    if model.moe_layers:
        if layout.ep > 1 and ranks > 1:
            moe = dispatch_combine_s(model, hw.gpu, layout, num_tokens / gpus) \
                * imbalance_factor(model, layout)
        else:
            moe = allreduce(gpus, num_tokens * model.hidden * ACTIVATION_BYTES)
        total += model.moe_layers * moe
    return total


def mla_decode_bytes_per_s(hw: ReplicaHardware, memory_bytes_per_s: float) -> float:
    """MLA decode attention as an equivalent KV read rate: per cached token, the smooth
    maximum of reading its latent (at `memory_bytes_per_s`) and its absorbed-form FLOPs
    (every head against the latent, spread over all the replica's GPUs, at FlashMLA's
    compute-bound rate), expressed in the replica's KV bytes per token."""
    model = hw.model
    kv_bytes = model.kv_bytes_per_token(hw.kv_precision)
    flops = model.layers * model.decode_attention_flops_per_context_token
    flops_per_s = hw.gpu.bf16_tflops * 1e12 * MLA_DECODE_COMPUTE_FRAC * hw.tp_degree
    per_token_s = math.hypot(kv_bytes / memory_bytes_per_s, flops / flops_per_s)
    return kv_bytes / per_token_s
