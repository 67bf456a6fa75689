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

from gpuscale.catalog import get_gpu, get_instance_type, get_model
from gpuscale.catalog.specs import Precision, known_name
from gpuscale.errors import UserInputError
from gpuscale.inputs import load_yaml, parse_yaml
from gpuscale.scenario.parallelism import ExpertParallelism
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
from gpuscale.serving.expert_parallel import ParallelLayout, default_network_gb_s
from gpuscale.serving.frontend import FRONTENDS, Frontend
from gpuscale.serving.kv_cache import num_kv_blocks, weights_per_gpu_bytes
from gpuscale.serving.performance import ReplicaHardware, step_token_budget
from gpuscale.serving.precision_support import default_kv_precision, precision_error
from gpuscale.serving.replica import EngineConfig
from gpuscale.sim.replica_setup import parallel_layout, per_rank_host
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


class RowPool(ExpertParallelism):
    """One pool of a disaggregated deployment (its replicas' GPUs, EP and engine limits)."""

    tp: int = Field(1, ge=1, description="GPUs per replica of this pool.")
    nodes: int | None = Field(None, ge=1, description="Nodes one replica spans.")
    replicas: int = Field(1, ge=1, description="Replicas of this pool.")
    max_num_seqs: int | None = Field(None, ge=1, description="Per attention rank; None = "
                                     "the row engine's.")
    max_num_batched_tokens: int | None = Field(None, ge=16, description="Per rank, likewise.")


class RowDisaggregated(_Strict):
    """Prefill and decode pools, and which one the published figure measured (the other taken
    as unlimited, as LMSYS's and DeepSeek's per-phase figures are measured)."""

    prefill: RowPool
    decode: RowPool
    measured_phase: Literal["prefill", "decode"] = Field(description=(
        "prefill: the prefill pool's rate (requests_per_s = prompts prefilled per second, "
        "ttft_*: prefill time); decode: the decode pool's, each request arriving with its KV "
        "and first token (output_tokens_per_s counts the tokens decode generates)."))


PHASE_STATISTICS = {"prefill": ("requests_per_s", "input_tokens_per_s", "ttft_mean_s",
                                "ttft_p50_s", "ttft_p99_s"),
                    "decode": ("output_tokens_per_s", "tpot_mean_s", "tpot_p50_s", "tpot_p99_s",
                               "itl_mean_s", "itl_p50_s", "requests_per_s")}


class UserRow(ExpertParallelism):
    id: str = Field(min_length=1)  # the table's and the JSON's key: an empty one named nothing
    source: str = ""
    gpu: str
    model: str
    weights: Precision
    kv_cache: Precision | None = None
    tp: int = Field(1, ge=1)
    pp: int = Field(1, ge=1)
    nodes: int | None = Field(None, ge=1, description=(
        "Nodes one replica spans (its GPUs split evenly over them); None = 1, or the "
        "instance type's count."))
    instance_type: str | None = Field(None, description=(
        "Catalog instance type the replica runs on: GPUs per node, NVLink domain (GB200 "
        "NVL72: 72 over nodes of 4), inter-node network. None = nodes of tp x pp / nodes GPUs, "
        "one NVLink domain each, the GPU's default network (aiconfigurator)."))
    replicas: int = Field(1, ge=1)
    router: Literal["least_outstanding", "round_robin"] | None = None
    # What stands between the benchmark client and the engine (serving/frontend.py); None =
    # an OpenAI API server for online workloads, none for offline ones.
    frontend: Literal["none", "api_server", "nvidia_mlperf_harness"] | None = None
    gpus_per_node: int | None = Field(None, ge=1, description=(
        "GPUs per node, for checks `per: node`; None = the instance type's, else a replica's "
        "GPUs over its `nodes`, else 8."))
    engine: RowEngine
    workload: RowWorkload
    disaggregated: RowDisaggregated | None = None
    checks: list[RowCheck] = Field(min_length=1)

    @model_validator(mode="after")
    def _known(self) -> UserRow:
        known_name(get_gpu, self.gpu)
        known_name(get_model, self.model)
        if self.instance_type is not None:
            known_name(get_instance_type, self.instance_type)
            instance = get_instance_type(self.instance_type)
            if instance.gpu != self.gpu:
                raise ValueError(f"instance_type {self.instance_type} holds "
                                 f"{instance.gpu}, not {self.gpu}")
            if self.gpus_per_node not in (None, instance.num_gpus):
                raise ValueError(f"gpus_per_node {self.gpus_per_node} contradicts instance_type "
                                 f"{self.instance_type}'s {instance.num_gpus}; give one")
        for pool, tp, par in self.pools():
            where = f"disaggregated.{pool}: " if pool else ""
            if error := par.parallelism_error(get_model(self.model), tp):
                raise ValueError(where + error)
        if self.disaggregated is not None:
            allowed = PHASE_STATISTICS[self.disaggregated.measured_phase]
            wrong = [c.statistic for c in self.checks if c.statistic not in allowed]
            if wrong:
                raise ValueError(f"the {self.disaggregated.measured_phase} phase reports "
                                 f"{', '.join(allowed)}, not {', '.join(wrong)}")
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
        """How many of `per` the row's system holds (its replicas, nodes or GPUs); a
        disaggregated row's system is its measured pool."""
        replicas, replica_gpus, _ = self._measured_replicas()
        if per == "replica":
            return replicas
        if per == "gpu":
            return replicas * replica_gpus
        if per == "node":
            return -(-replicas * replica_gpus // self.node_gpus())
        return 1

    def _measured_replicas(self) -> tuple[int, int, int | None]:
        """(replicas, GPUs per replica, nodes per replica as given) of the measured system."""
        if self.disaggregated is not None:
            pool = getattr(self.disaggregated, self.disaggregated.measured_phase)
            return pool.replicas, pool.tp, pool.nodes
        return self.replicas, self.tp * self.pp, self.nodes

    def node_gpus(self) -> int:
        """GPUs per node: the row's `gpus_per_node`, else its instance type's, else a replica
        over the `nodes` it spans (its GPUs split evenly), else 8."""
        if self.gpus_per_node is not None:
            return self.gpus_per_node
        if self.instance_type is not None:
            return get_instance_type(self.instance_type).num_gpus
        _, replica_gpus, nodes = self._measured_replicas()
        if nodes is not None:
            return max(1, replica_gpus // nodes)
        return DEFAULT_GPUS_PER_NODE

    def pools(self) -> list[tuple[str, int, ExpertParallelism]]:
        """("" , tp, layout) of an aggregated row, else each pool's."""
        if self.disaggregated is None:
            return [("", self.tp, self)]
        return [(name, pool.tp, pool) for name, pool in (("prefill", self.disaggregated.prefill),
                                                          ("decode", self.disaggregated.decode))]


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


def _layout(row: UserRow, par: ExpertParallelism, tp: int, gpus: int,
            nodes: int | None) -> ParallelLayout:
    if row.instance_type is not None:
        layout = parallel_layout(par, get_instance_type(row.instance_type), tp, gpus)
        if nodes is not None and nodes != layout.nodes:
            raise UserInputError(f"row {row.id}: {gpus} GPUs span {layout.nodes} "
                                 f"{row.instance_type} nodes, not {nodes}", field="nodes")
        return layout
    nodes = nodes or 1
    if gpus % nodes:
        raise UserInputError(f"row {row.id}: {gpus} GPUs do not split over {nodes} nodes",
                             field="nodes")
    return ParallelLayout(ep=par.ep, attention_dp=par.attention_ranks(tp), nodes=nodes,
                          nvlink_domain_gpus=gpus // nodes,
                          network_gb_s_per_gpu=default_network_gb_s(row.gpu),
                          redundant_experts=par.redundant_experts, eplb=par.eplb,
                          two_batch_overlap=par.two_batch_overlap)


def row_hardware(row: UserRow, pool: str = "") -> ReplicaHardware:
    """`tp` GPUs per stage, `pp` stages: the replica holds tp x pp GPUs (memory, KV pool) and
    runs the pipeline path of the step model (micro-batches, bubbles, stage-to-stage sends),
    as scenarios' `model.pp` does (sim/run.py). A disaggregated row's `pool` replica has its
    own GPUs and expert parallelism (no pipeline)."""
    if pool:
        assert row.disaggregated is not None
        spec = getattr(row.disaggregated, pool)
        tp, pp, par, nodes = spec.tp, 1, spec, spec.nodes
    else:
        tp, pp, par, nodes = row.tp, row.pp, row, row.nodes
    hw = ReplicaHardware(get_gpu(row.gpu), get_model(row.model), row.weights,
                         row.kv_cache or default_kv_precision(row.weights), tp * pp, pp=pp,
                         layout=_layout(row, par, tp, tp * pp, nodes))
    profile = get_engine_profile(profile_name(row.engine.kind, row.engine.version))
    # Only a harness that streams on the engine's own loop costs the step anything
    # (serving/frontend.py); an API server's costs are the client's (`statistics`).
    return per_rank_host(with_engine(hw, profile, cuda_graphs=row.engine.cuda_graphs,
                                     stream_seq_s=row.frontend_spec().stream_seq_s))


def _kv_blocks(row: UserRow, hw: ReplicaHardware) -> int:
    """The row's KV pool in 16-token blocks: its override, else vLLM's memory arithmetic."""
    eng = row.engine
    if eng.kv_cache_tokens is not None:
        return eng.kv_cache_tokens // BLOCK_TOKENS
    util = eng.gpu_memory_utilization
    if eng.kv_cache_free_fraction is not None:  # TensorRT-LLM: a share of what is left
        fixed = min(hw.gpu.memory_bytes, weights_per_gpu_bytes(hw)
                    + (ACTIVATION_RESERVE_GIB + NON_TORCH_GIB) * GIB)
        util = (fixed + eng.kv_cache_free_fraction * (hw.gpu.memory_bytes - fixed)) \
            / hw.gpu.memory_bytes
    return num_kv_blocks(hw, gpu_memory_utilization=util, block_size=BLOCK_TOKENS,
                         activation_reserve_gib=ACTIVATION_RESERVE_GIB,
                         non_torch_gib=NON_TORCH_GIB)


def _refuse_unsplittable_prompts(row: UserRow, batching: str, budget: int,
                                 prompts: np.ndarray) -> None:
    """Whole-prompt batching never splits a prompt, so one longer than the token budget never
    runs: vLLM without chunked prefill refuses to start when max_num_batched_tokens is below
    max_model_len (SchedulerConfig._verify_args), and TensorRT-LLM without chunked context
    rejects the request (its max input length is min(max_seq_len - 1, max_num_tokens),
    trtGptModel.h; LlmRequest::validate; the PyTorch flow's "should not exceed
    max_num_tokens" in llmapi/llm.py). A row so set up measured nothing; refuse it."""
    if batching != "chunked" and len(prompts) and int(prompts.max()) > budget:
        raise UserInputError(
            f"row {row.id}: a {int(prompts.max())}-token prompt is longer than "
            f"engine.max_num_batched_tokens {budget}, and {batching} batching never splits a "
            "prompt (vLLM refuses to start so, TensorRT-LLM rejects the request); set "
            "engine.batching: chunked (vLLM's chunked prefill, TensorRT-LLM's "
            "enable_chunked_context) or a budget of at least the longest prompt")


def _engine_config(row: UserRow, hw: ReplicaHardware, pool: str) -> EngineConfig:
    """The row engine's limits, per attention rank (the pool's own where it gives them)."""
    eng = row.engine
    profile = get_engine_profile(profile_name(eng.kind, eng.version))
    blocks = _kv_blocks(row, hw)
    if blocks == 0:
        raise UserInputError(f"row {row.id}: {row.model} does not fit {hw.tp} x "
                             f"{row.gpu} at gpu_memory_utilization {eng.gpu_memory_utilization}")
    spec = getattr(row.disaggregated, pool) if pool else None
    seqs = (spec.max_num_seqs if spec else None) or eng.max_num_seqs
    budget = (spec.max_num_batched_tokens if spec else None) or eng.max_num_batched_tokens
    ranks = hw.layout.attention_dp
    # Each rank's budget per pipeline micro-batch (serving/pipeline.py); pp = 1: the budget.
    return EngineConfig(ranks * seqs, ranks * step_token_budget(budget, hw.pp), BLOCK_TOKENS,
                        blocks, eng.max_model_len or 10**6, 1e9,
                        batching=eng.batching or profile.batching,
                        admission=eng.admission or profile.admission)


def run_row(row: UserRow) -> dict[str, float]:
    """Replay the row's workload; returns every statistic of `serving.bench.STATISTICS`. A
    disaggregated row replays its measured phase's pool alone."""
    pool = row.disaggregated.measured_phase if row.disaggregated is not None else ""
    hw = row_hardware(row, pool)
    cfg = _engine_config(row, hw, pool)
    replicas = getattr(row.disaggregated, pool).replicas if pool else row.replicas
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
    if pool != "decode":  # a decode pool takes its prompts prefilled
        _refuse_unsplittable_prompts(
            row, cfg.batching, cfg.max_num_batched_tokens // (hw.pp * hw.layout.attention_dp),
            prompts)
    if wl.kind == "closed_loop":
        assert wl.concurrency is not None
        if pool:
            raise UserInputError(f"row {row.id}: a closed loop drives both phases; measure a "
                                 "disaggregated phase offline or with poisson arrivals",
                                 field="workload.kind")
        # A client's next request reaches the engine the front end's costs after the engine
        # finished its last one: to the engine that is think time (`statistics` adds them back
        # to what the client sees).
        gap_s = wl.think_time_s + frontend.request_s + frontend.finish_s
        table = replay_closed_loop(hw, cfg, prompts, outputs, wl.concurrency, gap_s,
                                   replicas, router)
    else:
        if wl.kind == "offline":
            arrival = np.zeros(n)
        else:
            assert wl.rate_per_s is not None
            arrival = np.cumsum(rng.exponential(1.0 / wl.rate_per_s, n))
        table = replay(hw, cfg, Requests(arrival, prompts, outputs), replicas, router,
                       phase=pool or "serve")
    out = statistics(table, frontend)
    if pool == "decode":  # the first token came from prefill: decode generated the rest
        out["output_tokens_per_s"] -= out["requests_per_s"]
    return out
