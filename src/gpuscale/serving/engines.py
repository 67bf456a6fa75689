"""Engine profiles: what differs between serving engines on the same GPU and model.

The kernels in `performance.py` are what the GPU must do; an engine adds host time (scheduler,
sampling, detokenisation, output processing) that the GPU waits for, chooses how it all-reduces
small messages, and runs with or without CUDA graphs. Each profile's numbers come from a
measurement that is not itself a calibration row, and are then checked on rows
(docs/calibration.md):

- `vllm` (V1) / `default` / `trtllm` / `sglang`: BLIS's fitted host time, 126 us per step and
  4 us per sequence [S2] (hardware-and-models.md 1.2), with their own one-shot all-reduce below
  8 MB and CUDA graphs. TensorRT-LLM rows A6, A7, A10, A11 pass with exactly this. SGLang takes
  vLLM V1's numbers (assumed): its one published setup read (SGLang v0.3.0 against vLLM 0.6.0,
  sgl-project/sglang benchmark/benchmark_vllm_060) gives row S1 (8B, A100, +19 % untuned) and a
  70B TP4 H100 point the model reads +39 % (not a row; docs/calibration.md, "SGLang"). No source
  gives a reason for a different host time except SGLang v0.4's overlap scheduler ("1.1x
  throughput", LMSYS blog 2024-12-04), a multiplier on an unstated setup that would not close
  the 70B gap, so the profile is left as assumed.
- `vllm-v0.6` (`kind: vllm, version: "0.6"`): vLLM 0.6.0 with `num-scheduler-steps 10` ran
  Llama-3.1-8B FP8 on one H100 at 8,088 output tok/s (Lambda benchmark_v0, hardware-and-models.md
  3.4 [S9]); the kernels plus V1's host time give 16,174 tok/s on the same setup (ShareGPT-like
  lengths, max-num-seqs 256, V0's prefill-first scheduler). The gap is per-sequence Python work
  between steps (the vLLM 0.6 blog: API server and scheduler on the CPU): 66 us per sequence
  per step makes the 8B point exact, and then predicts row A13 (70B, TP4) at +16 % tok/s and
  -3 % median TPOT, which it was not fitted on. (A whole-step multiplier fitted the same way,
  2.30x with chunked batching, missed A13's TPOT by +36 %: host time does not grow with the
  model.)
- TensorRT-LLM's scheduler: prompts kept whole (`enable_chunked_context` off by default) and
  KV admission GUARANTEED_NO_EVICT (its default capacity scheduler policy: a request's prompt
  and all its output reserved at admission, no preemption); vLLM admits on the KV in use and
  preempts by recompute (`max_utilization`).
- `sarathi` (Sarathi-Serve, the engine Vidur's profiles come from): NCCL all-reduce at every
  size (its custom kernels are not used) plus 20 us of CPU launch per NCCL call (Vidur's
  constant, SARATHI_NCCL_LAUNCH_S), V1's host time (assumed; Vidur itself models none).
- Streaming: what a front end costs per token is not the engine's (serving/frontend.py): the
  MLPerf v4.1 harness's per-streamed-sequence cost on TensorRT-LLM's loop (20.5 us,
  TRTLLM_STREAM_SEQ_S, docs/calibration.md "Streaming") is an option of the rows that ran it,
  and an OpenAI API server's per-request and per-token costs are the `api_server` front end.

Without CUDA graphs (`cuda_graphs: false`, vLLM `--enforce-eager`) the CPU launches every
kernel: performance.EAGER_LAUNCH_S per kernel, from a measured Llama-3.1-8B H100 decode step,
8.4 ms eager vs 5.1 ms with graphs (cloudai.pt "CUDA Graphs + torch.compile: 1.65x LLM Decode
Speedup"): (8.4 ms - host) / (32 layers x 15 kernels) = 17 us, inside the 5-20 us per launch
that PyTorch dispatch plus cudaLaunchKernel are commonly measured at.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from gpuscale.catalog.specs import user_engine_overrides
from gpuscale.serving.performance import HOST_SEQ_S, HOST_STEP_S, ReplicaHardware

# CPU launch of one NCCL call issued eagerly from PyTorch, 20 us: Vidur's
# `nccl_cpu_launch_overhead_ms` = 0.02 (microsoft/vidur @7d47513 vidur/config/config.py, added
# to every tensor-parallel all-reduce in execution_time_predictor/sklearn_execution_time_predictor
# .py), the authors' constant for Sarathi-Serve, whose mixed prefill/decode steps run outside
# CUDA graphs. Vidur's all_reduce.csv times the NCCL kernel alone, so the launch adds to it.
SARATHI_NCCL_LAUNCH_S = 20e-6



@dataclass(frozen=True)
class EngineProfile:
    name: str
    source: str
    host_step_s: float = HOST_STEP_S
    host_seq_s: float = HOST_SEQ_S
    custom_allreduce: bool = True
    step_time_factor: float = 1.0
    # Exposed CPU launch of each NCCL all-reduce (ReplicaHardware.allreduce_launch_s); 0 where
    # the engine replays its collectives inside CUDA graphs.
    allreduce_launch_s: float = 0.0
    # The scheduler's default batching (replica.EngineConfig.batching): vLLM V1 and SGLang chunk
    # prefills; vLLM 0.6 (V0) runs prefill-first batches unless max_model_len > 32k (its
    # default); TensorRT-LLM's in-flight batching keeps prompts whole (enable_chunked_context
    # defaults to False in its executor and LLM API).
    batching: str = "chunked"
    # KV admission (replica.EngineConfig.admission): TensorRT-LLM's capacity scheduler defaults
    # to GUARANTEED_NO_EVICT (reserve prompt + max new tokens at admission); vLLM admits on
    # the KV in use and preempts.
    admission: str = "max_utilization"


ENGINE_PROFILES: dict[str, EngineProfile] = {
    p.name: p for p in (
        EngineProfile("default", "kernels + BLIS host time (rows A6, A7, A10, A11)"),
        EngineProfile("vllm", "vLLM V1: async scheduling, CUDA graphs; BLIS host time"),
        EngineProfile("trtllm", "TensorRT-LLM: C++ runtime, CUDA graphs (rows A6-A11)",
                      batching="whole_prompt", admission="guaranteed_no_evict"),
        EngineProfile("sglang", "assumed as vLLM V1; checked on row S1 (docs/calibration.md)"),
        EngineProfile("vllm-v0.6", "Lambda vLLM 0.6.0 8B point [S9]; checked on row A13",
                      host_seq_s=66e-6, batching="prefill_first"),
        EngineProfile("sarathi", "Sarathi-Serve as Vidur profiles it: NCCL all-reduce",
                      custom_allreduce=False, allreduce_launch_s=SARATHI_NCCL_LAUNCH_S),
    )
}
ENGINE_PROFILES["vllm-v1"] = ENGINE_PROFILES["vllm"]
ENGINE_KINDS = ("vllm", "trtllm", "sglang", "sarathi")


# vLLM made the V1 engine the default in 0.8.0 (vLLM v0.8.0 release notes, 2025-03: "V1 is now
# enabled by default"; `VLLM_USE_V1` defaults to 1 from then on), so 0.8 and later run V1's
# scheduler and host time; 0.7 and earlier run V0, whose closest profile is vllm-v0.6.
VLLM_V1_DEFAULT_FROM = (0, 8)


def vllm_release(version: str) -> tuple[int, int]:
    """(major, minor) of a vLLM version string ("0.10.2", "v0.6.3.post1", "0.9.0rc1");
    ValueError when it does not start with two dotted numbers."""
    match = re.match(r"[vV]?(\d+)\.(\d+)", str(version).strip())
    if match is None:
        raise ValueError(f"expected a vLLM version like 0.10.2, got {version!r}")
    return int(match.group(1)), int(match.group(2))


def profile_name(kind: str, version: str | None = None) -> str:
    """`engine: {kind, version}` of a calibration row or scenario -> a profile name: vLLM
    before 0.8 is the V0 engine (the vllm-v0.6 profile), 0.8 and later V1 (`vllm`)."""
    if kind == "vllm" and version is not None \
            and vllm_release(version) < VLLM_V1_DEFAULT_FROM:
        return "vllm-v0.6"
    return kind


def get_engine_profile(name: str) -> EngineProfile:
    from gpuscale.errors import UserInputError

    if name not in ENGINE_PROFILES:
        raise UserInputError(
            f"unknown engine profile {name!r}; known: {', '.join(ENGINE_PROFILES)}"
        )
    # A user catalog's `engines:` entry (e.g. the host time `calibrate --fit` measured).
    override = user_engine_overrides().get(name)
    if override:
        return dataclasses.replace(ENGINE_PROFILES[name], **override)
    return ENGINE_PROFILES[name]


def with_engine(hw: ReplicaHardware, profile: EngineProfile, cuda_graphs: bool = True,
                stream_seq_s: float = 0.0) -> ReplicaHardware:
    """The same replica run by `profile`'s engine; `stream_seq_s`: host time per streamed
    sequence per step that the front end puts on the engine's loop (serving/frontend.py:
    NVIDIA's MLPerf harness over TensorRT-LLM; 0 for an API server or an offline run)."""
    return dataclasses.replace(hw, host_step_s=profile.host_step_s,
                               host_seq_s=profile.host_seq_s + stream_seq_s,
                               custom_allreduce=profile.custom_allreduce,
                               allreduce_launch_s=profile.allreduce_launch_s,
                               step_time_factor=profile.step_time_factor, cuda_graphs=cuda_graphs)
