"""Scenario schema: pydantic v2 models, frozen, unknown keys rejected.

Each field's description gives its meaning, unit and why the default; `docs/scenario.md` is
generated from these models.
"""

from __future__ import annotations

import difflib
from datetime import timedelta
from typing import Annotated, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator, model_validator

from gpuscale.autoscaling import AutoscalerSpec, promql_queries
from gpuscale.autoscaling.keda_cron import opens_within
from gpuscale.catalog.specs import Precision, get_instance_type, get_model, known_name
from gpuscale.cluster.groups import DEFAULT_QUEUE, DEFAULT_STALENESS_GRACE_S, PodGroupSpec
from gpuscale.metrics.exposition import known_series
from gpuscale.metrics.prometheus_config import RuleGroup, unknown_metric
from gpuscale.metrics.store import FLEET_SIGNALS, POD_SERIES
from gpuscale.provisioning import NodeProviderSpec
from gpuscale.scheduling import SchedulerSpec
from gpuscale.units import DEFAULT_START_TIME
from gpuscale.workloads import WorkloadSpec


class Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FixedSeconds(Strict):
    kind: Literal["fixed"] = "fixed"
    value_s: float = Field(ge=0, description="Always this many seconds.")


class LognormalSeconds(Strict):
    kind: Literal["lognormal"] = "lognormal"
    median_s: float = Field(gt=0, description="Median duration, seconds.")
    sigma: float = Field(0.25, ge=0, description="Log-space standard deviation (0.25 ~ +-28%).")
    max_s: float | None = Field(None, gt=0, description="Named cap; None = no cap.")


Duration = Annotated[FixedSeconds | LognormalSeconds, Field(discriminator="kind")]


class ModelDeployment(Strict):
    name: str = Field(
        description="Model from the catalog (`catalog/models.yaml`), e.g. Llama-3.3-70B."
    )
    precision: Precision = Field(Precision.BF16, description=(
        "Weight precision: bf16, fp8, nvfp4 or mxfp4 (FP4 natively on Blackwell / MI355X, "
        "weight-only elsewhere where the engine has the kernel; serving/precision_support.py)."))
    kv_precision: Precision | None = Field(None, description=(
        "KV-cache precision (bf16, fp8, nvfp4 on Blackwell); default = weights' (fp8 for FP4 "
        "weights: no engine stores an MXFP4 KV cache)."))
    tp: int = Field(1, ge=1, le=64, description="Tensor-parallel GPUs per replica (one pod).")
    pp: int = Field(1, ge=1, le=16, description=(
        "Pipeline-parallel stages per replica; the pod holds tp x pp GPUs. 1 = no pipeline "
        "(vLLM's default). Stages run the batch as micro-batches; fewer sequences than stages "
        "leave bubbles (docs/serving.md)."))

    @field_validator("name")
    @classmethod
    def _known_model(cls, name: str) -> str:
        return known_name(get_model, name)

    @model_validator(mode="after")
    def _tp_splits_the_heads(self) -> ModelDeployment:
        """vLLM shards attention heads across the TP group: tp must divide them."""
        if error := get_model(self.name).tp_error(self.tp):
            raise ValueError(error)
        return self


class EngineSettings(Strict):
    """vLLM engine arguments (serving-engine-metrics.md 1.4 gives the defaults)."""

    kind: Literal["vllm", "sglang", "trtllm"] = Field("vllm", description=(
        "Engine profile (serving/engines.py): its host time, all-reduce and, for trtllm, whole "
        "prompts per step and guaranteed-no-evict KV admission. A catalog's `engines:` entry "
        "overrides the host time (`calibrate --fit` writes one)."))

    max_num_seqs: int | None = Field(None, ge=1, description=(
        "Sequences per step; None = vLLM's default: 1024 on >=70 GiB GPUs other than A100, "
        "else 256."))
    max_num_batched_tokens: int | None = Field(None, ge=16, description=(
        "Token budget per step; None = vLLM API-server default: 8192 on >=70 GiB GPUs other "
        "than A100, else 2048."))
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1, description=(
        "Share of GPU memory vLLM pre-allocates (0.9 for most of vLLM's history; 0.92 in 2026 "
        "main). Pinned explicitly because the default moved."))
    block_size: int = Field(
        16, ge=1, description="KV-cache block size, tokens (vLLM CUDA default)."
    )
    activation_reserve_gib: float = Field(2.0, ge=0, description=(
        "Per-GPU torch activation peak vLLM profiles at start-up; 2.07 GiB for an 8B model at "
        "20k max_model_len (calibration row A5, read from vLLM 0.6.4's log); 2 GiB is a round "
        "default."))
    non_torch_gib: float = Field(0.5, ge=0, description=(
        "Per-GPU memory outside PyTorch (CUDA context, NCCL buffers ~0.34-0.39 GiB [S1])."))
    max_model_len: int | None = Field(None, ge=16, description="None = the model's context length.")
    enable_prefix_caching: bool = Field(True, description=(
        "vLLM's automatic prefix caching (`--enable-prefix-caching`, on by default in V1): "
        "blocks of finished requests stay cached while free (LRU) and a prompt's longest "
        "cached prefix is not recomputed. Acts only on a trace with prompt block hashes "
        "(Mooncake `hash_ids`); see docs/serving.md."))
    batching: Literal["chunked", "prefill_first"] | None = Field(None, description=(
        "Step composition; None = the engine kind's default (vllm, sglang: chunked; trtllm: "
        "whole prompts beside decodes, its enable_chunked_context off). `chunked` (vLLM V1, "
        "Sarathi, TensorRT-LLM with chunked context: decodes and prefill chunks share the "
        "token budget) or `prefill_first` (vLLM V0's default: whole prompts in prefill-only "
        "steps before any decode step)."))
    admission: Literal["max_utilization", "guaranteed_no_evict"] | None = Field(
        None, description=(
            "KV admission; None = the engine kind's default (vllm, sglang: max_utilization; "
            "trtllm: guaranteed_no_evict). `max_utilization` (vLLM: admit while the KV in use "
            "fits, preempt by "
            "recompute when it runs out) or `guaranteed_no_evict` (TensorRT-LLM's default "
            "capacity scheduler: admit only if the prompt and every output token still to come "
            "fit beside the running requests' reservations; never preempts)."))


class PrefixAwareWeights(Strict):
    """`router: prefix_aware`'s scorer weights, as llm-d's EndpointPickerConfig gives them to
    its scorers (its well-lit inference-scheduling path: 3 / 2 / 2; serving/router.py)."""

    prefix_cache: float = Field(3.0, ge=0, description=(
        "Weight of the share of the prompt's blocks cached on the replica (prefix-cache-scorer)."))
    queue: float = Field(2.0, ge=0, description=(
        "Weight of the short-queue score, min-max over the replicas (queue-scorer)."))
    kv_cache: float = Field(2.0, ge=0, description=(
        "Weight of the free KV-cache share (kv-cache-utilization-scorer)."))

    def as_tuple(self) -> tuple[float, float, float]:
        return self.prefix_cache, self.queue, self.kv_cache


class ColdStart(Strict):
    """Replica cold start after its pod is bound: image pull -> extract -> weight load -> engine
    init (P2P check, Dynamo, torch.compile, CUDA-graph capture). Components are derived from
    the model size and these settings (serving/cold_start.py, rows A15-A17); `image_pull` and
    `engine_init` given explicitly replace the derived components."""

    image_pull: Duration | None = Field(None, description=(
        "Pull + extract of the serving image on a node that lacks it. None = image_size_gb at "
        "61 MB/s pull + 96 MB/s extract (20.2 GB took 5-6 + 3-4 min untuned, row A17)."))
    image_cached_on_warm_nodes: bool = Field(True, description=(
        "Nodes that already ran this image skip the pull (containerd layer cache)."))
    image_size_gb: float = Field(12.0, gt=0, description=(
        "Serving image size, GB: vLLM images are ~12-12.6 GB (vLLM #27154, Oct 2025)."))
    storage_gbps: float | None = Field(None, gt=0, description=(
        "Effective weight-load bandwidth, GB/s. None = from weight_storage and loader: 1.05 "
        "for gp3 + streamer (15 GB in 14.34 s, row A16)."))
    weight_storage: Literal["gp3", "io2", "local-nvme", "page-cache"] = Field("gp3", description=(
        "Where weights are read from (row A16: gp3 / io2; row A15: hot page cache)."))
    loader: Literal["safetensors", "streamer"] = Field("streamer", description=(
        "vLLM's default safetensors loader or the Run:ai Model Streamer (3.3x faster on gp3)."))
    warm_compile_cache: bool = Field(False, description=(
        "torch.compile artifacts cached on the node (70 s -> ~26 s at 70B, row A15)."))
    skip_p2p_check: bool = Field(False, description=(
        "VLLM_SKIP_P2P_CHECK=1: skips the ~60 s GPU-pair check of TP8 (row A15)."))
    sigma: float = Field(0.25, ge=0, description=(
        "Lognormal spread of each derived component (0.25 ~ +-28%)."))
    engine_init: Duration | None = Field(None, description=(
        "Whole engine init as one duration. None = P2P check + Dynamo + compile + graph capture "
        "by model size (~3.5 min cold at 70B TP8, row A15)."))


class ClusterSettings(Strict):
    """Enough of layer 1 to make scale-up cost time: ready nodes plus launchable ones."""

    instance_type: str = Field(description="Instance type from the catalog, e.g. p5.48xlarge.")
    capacity_type: Literal["on-demand", "spot"] = Field(
        "on-demand", description="Price basis of the nodes (spot = assumed 0.7 x on-demand).")
    ready_nodes: int = Field(1, ge=0, description="Nodes ready at t=0 (the warm floor).")
    max_nodes: int = Field(4, ge=0, description="Most nodes the pool may hold.")
    node_launch: Duration = Field(
        default_factory=lambda: LognormalSeconds(median_s=300.0, sigma=0.25),
        description=("Launch request -> GPUs allocatable for a fresh GPU node: 3-10 min unless "
                     "images and drivers are pre-baked (row A18); 5 min median."))
    empty_node_ttl_s: float = Field(float("inf"), ge=0, description=(
        "Remove a node empty this long (inf = never). Layer-1 providers model this fully."))

    @field_validator("instance_type")
    @classmethod
    def _known_instance_type(cls, name: str) -> str:
        return known_name(get_instance_type, name)

    @model_validator(mode="after")
    def _bounds(self) -> ClusterSettings:
        if self.ready_nodes > self.max_nodes:
            raise ValueError(f"ready_nodes ({self.ready_nodes}) > max_nodes ({self.max_nodes})")
        return self


class Slo(Strict):
    ttft_s: float = Field(2.0, gt=0, description=(
        "A request meets the SLO when its time to first token is at most this (MLPerf server "
        "limit: 2 s at p99)."))
    tpot_s: float = Field(0.2, gt=0, description=(
        "... and its mean time per output token is at most this (MLPerf: 200 ms)."))


class MetricsSettings(Strict):
    scrape_interval_s: float = Field(15.0, gt=0, description=(
        "Prometheus scrape interval; autoscalers see data this stale (15 s is a common default)."))
    evaluation_interval_s: float = Field(60.0, gt=0, description=(
        "Prometheus `evaluation_interval`: the tick of a rule group without its own interval "
        "and the step of a subquery without one (Prometheus default 1m)."))
    namespace: str = Field("default", description=(
        "Kubernetes namespace of the serving pods: the `namespace` label of their series."))
    served_model_name: str | None = Field(None, description=(
        "The engine's served model name (vLLM `--served-model-name`): the `model_name` label; "
        "None = the model's catalog name."))
    deployment: str | None = Field(None, description=(
        "Name of the serving Deployment (`deployment`/`job` labels, pod name prefix); None = "
        "the model name, lower case."))
    extra_labels: dict[str, dict[str, str]] = Field(default_factory=dict, description=(
        "Labels added to the series of a metric, by sample name (e.g. a `service` label the "
        "user's scrape configuration adds and their queries pin); the importer fills it."))
    rule_groups: tuple[RuleGroup, ...] = Field((), description=(
        "Recording rules (a PrometheusRule's `spec.groups`), evaluated at their group interval "
        "and stored as series that queries read (docs/promql.md)."))


class RoleSettings(Strict):
    """One pool of a disaggregated deployment."""

    tp: int | None = Field(None, ge=1, le=64, description="TP of this role; default model.tp.")
    initial_replicas: int = Field(1, ge=0, description="Ready replicas of this role at t=0.")


class Disaggregation(Strict):
    """Prefill/decode disaggregation: prefill replicas compute the prompt's KV cache and the
    first token, ship the KV to a decode replica, which generates the rest."""

    prefill: RoleSettings = Field(default_factory=RoleSettings, description="Prefill pool.")
    decode: RoleSettings = Field(default_factory=RoleSettings, description="Decode pool.")
    kv_transfer_gbps_per_gpu: float = Field(50.0, gt=0, description=(
        "KV transfer bandwidth per prefill GPU, GB/s: 50 GB/s per GPU per direction between "
        "H100/H200 nodes on 400G NDR (aiconfigurator [S1], hardware-and-models.md 1.2)."))


class ServingPodGroup(Strict):
    """The KAI PodGroup (`scheduling.run.ai/v2alpha2`) every serving pod joins.

    As the `pod-group-name` annotation puts a workload's pods into one user-written PodGroup;
    the `kai` scheduler gangs them (docs/scheduling.md), other schedulers ignore it."""

    name: str = Field(description="metadata.name of the PodGroup.")
    min_member: int = Field(1, ge=0, description=(
        "minMember: no serving pod is scheduled until this many exist and fit together; 0 = "
        "no gang (each pod alone), as KAI reads it."))
    queue: str = Field(DEFAULT_QUEUE, description="spec.queue: the KAI leaf queue.")
    priority: int = Field(0, description=(
        "The value of spec.priorityClassName (KAI: train 50, build-preemptible 75, build 100, "
        "inference 125; none = 0); also the pods' priority."))
    preemptible: bool | None = Field(None, description=(
        "spec.preemptibility; None = from the priority (< 100 preemptible)."))
    preemption_delay_s: float = Field(0.0, ge=0, description="spec.preemptionDelay.")
    staleness_grace_s: float = Field(DEFAULT_STALENESS_GRACE_S, description=(
        "spec.stalenessGracePeriod; KAI's 60 s default; negative = never evicted as stale."))

    def spec(self) -> PodGroupSpec:
        return PodGroupSpec(name=self.name, min_member=self.min_member, queue=self.queue,
                            priority=self.priority, preemptible=self.preemptible,
                            preemption_delay_s=self.preemption_delay_s,
                            staleness_grace_s=self.staleness_grace_s)


class Strategy(Strict):
    name: str = Field(description="Label in reports.")
    autoscaler: AutoscalerSpec | None = Field(None, description=(
        "Layer-3 policy, chosen by `kind`. With disaggregation: ONE autoscaler whose decision "
        "sets both pools and whose metrics span both (the single-HPA-over-both-roles setup)."))
    prefill: AutoscalerSpec | None = Field(None, description=(
        "Disaggregation only: the prefill pool's own autoscaler (with `decode`)."))
    decode: AutoscalerSpec | None = Field(None, description=(
        "Disaggregation only: the decode pool's own autoscaler (with `prefill`)."))
    nodes: NodeProviderSpec | None = Field(None, description=(
        "Layer 1 for this strategy only (overrides the scenario's `nodes`), to compare "
        "Karpenter settings or Karpenter vs Cluster Autoscaler on one workload."))
    scheduler: SchedulerSpec | None = Field(None, description=(
        "Layer 2 for this strategy only (overrides the scenario's `scheduler`)."))
    initial_replicas: int | None = Field(None, ge=0, description=(
        "Replicas ready at t=0 for this strategy only (aggregated serving); None = the "
        "scenario's. Lets each strategy of a comparison start from its own minimum, as it "
        "would run in a cluster, instead of all from one warm fleet."))
    ready_nodes: int | None = Field(None, ge=0, description=(
        "Nodes ready at t=0 for this strategy only; None = the scenario's cluster.ready_nodes."))

    @model_validator(mode="after")
    def _one_shape(self) -> Strategy:
        per_role = (self.prefill is not None, self.decode is not None)
        if self.autoscaler is not None and any(per_role):
            raise ValueError("give either `autoscaler` or `prefill` + `decode`, not both")
        if self.autoscaler is None and not all(per_role):
            raise ValueError("needs `autoscaler`, or both `prefill` and `decode`")
        return self


def _check_metric_names(node: object, where: str) -> None:
    """Every `metric` a scaler reads must be a series the simulated pods export (or, with
    `source: signal`, a fleet signal the engine publishes); HPA Resource metrics (cpu,
    memory) are not simulated for GPU pods."""
    if isinstance(node, dict):
        name = node.get("metric")
        # A PromQL-like query (`aggregation`/`source`) or an HPA metric spec (`type` + `target`);
        # other params named `metric` (KPA's concurrency|rps) are choices, not series.
        is_query = "aggregation" in node or ("type" in node and "target" in node)
        if isinstance(name, str) and is_query:
            known: tuple[str, ...] = FLEET_SIGNALS if node.get("source") == "signal" else POD_SERIES
            if name not in known and node.get("type") != "Resource":
                close = difflib.get_close_matches(name, known, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise ValueError(f"{where}: metric {name!r} is not a series the simulation "
                                 f"provides; {hint}known: {', '.join(known)}")
            if node.get("type") == "Resource":
                raise ValueError(f"{where}: Resource metric {name!r} (CPU/memory of the pod) "
                                 "is not simulated for GPU serving pods; scale on a vLLM "
                                 "series instead (see gpuscale audit rule GPU003)")
        for value in node.values():
            _check_metric_names(value, where)
    elif isinstance(node, (list, tuple)):
        for value in node:
            _check_metric_names(value, where)


class Scenario(Strict):
    """A cluster, a model deployment, a workload and the strategies to compare on it."""

    name: str = Field(description="Label in reports and the JSON summary.")
    description: str = Field("", description="Free text for people.")
    notes: tuple[str, ...] = Field((), description=(
        "Lines `compare` prints under its table: what the comparison shows and why (the demo "
        "explains its lesson this way)."))
    seed: int = Field(
        0, ge=0, description="Seeds every named random stream (numpy seeds are non-negative)."
    )
    start_time: AwareDatetime = Field(
        DEFAULT_START_TIME, description=(
            "Wall-clock time of simulated t=0 (RFC 3339 with an offset, e.g. "
            "2026-01-01T00:00:00Z): what time-of-day schedules (KEDA cron triggers) and "
            "exported sample timestamps read. A trace's arrival 0 is this instant."))
    duration_s: float = Field(gt=0, description="Arrivals stop after this; the run then drains.")
    drain_s: float = Field(
        600.0, ge=0, description="Extra time after duration_s for in-flight work."
    )
    model: ModelDeployment = Field(description="What is served and how it is split.")
    engine: EngineSettings = Field(default_factory=EngineSettings,
                                   description="vLLM engine arguments.")
    cold_start: ColdStart = Field(default_factory=ColdStart,
                                  description="Pod bound -> replica ready, by component.")
    cluster: ClusterSettings = Field(description="GPU nodes: warm floor and launchable ones.")
    workload: WorkloadSpec = Field(description="Arrivals and lengths, chosen by `kind`.")
    slo: Slo = Field(default_factory=Slo, description="Per-request latency targets.")
    metrics: MetricsSettings = Field(default_factory=MetricsSettings,
                                     description="Metrics pipeline settings.")
    initial_replicas: int = Field(1, ge=0, description="Replicas (ready) at t=0.")
    router: Literal["least_outstanding", "round_robin", "prefix_aware"] = Field(
        "least_outstanding", description=(
            "How requests pick a ready replica: `least_outstanding` (fewest waiting + "
            "running), `round_robin`, or `prefix_aware` (the best weighted score of cached "
            "prefix share, queue and free KV cache, as llm-d's inference scheduler scores "
            "endpoints; `prefix_aware_weights`; docs/serving.md)."))
    prefix_aware_weights: PrefixAwareWeights = Field(
        default_factory=PrefixAwareWeights, description=(
            "Scorer weights of `router: prefix_aware` (llm-d's defaults 3 / 2 / 2)."))
    request_timeout_s: float = Field(600.0, gt=0, description=(
        "A request with no first token after this long is dropped (the client gave up)."))
    pod_annotations: dict[str, str] = Field(default_factory=dict, description=(
        "Annotations on every replica pod, e.g. `karpenter.sh/do-not-disrupt: \"true\"`."))
    evicted_requests: Literal["retry", "fail"] = Field("retry", description=(
        "What happens to in-flight requests of an evicted replica: re-sent (progress lost) or "
        "failed."))
    nodes: NodeProviderSpec | None = Field(None, description=(
        "Layer 1: `karpenter`, `cluster_autoscaler` or `static` (docs/provisioning.md); None = "
        "the simple pool of `cluster` (warm floor + launch delay). With karpenter, "
        "`cluster.ready_nodes` nodes of `cluster.instance_type` exist at t=0 in the heaviest "
        "NodePool; with cluster_autoscaler the floor is each group's min_size. The replica's "
        "GPU (its performance) comes from `cluster.instance_type` in every case."))
    scheduler: SchedulerSpec | None = Field(None, description=(
        "Layer 2: `kube-scheduler` or `kai` (see docs/scheduling.md); None = first fit, "
        "oldest pod first (enough for replica-only studies)."))
    disaggregation: Disaggregation | None = Field(None, description=(
        "Split prefill and decode into separate pools (None = aggregated serving)."))
    pod_group: ServingPodGroup | None = Field(None, description=(
        "The KAI PodGroup of the serving pods (aggregated serving only); None = each pod its "
        "own group, as KAI's pod-grouper makes for a Deployment."))
    strategies: list[Strategy] = Field(min_length=1, description="Strategies to compare.")

    @model_validator(mode="after")
    def _known_metric_names(self) -> Scenario:
        # PromQL may read any series the simulated cluster exposes or a rule records.
        known = [*known_series(self.engine.kind),
                 *(r.record for g in self.metrics.rule_groups for r in g.rules)]
        for index, strategy in enumerate(self.strategies):
            for role in ("autoscaler", "prefill", "decode"):
                spec = getattr(strategy, role)
                if spec is not None:
                    _check_metric_names(spec.model_dump(), f"strategies[{index}].{role}")
                    for query in promql_queries(spec):
                        if (why := unknown_metric(query, known)) is not None:
                            raise ValueError(f"strategies[{index}].{role}: {why}")
        for group in self.metrics.rule_groups:
            for rule in group.rules:
                if (why := unknown_metric(rule.expr, known)) is not None:
                    raise ValueError(f"metrics.rule_groups ({group.name}): {why}")
        return self

    @model_validator(mode="after")
    def _cron_windows_open(self) -> Scenario:
        """A KEDA cron window that never opens while the traffic runs is a schedule meant for
        other hours (a trace's wall clock starts at start_time): refused, not run silently."""
        end = self.start_time + timedelta(seconds=self.duration_s)
        for index, strategy in enumerate(self.strategies):
            for role in ("autoscaler", "prefill", "decode"):
                spec = getattr(strategy, role)
                for j, trigger in enumerate(getattr(spec, "triggers", ()) or ()):
                    if getattr(trigger, "type", "") == "cron" and not opens_within(
                            trigger, self.start_time, end):
                        raise ValueError(
                            f"strategies[{index}].{role}.triggers[{j}]: cron window "
                            f"{trigger.start!r} - {trigger.end!r} ({trigger.timezone}) never "
                            f"opens between {self.start_time.isoformat()} and "
                            f"{end.isoformat()}, the traffic's wall-clock span (start_time + "
                            "duration_s); fix the schedule or start_time")
        return self

    @model_validator(mode="after")
    def _pod_group_aggregated(self) -> Scenario:
        if self.pod_group is not None and self.disaggregation is not None:
            raise ValueError("pod_group applies to aggregated serving; with disaggregation "
                             "each role would need its own PodGroup")
        return self

    @model_validator(mode="after")
    def _unique_names(self) -> Scenario:
        if self.disaggregation is None:
            split = [s.name for s in self.strategies if s.autoscaler is None]
            if split:
                raise ValueError(f"strategies {', '.join(split)} set prefill/decode autoscalers "
                                 "but the scenario has no `disaggregation`")
        if self.disaggregation is not None and any(
                s.initial_replicas is not None for s in self.strategies):
            raise ValueError("a strategy's initial_replicas applies to aggregated serving; with "
                             "disaggregation set disaggregation.<role>.initial_replicas")
        names = [s.name for s in self.strategies]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"strategy names must be unique; repeated: {', '.join(dupes)}")
        return self
