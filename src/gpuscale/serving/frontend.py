"""What stands between a client and the engine: an OpenAI-compatible API server, a benchmark
harness calling the engine in-process, or nothing (an offline batch run).

The engine's step time (serving/step_time.py) covers the engine's own loop. Online serving adds
work per request and per token outside it, which the client sees and the engine's step does
not (issue 28: the model read TTFT 23-36 % low at low load on online TensorRT-LLM points):

- `api_server` (vLLM / SGLang / trtllm-serve behind HTTP, what `benchmark_serving`, AIPerf and
  genai-perf measure): BLIS's fitted API-side coefficients, on H100 vLLM traces
  (inference-sim/inference-sim docs/guide/latency-models.md, "Alpha coefficients";
  hardware-and-models.md 1.2 [S2]): alpha0 = 15,563 us per request before it reaches the
  engine's queue (HTTP parsing, validation, tokenisation, queue insertion), alpha1 = 777 us per
  request after its last token (detokenisation, finish), alpha2 = 46 us per output token
  (streaming, incremental detokenisation). Counted as BLIS counts them: TTFT = alpha0 + the
  engine's first token + alpha2; each later token's gap + alpha2; the request ends alpha1 after
  its last token. They delay a request; they are not a shared queue (BLIS adds them per request,
  not as a server's service time). Assumed for every engine's OpenAI server (fitted on vLLM).
- `nvidia_mlperf_harness`: NVIDIA's MLPerf v4.1 C++ harness (`harness_llm`) over TensorRT-LLM,
  which streams every token of every sequence through its response path in Server and not in
  Offline: 20.5 us per streamed sequence per step on the batch manager's loop, i.e. inside the
  step (TRTLLM_STREAM_SEQ_S below; docs/calibration.md, "Streaming"). No API server (LoadGen
  calls the harness in-process).
- `none`: offline runs that return whole outputs in-process (trtllm-bench, MLPerf Offline, the
  LLM API): no front-end cost.
"""

from __future__ import annotations

from dataclasses import dataclass

# Host time per streamed sequence per step in TensorRT-LLM under NVIDIA's MLPerf v4.1 harness,
# 20.5 us: the value at which the model, run for LoadGen's 2,400 s at the H200 Server run's load
# relative to its own A7 offline rate (101 / 107.48 of it; 8 x TP1, batch 896;
# calibration/rows.py h200_server), reproduces that run's mean TTFT, 198 ms (bisected in 0.5 us
# steps: 20.5 -> 0.198 s, 21.0 -> 0.201 s). Inferred from a published point, not from a host
# profile: no per-response timing of the batch manager was found. Not fitted on any row;
# checked on row A8 (H100, TP2, 4 instances). Specific to that harness (issue 28): online
# TensorRT-LLM behind trtllm-serve pays the API server's costs instead.
TRTLLM_STREAM_SEQ_S = 20.5e-6

# BLIS's API-side coefficients (module docstring).
API_SERVER_REQUEST_S = 15_563e-6
API_SERVER_FINISH_S = 777e-6
API_SERVER_TOKEN_S = 46e-6


@dataclass(frozen=True)
class Frontend:
    """Costs outside the engine's step; all in seconds."""

    name: str
    request_s: float = 0.0  # per request, before the engine sees it (adds to TTFT)
    finish_s: float = 0.0  # per request, after its last token (the client's end of it)
    token_s: float = 0.0  # per output token the client receives (TTFT and every gap)
    # Per streamed sequence per step on the engine's own loop (ReplicaHardware.host_seq_s).
    stream_seq_s: float = 0.0

    @property
    def ttft_offset_s(self) -> float:
        """What the front end adds to every request's time to first token."""
        return self.request_s + self.token_s


FRONTENDS: dict[str, Frontend] = {f.name: f for f in (
    Frontend("none"),
    Frontend("api_server", request_s=API_SERVER_REQUEST_S, finish_s=API_SERVER_FINISH_S,
             token_s=API_SERVER_TOKEN_S),
    Frontend("nvidia_mlperf_harness", stream_seq_s=TRTLLM_STREAM_SEQ_S),
)}
FRONTEND_NAMES = tuple(FRONTENDS)
