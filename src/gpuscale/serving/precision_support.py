"""Which engine runs which weight and KV-cache precision on which GPU, so that a scenario or a
calibration row asking for one an engine does not have is refused in one line, not simulated.

FP4 weights run natively where the GPU's tensor cores take the format (GpuSpec.fp4_formats) and
weight-only (dequantized to BF16 in the GEMM, at the BF16 rate: GpuSpec.peak_flops) elsewhere,
where the engine has such a kernel. Sources, read 2026:

- TensorRT-LLM (docs features/quantization): NVFP4 and MXFP4 checkpoints, an NVFP4 KV cache
  ("NVFP4 KV Cache", `kv_cache_config.dtype: nvfp4`); FP4 GEMMs need Blackwell (the docs' "FP4
  and FP8 quantization on the latest Blackwell and Hopper GPUs": FP4 on Blackwell); MXFP4 runs
  on Hopper for gpt-oss (weight-only). CUDA only: no AMD GPU.
- vLLM: NVFP4 (ModelOpt) natively on Blackwell and weight-only through Marlin before it; MXFP4
  (gpt-oss; AMD Quark on MI355X) natively on Blackwell and CDNA4, weight-only elsewhere; an
  NVFP4 KV cache on Blackwell from v0.21 (`--kv-cache-dtype nvfp4`, vllm-project/vllm#40177).
- SGLang: the same formats as vLLM (modelopt_fp4, mxfp4) and an FP4 KV cache on Blackwell
  (docs advanced_features/quantized_kv_cache).
- Sarathi-Serve (Vidur's engine): BF16 and FP8 only.
No engine read stores the KV cache in MXFP4.
"""

from __future__ import annotations

from gpuscale.catalog.specs import GpuSpec, Precision, gpus

# Engines with a weight-only (W4A16) kernel for an FP4 format the GPU cannot multiply.
_WEIGHT_ONLY_FP4: dict[str, frozenset[str]] = {
    "vllm": frozenset({"nvfp4", "mxfp4"}), "sglang": frozenset({"nvfp4", "mxfp4"}),
    "trtllm": frozenset({"mxfp4"}),
}
_NVFP4_KV_ENGINES = frozenset({"vllm", "sglang", "trtllm"})


def precision_error(engine: str, gpu: GpuSpec, weights: Precision, kv: Precision) -> str:
    """Why `engine` cannot serve these precisions on `gpu` ("" if it can)."""
    if engine == "trtllm" and gpu.vendor != "nvidia":
        return f"TensorRT-LLM runs on NVIDIA GPUs only, not on {gpu.name}"
    if weights.is_fp4 and not gpu.runs_fp4(weights) \
            and weights.value not in _WEIGHT_ONLY_FP4.get(engine, frozenset()):
        native = sorted(name for name, spec in gpus().items() if spec.runs_fp4(weights))
        return (f"{engine} has no {weights.value} kernel for {gpu.name} (its tensor cores do not "
                f"take {weights.value}; GPUs that do: {', '.join(native)})")
    if kv is Precision.MXFP4:
        return "no engine stores the KV cache in mxfp4; use fp8 or nvfp4"
    if kv is Precision.NVFP4 and (engine not in _NVFP4_KV_ENGINES
                                  or "nvfp4" not in gpu.fp4_formats):
        return (f"an nvfp4 KV cache needs an NVIDIA Blackwell GPU and TensorRT-LLM, vLLM >= 0.21 "
                f"or SGLang; not {engine} on {gpu.name}")
    return ""


def default_kv_precision(weights: Precision) -> Precision:
    """The KV cache's precision when only the weights' is given: the weights', except FP4
    weights keep an FP8 cache (the MLPerf v5.1 FP4 submissions, NVIDIA's NVFP4 and AMD's MXFP4,
    both store FP8 KV; an FP4 cache is a choice of its own)."""
    return Precision.FP8 if weights.is_fp4 else weights
