"""Calibration rows written as data: `gpuscale calibrate --rows FILE` and the shipped rows.yaml.

One row states a published measurement's setup (GPU, model, precisions, TP, replicas, engine,
workload) and the statistics it reported; the row is replayed through the real replica engine
and each statistic compared, as the built-in rows are. Unknown fields are refused (the same
pydantic rules as scenarios). The format is issue 14's, docs/calibration.md shows an example.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gpuscale.catalog import get_gpu, get_model
from gpuscale.catalog.specs import Precision, known_name
from gpuscale.errors import UserInputError
from gpuscale.inputs import load_yaml, parse_yaml
from gpuscale.serving.bench import (
    STATISTICS,
    replay,
    replay_closed_loop,
    statistics,
)
from gpuscale.serving.engine_defaults import ACTIVATION_RESERVE_GIB, NON_TORCH_GIB
from gpuscale.serving.engines import (
    get_engine_profile,
    profile_name,
    vllm_release,
    with_engine,
)
from gpuscale.serving.frontend import FRONTENDS, Frontend
from gpuscale.serving.kv_cache import num_kv_blocks
from gpuscale.serving.performance import ReplicaHardware, step_token_budget
from gpuscale.serving.precision_support import default_kv_precision, precision_error
from gpuscale.serving.replica import EngineConfig
from gpuscale.units import GIB
from gpuscale.workloads.base import Requests
from gpuscale.workloads.distributions import FixedTokens, TokenDistribution
from gpuscale.workloads.limits import MAX_HORIZON_S, MAX_REQUESTS

BLOCK_TOKENS = 16  # the KV block the rows' engines use (vLLM's CUDA default)

Statistic = Literal["ttft_mean_s", "ttft_p50_s", "ttft_p99_s", "tpot_mean_s", "tpot_p50_s",
                    "tpot_p99_s", "itl_mean_s", "itl_p50_s", "output_tokens_per_s",
                    "input_tokens_per_s", "requests_per_s"]
assert set(Statistic.__args__) == set(STATISTICS)  # type: ignore[attr-defined]
THROUGHPUTS = ("output_tokens_per_s", "input_tokens_per_s", "requests_per_s")
# GPUs per node when a row does not say: 8, every SXM/OAM platform (HGX/DGX, MI300X OAM;
# hardware-and-models.md 1.3); GB200 NVL72 nodes hold 4 (row `gpus_per_node`).
DEFAULT_GPUS_PER_NODE = 8


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RowEngine(_Strict):
    kind: Literal["vllm", "trtllm", "sglang", "sarathi"] = Field(
        description="Engine profile (serving/engines.py).")
    version: str | None = Field(None, description=(
        "The engine's version: vLLM before 0.8 selects the V0 profile (vllm-v0.6), 0.8 and "
        "later V1 (serving/engines.py)."))
    max_num_seqs: int = Field(256, ge=1, description="Sequences per step.")
    max_num_batched_tokens: int = Field(8192, ge=16, description="Token budget per step.")
    cuda_graphs: bool = Field(True, description="False: eager mode (--enforce-eager).")
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1)
    max_model_len: int | None = Field(None, ge=1)
    batching: Literal["chunked", "prefill_first"] | None = Field(
        None, description="None = the engine profile's default scheduler (serving/engines.py).")
    admission: Literal["max_utilization", "guaranteed_no_evict"] | None = Field(
        None, description="KV admission; None = the profile's (TensorRT-LLM: guaranteed_no_evict).")
    # The KV budget, overriding gpu_memory_utilization's (at most one of the two).
    kv_cache_tokens: int | None = Field(None, ge=16, description=(
        "KV-cache tokens per replica, as the run's log reports them."))
    kv_cache_free_fraction: float | None = Field(None, gt=0, le=1, description=(
        "TensorRT-LLM's kv_cache_free_gpu_mem_frac: the share of the memory left after the "
        "weights and the reserves that the KV cache takes."))

    @model_validator(mode="after")
    def _one_kv_budget(self) -> RowEngine:
        if self.kv_cache_tokens is not None and self.kv_cache_free_fraction is not None:
            raise ValueError("give kv_cache_tokens or kv_cache_free_fraction, not both")
        if self.kind == "vllm" and self.version is not None:
            vllm_release(self.version)  # ValueError: one line naming engine.version
        return self


class RowWorkload(_Strict):
    kind: Literal["offline", "poisson", "closed_loop"]
    requests: int | None = Field(None, ge=1, description="Requests sent (offline, closed_loop).")
    rate_per_s: float | None = Field(None, gt=0, description="Poisson arrival rate.")
    duration_s: float | None = Field(None, gt=0, description="Poisson: seconds of arrivals.")
    concurrency: int | None = Field(None, ge=1, description="closed_loop: clients.")
    think_time_s: float = Field(0.0, ge=0, description="closed_loop: pause between requests.")
    prompt_tokens: TokenDistribution
    output_tokens: TokenDistribution
    seed: int = 0

    @model_validator(mode="after")
    def _fields_of_kind(self) -> RowWorkload:
        need = {"offline": ("requests",), "poisson": ("rate_per_s", "duration_s"),
                "closed_loop": ("concurrency", "requests")}[self.kind]
        missing = [f for f in need if getattr(self, f) is None]
        if missing:
            raise ValueError(f"workload kind {self.kind} needs {', '.join(missing)}")
        # The simulator's one-run limits (docs/input-limits.md): `requests: 1e9` ran for hours.
        expected = (self.requests or 0) if self.kind != "poisson" else (
            (self.rate_per_s or 0.0) * (self.duration_s or 0.0))
        if expected > MAX_REQUESTS:
            raise ValueError(f"the workload means about {expected:,.0f} requests, more than "
                             f"the {MAX_REQUESTS:,} one run holds (docs/input-limits.md)")
        if self.kind == "poisson" and (self.duration_s or 0.0) > MAX_HORIZON_S:
            raise ValueError(f"duration_s {self.duration_s:,.0f} is more than the "
                             f"{MAX_HORIZON_S / 86_400:.0f}-day horizon of one run")
        return self


class RowCheck(_Strict):
    statistic: Statistic
    measured: float = Field(gt=0)
    tolerance: float = Field(ge=0, description="Allowed |predicted / measured - 1|.")
    per: Literal["system", "replica", "node", "gpu"] = Field("system", description=(
        "What a throughput statistic is counted over: the whole system (all replicas), one "
        "replica, one node or one GPU (the measured value divided the same way)."))
    known_miss: str = Field("", description=(
        "Why the model misses this published point untuned, when it does and no physical fix "
        "was found: the table says `known miss` (with this reason) instead of FAIL. Never a "
        "reason to tune a constant."))

    @model_validator(mode="after")
    def _per_throughput_only(self) -> RowCheck:
        if self.per != "system" and self.statistic not in THROUGHPUTS:
            raise ValueError(f"per: {self.per} divides a throughput; {self.statistic} is a "
                             "latency, which has no per-GPU share")
        return self


class UserRow(_Strict):
    id: str = Field(min_length=1)  # the table's and the JSON's key: an empty one named nothing
    source: str = ""
    gpu: str
    model: str
    weights: Precision
    kv_cache: Precision | None = None
    tp: int = Field(1, ge=1)
    pp: int = Field(1, ge=1)
    replicas: int = Field(1, ge=1)
    router: Literal["least_outstanding", "round_robin"] | None = None
    # What stands between the benchmark client and the engine (serving/frontend.py); None =
    # an OpenAI API server for online workloads, none for offline ones.
    frontend: Literal["none", "api_server", "nvidia_mlperf_harness"] | None = None
    gpus_per_node: int | None = Field(None, ge=1, description=(
        "GPUs per node, for checks `per: node`; None = 8."))
    engine: RowEngine
    workload: RowWorkload
    checks: list[RowCheck] = Field(min_length=1)

    @model_validator(mode="after")
    def _known(self) -> UserRow:
        known_name(get_gpu, self.gpu)
        known_name(get_model, self.model)
        if error := get_model(self.model).tp_error(self.tp):
            raise ValueError(error)
        # Fixed lengths past the context window: no server takes such a request (a prompt of
        # 1e12 tokens was capped to 10M and replayed, a FAIL that measured nothing).
        prompt, output = self.workload.prompt_tokens, self.workload.output_tokens
        context = self.engine.max_model_len or get_model(self.model).max_context_tokens
        if isinstance(prompt, FixedTokens) and isinstance(output, FixedTokens) \
                and prompt.value + output.value > context:
            raise ValueError(f"workload: {prompt.value} prompt + {output.value} output tokens "
                             f"is more than the {context}-token context of {self.model} "
                             "(engine.max_model_len or the model's)")
        if error := precision_error(self.engine.kind, get_gpu(self.gpu), self.weights,
                                    self.kv_cache or default_kv_precision(self.weights)):
            raise ValueError(error)
        return self

    def frontend_spec(self) -> Frontend:
        name = self.frontend or ("none" if self.workload.kind == "offline" else "api_server")
        return FRONTENDS[name]

    def units(self, per: str) -> int:
        """How many of `per` the row's system holds (its replicas, nodes or GPUs)."""
        gpus = self.replicas * self.tp * self.pp
        if per == "replica":
            return self.replicas
        if per == "gpu":
            return gpus
        if per == "node":
            return -(-gpus // (self.gpus_per_node or DEFAULT_GPUS_PER_NODE))
        return 1


class RowsFile(_Strict):
    rows: list[UserRow] = Field(min_length=1)


def load_rows(path: str | Path) -> list[UserRow]:
    """A user's rows file, read like every input (gpuscale/inputs.py: size, aliases, depth,
    duplicate keys; /dev/zero and FIFOs refused)."""
    return _validate(load_yaml(path, what="calibration rows file"), str(path))


def parse_rows(text: str, source: str) -> list[UserRow]:
    return _validate(parse_yaml(text, source), source)


def _validate(data: object, source: str) -> list[UserRow]:
    try:
        return RowsFile.model_validate(data).rows
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise UserInputError(err["msg"], source=source, field=where) from None


def builtin_rows() -> list[UserRow]:
    text = resources.files("gpuscale.calibration").joinpath("rows.yaml").read_text()
    return parse_rows(text, "gpuscale/calibration/rows.yaml")


def row_hardware(row: UserRow) -> ReplicaHardware:
    """`tp` GPUs per stage, `pp` stages: the replica holds tp x pp GPUs (memory, KV pool) and
    runs the pipeline path of the step model (micro-batches, bubbles, stage-to-stage sends),
    as scenarios' `model.pp` does (sim/run.py)."""
    hw = ReplicaHardware(get_gpu(row.gpu), get_model(row.model), row.weights,
                         row.kv_cache or default_kv_precision(row.weights), row.tp * row.pp,
                         pp=row.pp)
    profile = get_engine_profile(profile_name(row.engine.kind, row.engine.version))
    # Only a harness that streams on the engine's own loop costs the step anything
    # (serving/frontend.py); an API server's costs are the client's (`statistics`).
    return with_engine(hw, profile, cuda_graphs=row.engine.cuda_graphs,
                       stream_seq_s=row.frontend_spec().stream_seq_s)


def _kv_blocks(row: UserRow, hw: ReplicaHardware) -> int:
    """The row's KV pool in 16-token blocks: its override, else vLLM's memory arithmetic."""
    eng = row.engine
    if eng.kv_cache_tokens is not None:
        return eng.kv_cache_tokens // BLOCK_TOKENS
    util = eng.gpu_memory_utilization
    if eng.kv_cache_free_fraction is not None:  # TensorRT-LLM: a share of what is left
        fixed = min(hw.gpu.memory_bytes, hw.model.weight_bytes(hw.weight_precision) / hw.tp
                    + (ACTIVATION_RESERVE_GIB + NON_TORCH_GIB) * GIB)
        util = (fixed + eng.kv_cache_free_fraction * (hw.gpu.memory_bytes - fixed)) \
            / hw.gpu.memory_bytes
    return num_kv_blocks(hw, gpu_memory_utilization=util, block_size=BLOCK_TOKENS,
                         activation_reserve_gib=ACTIVATION_RESERVE_GIB,
                         non_torch_gib=NON_TORCH_GIB)


def _refuse_unsplittable_prompts(row: UserRow, batching: str, prompts: np.ndarray) -> None:
    """Whole-prompt batching never splits a prompt, so one longer than the token budget never
    runs: vLLM without chunked prefill refuses to start when max_num_batched_tokens is below
    max_model_len (SchedulerConfig._verify_args), and TensorRT-LLM without chunked context
    rejects the request (its max input length is min(max_seq_len - 1, max_num_tokens),
    trtGptModel.h; LlmRequest::validate; the PyTorch flow's "should not exceed
    max_num_tokens" in llmapi/llm.py). A row so set up measured nothing; refuse it."""
    budget = row.engine.max_num_batched_tokens
    if batching != "chunked" and len(prompts) and int(prompts.max()) > budget:
        raise UserInputError(
            f"row {row.id}: a {int(prompts.max())}-token prompt is longer than "
            f"engine.max_num_batched_tokens {budget}, and {batching} batching never splits a "
            "prompt (vLLM refuses to start so, TensorRT-LLM rejects the request); set "
            "engine.batching: chunked (vLLM's chunked prefill, TensorRT-LLM's "
            "enable_chunked_context) or a budget of at least the longest prompt")


def run_row(row: UserRow) -> dict[str, float]:
    """Replay the row's workload; returns every statistic of `serving.bench.STATISTICS`."""
    hw = row_hardware(row)
    eng = row.engine
    profile = get_engine_profile(profile_name(eng.kind, eng.version))
    batching = eng.batching or profile.batching
    blocks = _kv_blocks(row, hw)
    if blocks == 0:
        raise UserInputError(f"row {row.id}: {row.model} does not fit {row.tp * row.pp} x "
                             f"{row.gpu} at gpu_memory_utilization {eng.gpu_memory_utilization}")
    # A budget per pipeline micro-batch (serving/pipeline.py); pp = 1: the budget.
    cfg = EngineConfig(eng.max_num_seqs, step_token_budget(eng.max_num_batched_tokens, row.pp),
                       BLOCK_TOKENS, blocks,
                       eng.max_model_len or 10**6, 1e9, batching=batching,
                       admission=eng.admission or profile.admission)
    wl = row.workload
    rng = np.random.default_rng(wl.seed)
    router = row.router or "least_outstanding"
    frontend = row.frontend_spec()
    if wl.kind == "poisson":
        assert wl.rate_per_s is not None and wl.duration_s is not None
        n = wl.requests or int(wl.rate_per_s * wl.duration_s)
    else:
        assert wl.requests is not None
        n = wl.requests
    prompts = wl.prompt_tokens.sample(rng, n)
    outputs = wl.output_tokens.sample(rng, n)
    _refuse_unsplittable_prompts(row, batching, prompts)
    if wl.kind == "closed_loop":
        assert wl.concurrency is not None
        # A client's next request reaches the engine the front end's costs after the engine
        # finished its last one: to the engine that is think time (`statistics` adds them back
        # to what the client sees).
        gap_s = wl.think_time_s + frontend.request_s + frontend.finish_s
        table = replay_closed_loop(hw, cfg, prompts, outputs, wl.concurrency, gap_s,
                                   row.replicas, router)
    else:
        if wl.kind == "offline":
            arrival = np.zeros(n)
        else:
            assert wl.rate_per_s is not None
            arrival = np.cumsum(rng.exponential(1.0 / wl.rate_per_s, n))
        table = replay(hw, cfg, Requests(arrival, prompts, outputs), row.replicas, router)
    return statistics(table, frontend)
