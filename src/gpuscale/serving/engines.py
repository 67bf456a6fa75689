"""Engine profiles: what differs between serving engines on the same GPU and model.

The roofline in `performance.py` is what the GPU must do; an engine adds host-side time that
is either hidden behind the GPU (CUDA graphs, asynchronous scheduling) or exposed. One named
factor per engine, each fixed by a measurement that is not itself a calibration row, and then
checked on a row (docs/calibration.md):

- `default` / `trtllm` / `vllm-v1`: factor 1.0. TensorRT-LLM rows A6, A7, A10, A11 pass with
  the roofline (its catalog FP8 GEMM factor and measured all-reduce included) plus BLIS's
  fitted per-step/per-layer/per-sequence overheads and nothing else (docs/calibration.md).
- `vllm-v0.6`: vLLM 0.6.0 with `num-scheduler-steps 10` ran Llama-3.1-8B FP8 on one H100 at
  8,088 output tok/s (Lambda benchmark_v0, hardware-and-models.md 3.4 [S9]); the roofline
  engine gives 17,502 tok/s on the same setup (ShareGPT-like lengths, max-num-seqs 256; FP8
  weights, so with the catalog's FP8 GEMM factor; 18,765 before it), so exposed host time
  stretches each step by 17,502 / 8,088 = 2.16x. The same factor then
  predicts row A13 (70B, TP4), which it was not fitted on. The vLLM blog attributes this gap
  to the API server and scheduler running on the CPU between GPU steps.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EngineProfile:
    name: str
    step_time_factor: float
    source: str


ENGINE_PROFILES: dict[str, EngineProfile] = {
    p.name: p for p in (
        EngineProfile("default", 1.0, "roofline + BLIS overheads (rows A6, A7, A10, A11)"),
        EngineProfile("trtllm", 1.0, "TensorRT-LLM: C++ runtime, CUDA graphs (rows A6-A11)"),
        EngineProfile("vllm-v1", 1.0, "vLLM V1: async scheduling, CUDA graphs; assumed as TRT"),
        EngineProfile("vllm-v0.6", 2.16, "Lambda vLLM 0.6.0 8B point [S9]; checked on row A13"),
    )
}


def get_engine_profile(name: str) -> EngineProfile:
    from gpuscale.errors import UserInputError

    if name not in ENGINE_PROFILES:
        raise UserInputError(f"unknown engine profile {name!r}; known: {', '.join(ENGINE_PROFILES)}")
    return ENGINE_PROFILES[name]
