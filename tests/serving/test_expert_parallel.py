"""Expert parallelism, DP attention and replicas across nodes in the step model
(serving/expert_parallel.py): the all-to-all against DeepEP's measured kernels, KV per
attention rank, load imbalance against LMSYS's figures, hierarchical all-reduce, overlap."""

from __future__ import annotations

import dataclasses

import pytest

from gpuscale.catalog import get_gpu, get_model
from gpuscale.catalog.specs import Precision
from gpuscale.serving import expert_parallel as ep_mod
from gpuscale.serving.expert_parallel import ParallelLayout
from gpuscale.serving.kv_cache import num_kv_blocks
from gpuscale.serving.performance import (
    ReplicaHardware,
    StepCost,
    allreduce_time_s,
    elementwise_time_s,
    gemm_time_s,
    one_allreduce_s,
    step_time_s,
)

FP8 = Precision.FP8
# H800: H100's compute and HBM, NVLink halved to 200 GB/s per direction
# (ai-dynamo/aiconfigurator systems/h800_sxm.yaml).
H800 = dataclasses.replace(get_gpu("H100-SXM"), name="H800", link_gbps_per_direction=200)

# DeepEP V1 low-latency kernels (deepseek-ai/DeepEP docs/legacy.md): H800 + CX7 400 Gb/s, 128
# tokens per GPU, hidden 7168, top-8, FP8 dispatch, BF16 combine. ep -> (dispatch, combine) us.
DEEPEP_LOW_LATENCY_US = {8: (77, 114), 16: (118, 195), 32: (155, 273), 64: (173, 314),
                         128: (192, 369), 256: (194, 360)}


@pytest.mark.parametrize("ep", sorted(DEEPEP_LOW_LATENCY_US))
def test_dispatch_and_combine_reproduce_deepep(ep):
    model = get_model("DeepSeek-V3")
    layout = ParallelLayout(ep=ep, attention_dp=ep, nodes=max(1, ep // 8),
                            nvlink_domain_gpus=8, network_gb_s_per_gpu=50.0)
    rate = ep_mod.a2a_bytes_per_s(H800, layout)
    copies = 128 * model.experts_per_token * model.hidden
    dispatch_us = (ep_mod.a2a_latency_s(ep) + copies * 1 / rate) * 1e6
    combine_us = (ep_mod.a2a_latency_s(ep) + copies * 2 / rate) * 1e6
    measured_dispatch, measured_combine = DEEPEP_LOW_LATENCY_US[ep]
    assert dispatch_us / measured_dispatch - 1 == pytest.approx(0.0, abs=0.22)
    assert combine_us / measured_combine - 1 == pytest.approx(0.0, abs=0.22)
    both = ep_mod.dispatch_combine_s(model, H800, layout, 128) * 1e6
    assert both == pytest.approx(dispatch_us + combine_us)


def test_all_to_all_inside_an_nvl72_domain_never_touches_the_network():
    gb200 = get_gpu("GB200")  # the catalog's NVL72 GPU: NVLink 900 GB/s a direction
    rack = ParallelLayout(ep=72, attention_dp=72, nodes=18, nvlink_domain_gpus=72,
                          network_gb_s_per_gpu=1.0)
    hgx = dataclasses.replace(rack, nvlink_domain_gpus=8)
    assert ep_mod.a2a_bytes_per_s(gb200, rack) == pytest.approx(900e9 * 0.8)
    assert ep_mod.a2a_bytes_per_s(gb200, hgx) < 2e9


def test_kv_per_attention_rank():
    """An MLA latent is one KV head: TP 8 replicates it on every GPU, DP attention does not."""
    ds, qwen, llama = (get_model(n) for n in ("DeepSeek-V3", "Qwen3-235B-A22B", "Llama-3.1-70B"))
    tp8, dp8 = ParallelLayout(), ParallelLayout(ep=8, attention_dp=8)
    assert ep_mod.kv_read_gpus(ds, tp8, 8) == 1
    assert ep_mod.kv_read_gpus(ds, dp8, 8) == 8
    assert ep_mod.kv_read_gpus(qwen, tp8, 8) == 4  # 4 KV heads: two GPUs hold each
    assert ep_mod.kv_read_gpus(llama, tp8, 8) == 8


def _hw(model: str, gpus: int, layout: ParallelLayout, gpu: str = "H200") -> ReplicaHardware:
    return ReplicaHardware(get_gpu(gpu), get_model(model), FP8, FP8, gpus, layout=layout)


def test_dp_attention_holds_more_kv_for_mla():
    """DeepSeek-V3 FP8 on 8 x H200: TP 8 keeps the latent on all 8 GPUs; DP 8 caches each
    rank's own sequences (more weights per GPU: attention is replicated, experts are not)."""
    kw = dict(gpu_memory_utilization=0.9, block_size=16, activation_reserve_gib=2.0,
              non_torch_gib=0.5)
    tp_blocks = num_kv_blocks(_hw("DeepSeek-V3", 8, ParallelLayout()), **kw)
    dp_blocks = num_kv_blocks(_hw("DeepSeek-V3", 8, ParallelLayout(ep=8, attention_dp=8)), **kw)
    assert 5 * tp_blocks < dp_blocks < 8 * tp_blocks


def test_mla_decode_attention_is_compute_bound_under_dp():
    tp = _hw("DeepSeek-V3", 8, ParallelLayout())
    dp = _hw("DeepSeek-V3", 8, ParallelLayout(ep=8, attention_dp=8))
    # TP: every GPU reads the whole latent; DP: each rank its own sequences' (8x less), but
    # the absorbed attention's FLOPs, spread over the 8 GPUs either way, then dominate.
    assert dp.attention_kv_bytes_per_s > 2 * tp.attention_kv_bytes_per_s
    plain_read = dp.gpu.memory_bandwidth_tbps * 1e12 * dp.gpu.hbm_efficiency * 8
    assert dp.attention_kv_bytes_per_s < 0.5 * plain_read


@pytest.mark.parametrize(("slots", "ep", "eplb", "factor"), [
    (288, 32, True, 1.18),  # LMSYS prefill EP32 with EPLB vs perfect balance (fitted)
    (256, 32, False, 1.76),  # ... and x 1.49 without EPLB (fitted)
    (256, 72, False, 2.27),  # EP72 decode without EPLB: the blog measured x 2.54 (a check)
])
def test_imbalance_against_lmsys(slots, ep, eplb, factor):
    model = get_model("DeepSeek-V3")
    layout = ParallelLayout(ep=ep, attention_dp=ep, redundant_experts=slots - 256, eplb=eplb)
    assert ep_mod.imbalance_factor(model, layout) == pytest.approx(factor, abs=0.02)
    assert ep_mod.imbalance_factor(model, ParallelLayout()) == 1.0


def test_plain_layout_collectives_are_the_tp_all_reduces():
    hw = _hw("Mixtral-8x7B", 4, ParallelLayout())
    for tokens in (1, 300, 8192):
        collectives = ep_mod.step_collectives_s(
            hw, tokens, lambda gpus, payload: one_allreduce_s(hw, payload, gpus))
        assert collectives == pytest.approx(allreduce_time_s(hw, tokens), rel=1e-12)


def test_tp_across_nodes_pays_the_network():
    """Llama-3.1-405B at TP 16 over two 8-GPU nodes: each all-reduce runs inside the node and
    then over EFA, slower than inside one NVLink domain and far slower per byte."""
    one_node = _hw("Llama-3.1-405B", 8, ParallelLayout(), "H100-SXM")
    two = _hw("Llama-3.1-405B", 16, ParallelLayout(nodes=2, network_gb_s_per_gpu=50.0),
              "H100-SXM")
    steps = [step_time_s(hw, decode_seqs=256, decode_context_tokens=256_000.0)
             for hw in (one_node, two)]
    tokens = 8192
    ar_one = one_allreduce_s(one_node, tokens * 16384 * 2)
    ar_two = ep_mod.allreduce_across_s(lambda g, b: one_allreduce_s(two, b, g),
                                       tokens * 16384 * 2, 16, two.layout)
    assert ar_two > ar_one
    assert steps[1] > 0.5 * steps[0]  # twice the GPUs, but the network eats the gain


def test_two_batch_overlap_runs_two_half_batches_under_their_communication():
    """Two micro-batches: each half computes on its own (weights streamed twice), their
    all-to-alls run under the other's compute; the step is the longer of the two sums."""
    layout = ParallelLayout(ep=32, attention_dp=32, nodes=4, redundant_experts=32, eplb=True)
    plain = _hw("DeepSeek-V3", 32, layout, "H100-SXM")
    tbo = dataclasses.replace(plain, layout=dataclasses.replace(layout, two_batch_overlap=True))
    tokens = 32 * 256

    def compute(hw: ReplicaHardware, n: int) -> float:
        return gemm_time_s(hw, n) + elementwise_time_s(hw, n)

    def comm(hw: ReplicaHardware, n: int) -> float:
        return ep_mod.step_collectives_s(hw, n, lambda g, b: one_allreduce_s(hw, b, g))

    assert ep_mod.layers_s(plain, tokens, 0.01, 0.0, lambda n: compute(plain, n),
                           lambda g, b: one_allreduce_s(plain, b, g)) == pytest.approx(
        compute(plain, tokens) + 0.01 + comm(plain, tokens))
    overlapped = ep_mod.layers_s(tbo, tokens, 0.01, 0.0, lambda n: compute(tbo, n),
                                 lambda g, b: one_allreduce_s(tbo, b, g))
    halves = 2 * compute(tbo, tokens // 2) + 0.01
    assert halves > compute(plain, tokens) + 0.01  # half batches cost more compute
    assert overlapped == pytest.approx(max(halves, 2 * comm(tbo, tokens // 2)))
    assert overlapped < compute(plain, tokens) + 0.01 + comm(plain, tokens)


def test_step_cost_runs_the_reference_for_expert_layouts():
    hw = _hw("DeepSeek-V3", 32, ParallelLayout(ep=32, attention_dp=32, nodes=4,
                                              redundant_experts=32, eplb=True,
                                              two_batch_overlap=True), "H100-SXM")
    cost = StepCost(hw)
    for seqs, ctx in ((32, 64_000.0), (8192, 16_000_000.0)):
        assert cost.decode_step_s(seqs, ctx) == step_time_s(
            hw, decode_seqs=seqs, decode_context_tokens=ctx)
    seg = cost.segment(8192, 16_000_000.0)
    later = cost.decode_step_s(8192, 16_000_000.0 + 8192 * 10)
    assert seg.first_step_s + 10 * seg.slope_s == pytest.approx(later, rel=1e-3)


def test_dp_attention_gpus_run_only_their_ranks_elementwise_work():
    """Each DP rank's GPU normalises and adds its own tokens: 8 ranks of 256 tokens cost one
    GPU's 256 (each GPU ran all 2,048 before: a decode step of 18k tokens read 91 ms)."""
    dp = _hw("DeepSeek-V3", 8, ParallelLayout(ep=8, attention_dp=8))
    one = _hw("DeepSeek-V3", 1, ParallelLayout())
    assert elementwise_time_s(dp, 8 * 256) == pytest.approx(elementwise_time_s(one, 256))
