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
from gpuscale.serving.engines import get_engine_profile, profile_name, with_engine
from gpuscale.serving.expert_parallel import ParallelLayout, default_network_gb_s
from gpuscale.serving.kv_cache import num_kv_blocks
from gpuscale.serving.performance import ReplicaHardware
from gpuscale.serving.replica import EngineConfig
from gpuscale.sim.replica_setup import parallel_layout, per_rank_host
from gpuscale.workloads.base import Requests
from gpuscale.workloads.distributions import FixedTokens, TokenDistribution
from gpuscale.workloads.limits import MAX_HORIZON_S, MAX_REQUESTS

Statistic = Literal["ttft_mean_s", "ttft_p99_s", "tpot_mean_s", "tpot_p99_s", "itl_mean_s",
                    "output_tokens_per_s", "requests_per_s"]
assert set(Statistic.__args__) == set(STATISTICS)  # type: ignore[attr-defined]


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RowEngine(_Strict):
    kind: Literal["vllm", "trtllm", "sglang", "sarathi"] = Field(
        description="Engine profile (serving/engines.py).")
    version: str | None = Field(None, description="vLLM 0.x selects the vLLM 0.6 profile.")
    max_num_seqs: int = Field(256, ge=1, description="Sequences per step.")
    max_num_batched_tokens: int = Field(8192, ge=16, description="Token budget per step.")
    cuda_graphs: bool = Field(True, description="False: eager mode (--enforce-eager).")
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1)
    max_model_len: int | None = Field(None, ge=1)
    batching: Literal["chunked", "prefill_first"] | None = Field(
        None, description="None = the engine profile's default scheduler (serving/engines.py).")
    admission: Literal["max_utilization", "guaranteed_no_evict"] | None = Field(
        None, description="KV admission; None = the profile's (TensorRT-LLM: guaranteed_no_evict).")


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
    known_miss: str = Field("", description=(
        "Why the model misses this published point untuned, when it does and no physical fix "
        "was found: the table says `known miss` (with this reason) instead of FAIL. Never a "
        "reason to tune a constant."))


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


PHASE_STATISTICS = {"prefill": ("requests_per_s", "ttft_mean_s", "ttft_p99_s"),
                    "decode": ("output_tokens_per_s", "tpot_mean_s", "tpot_p99_s",
                               "itl_mean_s", "requests_per_s")}


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
            if get_instance_type(self.instance_type).gpu != self.gpu:
                raise ValueError(f"instance_type {self.instance_type} holds "
                                 f"{get_instance_type(self.instance_type).gpu}, not {self.gpu}")
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
        return self


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
                         row.kv_cache or row.weights, tp * pp, pp=pp,
                         layout=_layout(row, par, tp, tp * pp, nodes))
    profile = get_engine_profile(profile_name(row.engine.kind, row.engine.version))
    # Online workloads stream tokens; an offline one returns whole outputs (serving/engines.py).
    return per_rank_host(with_engine(hw, profile, cuda_graphs=row.engine.cuda_graphs,
                                     streaming=row.workload.kind != "offline"))


def _engine_config(row: UserRow, hw: ReplicaHardware, pool: str) -> EngineConfig:
    """The row engine's limits, per attention rank (the pool's own where it gives them)."""
    eng = row.engine
    profile = get_engine_profile(profile_name(eng.kind, eng.version))
    blocks = num_kv_blocks(hw, gpu_memory_utilization=eng.gpu_memory_utilization,
                           block_size=16, activation_reserve_gib=2.0, non_torch_gib=0.5)
    if blocks == 0:
        raise UserInputError(f"row {row.id}: {row.model} does not fit {hw.tp} x "
                             f"{row.gpu} at gpu_memory_utilization {eng.gpu_memory_utilization}")
    spec = getattr(row.disaggregated, pool) if pool else None
    seqs = (spec.max_num_seqs if spec else None) or eng.max_num_seqs
    budget = (spec.max_num_batched_tokens if spec else None) or eng.max_num_batched_tokens
    ranks = hw.layout.attention_dp
    return EngineConfig(ranks * seqs, ranks * budget, 16, blocks, eng.max_model_len or 10**6,
                        1e9, batching=eng.batching or profile.batching,
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
    if wl.kind == "poisson":
        assert wl.rate_per_s is not None and wl.duration_s is not None
        n = wl.requests or int(wl.rate_per_s * wl.duration_s)
    else:
        assert wl.requests is not None
        n = wl.requests
    prompts = wl.prompt_tokens.sample(rng, n)
    outputs = wl.output_tokens.sample(rng, n)
    if wl.kind == "closed_loop":
        assert wl.concurrency is not None
        if pool:
            raise UserInputError(f"row {row.id}: a closed loop drives both phases; measure a "
                                 "disaggregated phase offline or with poisson arrivals",
                                 field="workload.kind")
        table = replay_closed_loop(hw, cfg, prompts, outputs, wl.concurrency, wl.think_time_s,
                                   replicas, router)
    else:
        if wl.kind == "offline":
            arrival = np.zeros(n)
        else:
            assert wl.rate_per_s is not None
            arrival = np.cumsum(rng.exponential(1.0 / wl.rate_per_s, n))
        table = replay(hw, cfg, Requests(arrival, prompts, outputs), replicas, router,
                       phase=pool or "serve")
    out = statistics(table)
    if pool == "decode":  # the first token came from prefill: decode generated the rest
        out["output_tokens_per_s"] -= out["requests_per_s"]
    return out
