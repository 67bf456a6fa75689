"""The step-time terms of issue 14 against the kernel profiles they come from.

Points: median GPU time per layer from Vidur's mlp.csv and NCCL all_reduce.csv (microsoft/vidur
@7d47513363ec447a741ac5e47241580b47724fbf; data/profiling/compute/{a100,h100}/.../mlp.csv,
data/profiling/network/h100_dgx/all_reduce.csv).
"""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from gpuscale.catalog import get_gpu, get_model
from gpuscale.catalog.specs import Precision
from gpuscale.serving import performance as perf
from gpuscale.serving.engines import get_engine_profile, with_engine

BF16, FP8 = Precision.BF16, Precision.FP8


def _hw(gpu="H100-SXM", model="Llama-2-70B", tp=1, w=BF16, **kw):
    return perf.ReplicaHardware(get_gpu(gpu), get_model(model), w, w, tp, **kw)


# Llama-2-70B H100 GEMMs per layer (QKV + O + up + down), ms, from mlp.csv (also
# hardware-and-models.md 5.3): the knee region the old hard max missed.
H100_70B_GEMM_MS = {1: {1: 0.593, 128: 0.611, 512: 1.169, 1024: 2.759, 4096: 10.087},
                    2: {1: 0.294, 128: 0.326, 512: 0.649, 1024: 1.327, 4096: 4.958}}


@pytest.mark.parametrize("tp", [1, 2])
def test_gemm_curve_is_smooth_and_follows_the_profile_through_the_knee(tp):
    hw = _hw(tp=tp)
    for tokens, ms in H100_70B_GEMM_MS[tp].items():
        assert perf.layer_linear_time_s(hw, tokens) * 1e3 == pytest.approx(ms, rel=0.25)
    # No hard switch: at the point where the two rooflines are equal the smooth curve is
    # sqrt(2) above either (a max() would be exactly on them) and the slope changes gradually.
    times = [perf.layer_linear_time_s(hw, n) for n in range(1, 2049, 64)]
    steps = [b - a for a, b in itertools.pairwise(times)]
    assert all(b >= a - 1e-12 for a, b in itertools.pairwise(steps))  # convex, no kink downwards


def test_lm_head_runs_once_per_sequence_not_per_prefill_token():
    hw = _hw("H100-SXM", "Llama-3.1-8B", w=FP8)
    one_chunk = perf.step_time_s(hw, decode_seqs=0, decode_context_tokens=0,
                                 prefill_chunks=((4096, 0),))
    # Same 4096 tokens with the LM head counted per token would add 4095 more logit rows.
    per_token_head = perf.lm_head_time_s(hw, 4096) - perf.lm_head_time_s(hw, 1)
    assert per_token_head > 0.02 * one_chunk  # a term worth getting right (128k vocab)
    ref = (perf.gemm_time_s(hw, 4096) + perf.lm_head_time_s(hw, 1)
           + perf.prefill_attention_time_s(hw, 4096, 0) + perf.attention_floor_s(hw, 0, 1)
           + perf.elementwise_time_s(hw, 4096) + perf.host_time_s(hw, 1))
    assert one_chunk == pytest.approx(ref)


def test_attention_runs_in_bf16_beside_fp8_weights():
    fp8, bf16 = _hw(w=FP8), _hw(w=BF16)
    assert perf.prefill_attention_time_s(fp8, 2048, 0) == \
        pytest.approx(perf.prefill_attention_time_s(bf16, 2048, 0))
    assert perf.gemm_time_s(fp8, 4096) < 0.7 * perf.gemm_time_s(bf16, 4096)


def test_chunked_prefill_rereads_the_kv_of_earlier_chunks():
    hw = _hw(tp=2, w=FP8)
    later = perf.prefill_attention_time_s(hw, 512, 3584)
    flops_only = 4.0 * hw.model.layers * hw.model.q_heads * hw.model.head_dim * 512 * \
        (3584 + 256) / hw.attention_flops_per_s
    assert later - flops_only == pytest.approx(3584 * hw.kv_bytes_per_token / hw.bytes_per_s)


# Vidur's A100 attention profile (data/profiling/a100/attention.csv, blob ee3dec7: hidden 8192,
# 64 q / 8 kv heads, TP2, block 16, FlashAttention; median ms per layer): (chunk, prefix) and
# (decode batch, context) points across the range gpus.yaml's fit covers.
A100_TP2_PREFILL_ATTENTION_MS = {(448, 832): 0.108, (512, 0): 0.072, (256, 1024): 0.073,
                                 (2048, 0): 0.681, (1024, 3072): 0.535, (128, 2048): 0.051}
# Decode at batch >= 32: smaller batches under-fill the 108 SMs (batch 16 reads up to 40 %
# slower than the fitted line; their steps are short anyway).
A100_TP2_DECODE_ATTENTION_MS = {(75, 1280): 0.150, (32, 1024): 0.064, (128, 2048): 0.349,
                                (48, 1536): 0.103, (96, 3072): 0.355}


def test_a100_attention_follows_its_measured_kernel_profile():
    # CodeLlama-34B has the profiled attention shape; the GQA batch correction is taken out to
    # compare with the uniform-length profile.
    hw = _hw("A100-80GB", "CodeLlama-34B", tp=2)
    layers = hw.model.layers
    for (chunk, prefix), ms in A100_TP2_PREFILL_ATTENTION_MS.items():
        model_ms = (perf.prefill_attention_time_s(hw, chunk, prefix) / layers
                    + hw.attention_prefill_floor_s) * 1e3
        assert model_ms == pytest.approx(ms, rel=0.25), (chunk, prefix)  # fit: 10 % rms
    uniform = 1.0 + hw.gpu.attention_gqa_batch_overhead_frac
    for (batch, context), ms in A100_TP2_DECODE_ATTENTION_MS.items():
        model_ms = (perf.decode_attention_time_s(hw, batch * context) / layers / uniform
                    + hw.attention_decode_floor_s) * 1e3
        assert model_ms == pytest.approx(ms, rel=0.20), (batch, context)
    # The GEMM rate would make a 448-token chunk's attention three times too fast.
    gemm_rate_ms = 4.0 * hw.model.q_heads * hw.model.head_dim * 448 * (832 + 224) \
        / hw.attention_flops_per_s * 1e3
    assert gemm_rate_ms < 0.4 * A100_TP2_PREFILL_ATTENTION_MS[(448, 832)]


def test_gqa_batch_correction_only_where_the_profile_is_uniform_length():
    a100_gqa = _hw("A100-80GB", "CodeLlama-34B", tp=2)
    a100_mha = _hw("A100-80GB", "Llama-2-7B")
    h100_gqa = _hw("H100-SXM", "Llama-2-70B", tp=2)
    kv_rate = 2.039e12 * 2 * 0.766
    assert a100_gqa.attention_kv_bytes_per_s == pytest.approx(kv_rate / 1.10)
    assert a100_mha.attention_kv_bytes_per_s == pytest.approx(kv_rate / 2)
    # No attention profile read for H100: its attention keeps the GEMM factors and floors.
    assert h100_gqa.attention_kv_bytes_per_s == pytest.approx(h100_gqa.bytes_per_s)
    assert h100_gqa.attention_prefix_flops_per_s == pytest.approx(h100_gqa.attention_flops_per_s)
    assert h100_gqa.attention_causal_flops_per_s == pytest.approx(h100_gqa.attention_flops_per_s)
    assert h100_gqa.attention_decode_floor_s == h100_gqa.kernel_floor_s


# CodeLlama-34B A100 TP2, norms + RoPE + activation + 2 adds per layer (ms), mlp.csv.
A100_CODELLAMA_TP2_ELEMENTWISE_MS = {1: 0.033, 128: 0.040, 512: 0.111, 1024: 0.245, 4096: 0.962}


def test_elementwise_work_per_token_matches_the_profile():
    hw = _hw("A100-80GB", "CodeLlama-34B", tp=2)
    for tokens, ms in A100_CODELLAMA_TP2_ELEMENTWISE_MS.items():
        per_layer_ms = perf.elementwise_time_s(hw, tokens) / hw.model.layers * 1e3
        assert per_layer_ms == pytest.approx(ms, rel=0.25), tokens


def test_small_message_allreduce_follows_the_measured_nccl_curve():
    nccl = _hw(tp=2, custom_allreduce=False)
    custom = _hw(tp=2)
    one_mib = 1 << 20
    # Measured H100 DGX TP2 NCCL: ~42 us flat from 256 KiB to 4 MiB; the affine fit says 20 us.
    assert perf.one_allreduce_s(nccl, one_mib) * 1e6 == pytest.approx(42.0)
    assert perf.one_allreduce_s(custom, one_mib) * 1e6 == pytest.approx(20.4, abs=0.5)
    # Above 8 MiB both are the affine fit; the curve joins it (continuous at 8 MiB).
    big = 16 << 20
    assert perf.one_allreduce_s(nccl, big) == perf.one_allreduce_s(custom, big)
    eight = 8 << 20
    assert perf.one_allreduce_s(nccl, eight - 1) == pytest.approx(
        perf.one_allreduce_s(nccl, eight), rel=1e-3)


def test_eager_nccl_engine_pays_a_cpu_launch_per_all_reduce():
    # Sarathi-Serve as Vidur models it: NCCL's kernel time (all_reduce.csv) plus 20 us of CPU
    # launch per call, two calls per layer; engines replaying collectives in CUDA graphs do not.
    base = _hw("A100-80GB", "CodeLlama-34B", tp=2)
    sarathi = with_engine(base, get_engine_profile("sarathi"))
    nccl = dataclasses.replace(base, custom_allreduce=False)
    extra = perf.allreduce_time_s(sarathi, 512) - perf.allreduce_time_s(nccl, 512)
    assert extra == pytest.approx(2 * 48 * 20e-6)
    for name in ("vllm", "trtllm", "sglang", "vllm-v0.6"):
        assert with_engine(base, get_engine_profile(name)).allreduce_launch_s == 0.0
    # TP1 has no collective to launch.
    tp1 = with_engine(_hw("A100-80GB", "CodeLlama-34B"), get_engine_profile("sarathi"))
    assert perf.allreduce_time_s(tp1, 512) == 0.0
    cost = perf.StepCost(sarathi)
    assert cost.step_s(64, 64_000, ((448, 0),)) == pytest.approx(
        perf.step_time_s(sarathi, decode_seqs=64, decode_context_tokens=64_000,
                         prefill_chunks=((448, 0),)), rel=1e-12)


def test_host_time_is_absolute_and_eager_mode_waits_for_kernel_launches():
    base = _hw("H100-SXM", "Llama-3.1-8B")
    step = perf.step_time_s(base, decode_seqs=1, decode_context_tokens=512)
    eager = dataclasses.replace(base, cuda_graphs=False)
    step_eager = perf.step_time_s(eager, decode_seqs=1, decode_context_tokens=512)
    # The measured eager step the launch cost comes from: 8.4 ms at one token (the same page's
    # 5.1 ms with graphs is below what the kernel floors give, 6.9 ms; docs/calibration.md).
    assert step_eager * 1e3 == pytest.approx(8.4, rel=0.05)
    assert step < 0.85 * step_eager
    # A big step hides the launches: graphs or not, the same time.
    big = dict(decode_seqs=256, decode_context_tokens=256 * 2000, prefill_chunks=((2048, 0),))
    assert perf.step_time_s(eager, **big) == perf.step_time_s(base, **big)
    old = with_engine(base, get_engine_profile("vllm-v0.6"))
    assert perf.step_time_s(old, decode_seqs=200, decode_context_tokens=0) - \
        perf.step_time_s(base, decode_seqs=200, decode_context_tokens=0) == \
        pytest.approx(200 * (66e-6 - 4e-6))


def test_mi300x_has_its_own_efficiency_not_h100s():
    mi, h100 = get_gpu("MI300X"), get_gpu("H100-SXM")
    assert mi.compute_efficiency != h100.compute_efficiency
    # Its FP8 sustained rate is below H100's despite a 32% higher peak (MLPerf v4.1 point).
    assert mi.sustained_flops(FP8) < h100.sustained_flops(FP8)


def test_fast_step_cost_matches_formula_with_engine_variants():
    for gpu, kw in (("H100-SXM", {}), ("H100-SXM", {"cuda_graphs": False}),
                    ("H100-SXM", {"custom_allreduce": False}), ("H100-SXM", {"host_seq_s": 7e-5}),
                    ("A100-80GB", {})):
        hw = _hw(gpu, "Llama-3.1-70B", tp=2, w=FP8 if gpu == "H100-SXM" else BF16, **kw)
        cost = perf.StepCost(hw)
        for seqs, ctx, chunks in ((1, 100, ()), (64, 64_000, ((512, 1024),)), (0, 0, ((7, 0),))):
            assert cost.step_s(seqs, ctx, chunks) == pytest.approx(
                perf.step_time_s(hw, decode_seqs=seqs, decode_context_tokens=ctx,
                                 prefill_chunks=chunks), rel=1e-12)


def test_pipeline_stages_split_the_batch_into_micro_batches_with_bubbles():
    # 8 GPUs: TP8 vs TP4 x PP2 of Llama-3.1-70B on H100.
    tp8 = _hw("H100-SXM", "Llama-3.1-70B", tp=8, w=FP8)
    pp2 = dataclasses.replace(tp8, pp=2)
    assert pp2.tp_degree == 4
    one = dict(decode_seqs=1, decode_context_tokens=1000)
    many = dict(decode_seqs=256, decode_context_tokens=256 * 1000)
    # One sequence: a bubble (one micro-batch through both stages, the other stage idle), so
    # no faster than a TP4 replica holding every layer.
    tp4 = _hw("H100-SXM", "Llama-3.1-70B", tp=4, w=FP8)
    assert perf.step_time_s(pp2, **one) >= perf.step_time_s(tp4, **one)
    # Many sequences: two micro-batches keep both stages busy, each at half the batch.
    period = perf.step_time_s(pp2, **many)
    assert period < 1.2 * perf.step_time_s(tp4, **many)
    assert perf.StepCost(pp2).decode_step_s(256, 256_000.0) == period
    seg = perf.StepCost(pp2).segment(256, 256_000.0)
    assert seg.slope_s == pytest.approx(
        perf.step_time_s(pp2, decode_seqs=256, decode_context_tokens=256_256) - period)


def test_scenario_takes_pp_and_batching():
    from gpuscale.scenario import scenario_from_dict
    from gpuscale.sim.replica_setup import engine_config, replica_hardware

    sc = scenario_from_dict({
        "name": "pp", "duration_s": 10, "model": {"name": "Llama-3.1-70B", "tp": 2, "pp": 2,
                                                  "precision": "fp8"},
        # vLLM refuses prefill_first with a budget below max_model_len (issue 28).
        "engine": {"batching": "prefill_first", "max_model_len": 8192},
        "cluster": {"instance_type": "p5.48xlarge", "ready_nodes": 1, "max_nodes": 1},
        "workload": {"kind": "poisson", "rate_per_s": 1.0, "duration_s": 10},
        "strategies": [{"name": "fixed", "autoscaler": {"kind": "fixed", "replicas": 1}}]})
    hw = replica_hardware(sc)
    assert (hw.tp, hw.pp, hw.tp_degree) == (4, 2, 2)
    cfg = engine_config(sc, hw)
    assert cfg.batching == "prefill_first"
    # A budget per micro-batch: a period of 2 stages carries two (serving/pipeline.py).
    assert cfg.max_num_batched_tokens == 2 * 8192


def test_scenario_takes_the_kv_admission_policy():
    from gpuscale.errors import UserInputError
    from gpuscale.scenario import scenario_from_dict
    from gpuscale.sim.replica_setup import engine_config, replica_hardware

    def scenario(engine):
        return scenario_from_dict({
            "name": "adm", "duration_s": 10, "model": {"name": "Llama-3.1-8B", "tp": 1},
            "engine": engine,
            "cluster": {"instance_type": "p5.48xlarge", "ready_nodes": 1, "max_nodes": 1},
            "workload": {"kind": "poisson", "rate_per_s": 1.0, "duration_s": 10},
            "strategies": [{"name": "fixed", "autoscaler": {"kind": "fixed", "replicas": 1}}]})

    default = scenario({})
    assert engine_config(default, replica_hardware(default)).admission == "max_utilization"
    trt = scenario({"admission": "guaranteed_no_evict"})
    assert engine_config(trt, replica_hardware(trt)).admission == "guaranteed_no_evict"
    with pytest.raises((UserInputError, ValueError), match="admission"):
        scenario({"admission": "evict_everything"})
    # Unset, the engine kind's default: TensorRT-LLM's capacity scheduler reserves (no-evict);
    # set, the scenario wins over the profile.
    trt_default = scenario({"kind": "trtllm"})
    assert engine_config(trt_default, replica_hardware(trt_default)).admission == \
        "guaranteed_no_evict"
    trt_util = scenario({"kind": "trtllm", "admission": "max_utilization"})
    assert engine_config(trt_util, replica_hardware(trt_util)).admission == "max_utilization"
    # Batching the same way: unset, the engine's (TensorRT-LLM keeps prompts whole); set, the
    # scenario's, also `chunked` on TensorRT-LLM (its enable_chunked_context), which the
    # profile used to override.
    assert engine_config(trt_default, replica_hardware(trt_default)).batching == "whole_prompt"
    trt_chunked = scenario({"kind": "trtllm", "batching": "chunked"})
    assert engine_config(trt_chunked, replica_hardware(trt_chunked)).batching == "chunked"
    assert engine_config(default, replica_hardware(default)).batching == "chunked"
