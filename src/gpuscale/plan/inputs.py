"""The plan input: cluster topology, workloads (model, parallelism, traffic), tenants and SLOs.

A YAML file validated into frozen pydantic models; errors name the file and the field. Some
fields exist so a user can *ask* for something the planner refuses (scaling on GPU duty cycle,
`WhenEmptyOrUnderutilized`, no gang for a multi-pod model): the refusal is then written into the
plan with its reason instead of being silently ignored or obeyed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from gpuscale.catalog import get_instance_type, get_model
from gpuscale.catalog.specs import Precision, known_name
from gpuscale.errors import UserInputError
from gpuscale.scenario.load import input_kind, load_yaml, validate_mapping
from gpuscale.scenario.parallelism import ExpertParallelism
from gpuscale.units import DEFAULT_START_TIME, seconds_of_day_utc
from gpuscale.workloads.distributions import (
    DEFAULT_OUTPUT_TOKENS,
    DEFAULT_PROMPT_TOKENS,
    TokenDistribution,
)
from gpuscale.workloads.replay import TraceWorkload


class Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class NodeGroup(Strict):
    """Nodes that already exist and are not managed by the plan (a fixed node group)."""

    name: str
    instance_type: str = Field(description="Catalog instance type of every node in the group.")

    @field_validator("instance_type")
    @classmethod
    def _known(cls, name: str) -> str:
        return known_name(get_instance_type, name)
    nodes: int = Field(ge=0, description="Node count.")


class ReservedCapacity(Strict):
    instance_type: str = Field(description="Instance type the reservation holds.")

    @field_validator("instance_type")
    @classmethod
    def _known(cls, name: str) -> str:
        return known_name(get_instance_type, name)
    nodes: int = Field(ge=1, description="Reserved instances.")
    reservation_id: str | None = Field(None, description="EC2 capacity reservation id (cr-...); "
                                       "None = select reservations by the cluster discovery tag.")


class ClusterInput(Strict):
    name: str = Field("gpu-cluster", description="Cluster name; used for the Karpenter discovery "
                      "tag and the node IAM role name.")
    cloud: Literal["aws"] = Field("aws", description="Only AWS (Karpenter's EC2NodeClass) today.")
    regions: list[str] = Field(default_factory=lambda: ["us-east-1"])
    zones: list[str] = Field(default_factory=list, description="Allowed zones; empty = every zone "
                             "the instance types are offered in.")
    instance_types: list[str] = Field(
        default_factory=list,
        description="GPU instance types "
        "Karpenter may launch; empty = none (fixed node groups only).",
    )
    node_groups: list[NodeGroup] = Field(default_factory=list)
    nvlink_domain_gpus: int | None = Field(None, ge=1, description="GPUs per NVLink domain; None = "
                                           "the catalog's per instance type (8 on p5/p4).")
    nvlink_domain_label: str = Field("kubernetes.io/hostname", description="Node label whose value "
                                     "names one NVLink domain (hostname when a domain is a node; a "
                                     "rack label on multi-node NVLink systems).")
    topology_labels: list[str] = Field(default_factory=list, description="Node labels of network "
                                       "blocks/racks, coarse to fine (e.g. topology.k8s.aws/"
                                       "network-node-layer-1..3); hostname is appended.")
    reserved: list[ReservedCapacity] = Field(default_factory=list)
    max_gpus: int | None = Field(None, ge=1, description="Most GPUs the plan may buy in total.")
    node_ready_s: float = Field(300.0, gt=0, description="Launch request -> GPUs allocatable, s; "
                                "3-10 min unless images/drivers are pre-baked (calibration A18).")
    node_role: str | None = Field(None, description="IAM role of the nodes; default "
                                  "KarpenterNodeRole-<name>.")
    scale_up_tolerance: bool = Field(True, description="The cluster honours the HPA's "
                                     "per-direction behavior.scaleUp.tolerance (Kubernetes "
                                     ">= 1.34; 1.33 with the HPAConfigurableTolerance gate); "
                                     "false: a schedule's steps are rounded until they act "
                                     "under the default 0.1 tolerance.")
    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"] | None = (
        Field(
            None, description="Requested policy; WhenEmptyOrUnderutilized is refused for GPU pools."
        )
    )

    @field_validator("instance_types")
    @classmethod
    def _known(cls, names: list[str]) -> list[str]:
        return [known_name(get_instance_type, name) for name in names]

    @property
    def nodes_fixed(self) -> int:
        return sum(g.nodes for g in self.node_groups)


# A Kubernetes namespace / Service name: a DNS-1123 label (at most 63 characters), validated as
# the API server would. The name is pasted into PromQL label matchers and file names, so
# anything else (`prod"} or vector(1000)`) is refused here rather than escaped downstream.
DNS1123_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


class Tenant(Strict):
    name: str = Field(pattern=DNS1123_LABEL, max_length=63, description="Team; becomes a KAI "
                      "leaf queue and (by default) a namespace: a DNS-1123 label.")
    kind: Literal["inference", "training"] = "inference"
    priority: int = Field(100, description="KAI queue priority (default 100); production inference "
                          "should sit above training.")
    gpu_quota: int | None = Field(None, ge=0, description="Guaranteed GPUs; None = inference: its "
                                  "peak, training: 0.")
    gpu_limit: int = Field(-1, ge=-1, description="Cap on GPUs, -1 = none.")
    over_quota_weight: int = Field(1, ge=0, description="Share of idle GPUs beyond the quota.")


class TrafficShape(Strict):
    """Traffic as a shape: a mean, periodic bursts, a daily swing and token lengths."""

    kind: Literal["shape"] = "shape"
    mean_rate_per_s: float = Field(gt=0, description="Mean request rate over a day, req/s.")
    burst_factor: float = Field(1.0, ge=1, description="Rate during a burst / mean rate.")
    burst_duration_s: float = Field(300.0, gt=0, description="Length of one burst, s.")
    burst_period_s: float = Field(3600.0, gt=0, description="One burst every this many seconds.")
    diurnal_swing_frac: float = Field(0.0, ge=0, lt=1, description="Daily swing: trough = mean x "
                                      "(1 - swing), peak = mean x (1 + swing).")
    prompt_tokens: TokenDistribution = Field(DEFAULT_PROMPT_TOKENS, description="Prompt lengths.")
    output_tokens: TokenDistribution = Field(DEFAULT_OUTPUT_TOKENS, description="Output lengths.")

    @model_validator(mode="after")
    def _burst_fits(self) -> TrafficShape:
        if self.burst_duration_s >= self.burst_period_s:
            raise ValueError("burst_duration_s must be shorter than burst_period_s")
        if self.burst_factor * self.burst_duration_s > self.burst_period_s:
            raise ValueError(
                f"burst_factor x burst_duration_s ({self.burst_factor * self.burst_duration_s:g} s)"
                f" exceeds burst_period_s ({self.burst_period_s:g} s): the mean rate "
                "cannot hold with a non-negative base rate"
            )
        return self


Traffic = Annotated[TrafficShape | TraceWorkload, Field(discriminator="kind")]


class SloInput(Strict):
    ttft_p99_s: float = Field(
        2.0, gt=0, description="P99 time to first token, s (MLPerf server: 2 s)."
    )
    itl_p99_s: float = Field(0.2, gt=0, description="P99 inter-token latency, s (MLPerf: 200 ms).")
    goodput_frac: float = Field(0.99, gt=0, le=1, description="Share of requests that must meet "
                                "both latency SLOs.")


Signal = Literal["auto", "queue_depth", "kv_cache", "composite", "gpu_util", "gpu_memory"]


class WorkloadInput(Strict):
    name: str = Field(pattern=DNS1123_LABEL, max_length=63, description="DNS-1123 label "
                      "(at most 63 characters).")
    tenant: str = Field("default", pattern=DNS1123_LABEL, max_length=63,
                        description="Tenant (KAI queue) the workload runs in.")
    model: str = Field(description="Catalog model, e.g. Llama-3.3-70B.")
    precision: Precision = Precision.BF16
    tp: int | Literal["choose"] = Field("choose", description="Tensor-parallel size or 'choose'.")
    pp: int = Field(1, ge=1, le=16, description="Pipeline-parallel size.")
    ep: int | None = Field(None, ge=1, le=1024, description=(
        "Expert-parallel GPUs of a MoE model with a given tp (scenario model.ep); None = 1 "
        "with a given tp, chosen with tp: choose (experts over the replica's nodes when one "
        "node cannot hold the model)."))
    dp_attention: bool | None = Field(None, description=(
        "One attention rank per GPU (scenario model.dp_attention) with a given tp; None = "
        "off with a given tp, chosen with tp: choose."))
    traffic: Traffic

    @field_validator("model")
    @classmethod
    def _known(cls, name: str) -> str:
        return known_name(get_model, name)
    disaggregated: bool = Field(False, description="Separate prefill and decode workers.")
    critical: bool = Field(True, description="SLO-critical: never scaled to zero, on-demand only.")
    cold_start_s: float | None = Field(None, gt=0, description="Pod bound -> serving, s; None = "
                                       "estimate (image pull 120 s + weights at 1.05 GB/s + "
                                       "engine init 120 s, calibration A15-A17).")
    prepulled_image: Literal["choose", "always", "never"] = Field(
        "choose", description="A trace plan may pre-pull the serving image on the nodes' data "
        "volume (Bottlerocket, restored from an EBS snapshot you build): choose = simulate both "
        "and keep the cheaper, never = the image is pulled on each new node.")
    max_replicas: int | None = Field(None, ge=1, description="None = sized from the peak rate.")
    autoscaler: Literal["keda", "hpa"] = Field("keda", description="hpa renders an HPA + "
                                               "prometheus-adapter rules instead of KEDA.")
    scale_on: Signal = Field(
        "auto", description="Requested signal; gpu_util/gpu_memory are refused."
    )
    gang_scheduling: bool | None = Field(None, description="None = decide; false for a model "
                                         "spanning pods is refused.")
    image: str = Field("vllm/vllm-openai:v0.11.0", description="Serving image (vLLM).")
    slo: SloInput | None = Field(None, description="Per-workload SLO; None = the plan's.")
    check_traffic: TraceWorkload | None = Field(None, description="Another trace of the same "
                                                "service to check the plan on (held out): the "
                                                "plan is fitted on `traffic` and re-run here; "
                                                "None = hold out the end of `traffic`.")

    @model_validator(mode="after")
    def _check_with_trace(self) -> WorkloadInput:
        if self.check_traffic is not None and not isinstance(self.traffic, TraceWorkload):
            raise ValueError("check_traffic checks a plan fitted on a trace; `traffic` is a "
                             "shape (give a trace, or drop check_traffic)")
        return self

    @model_validator(mode="after")
    def _tp(self) -> WorkloadInput:
        if isinstance(self.tp, int) and not 1 <= self.tp <= 1024:
            raise ValueError("tp must be 1-1024 or 'choose'")
        if not isinstance(self.tp, int):
            if self.ep is not None or self.dp_attention is not None:
                raise ValueError("ep and dp_attention go with a given tp (an integer); with "
                                 "tp: choose the plan chooses them")
            return self
        par = ExpertParallelism(ep=self.ep or 1, dp_attention=bool(self.dp_attention))
        if error := par.parallelism_error(get_model(self.model), self.tp):
            raise ValueError(error)
        return self


class SimulationSettings(Strict):
    seed: int = Field(
        0, ge=0, description="Seed of the sizing simulations (non-negative, as numpy requires)."
    )
    max_candidates: int = Field(8, ge=1, le=32, description="Most warm-pool sizes simulated per "
                                "workload (each is one short run).")
    quiet_before_burst_s: float = Field(600.0, ge=0, description="Trough load before the burst, s.")
    after_burst_s: float = Field(900.0, ge=0, description="Trough load after the burst, s.")
    trace_window_s: float = Field(3600.0, gt=0, description="Length of the short "
                                  "representative windows of a trace (its busiest and quietest "
                                  "stretches, at most the schedule's 30-minute slot) on which "
                                  "the search prunes; the candidates that survive are "
                                  "simulated on the whole fit window.")
    check_s: float | None = Field(None, gt=0, description="Seconds at the end of a trace held "
                                  "out to check the plan on; None = the last day of a history "
                                  "of two days or more, else the last check_frac.")
    check_frac: float = Field(0.2, gt=0, lt=1, description="Share of a history shorter than two "
                              "days held out to check the plan on.")
    headroom_frac: float | None = Field(None, ge=0, le=1, description="A trace's plan is sized "
                                        "for this much more traffic than the fit window "
                                        "recorded (its fit runs replay the trace at load_scale "
                                        "1 + headroom_frac, on the same clock); the check and "
                                        "the replay run it as recorded. None = 0.1 for a "
                                        "history of a day or more (a plan for the days after "
                                        "it, whose busiest minutes fall elsewhere), 0 for a "
                                        "shorter one (a plan for the traffic given).")


class PlanInput(Strict):
    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    cluster: ClusterInput
    tenants: list[Tenant] = Field(default_factory=list, description="Empty = one inference "
                                  "tenant named 'default'.")
    workloads: list[WorkloadInput] = Field(default_factory=list)
    slo: SloInput = Field(default_factory=SloInput)
    simulation: SimulationSettings = Field(default_factory=SimulationSettings)
    start_time: AwareDatetime = Field(DEFAULT_START_TIME, description="Wall-clock time of a "
                                      "trace's first request (RFC 3339 with an offset): what "
                                      "the learned KEDA cron schedule is read against. Not "
                                      "given: the trace's own first request where the trace "
                                      "records wall-clock time (Azure, BurstGPT), else "
                                      "2026-01-01T00:00:00Z, so trace second N is N seconds "
                                      "past 00:00 UTC; plan.md says which.")

    @model_validator(mode="after")
    def _references(self) -> PlanInput:
        tenants = {t.name for t in self.all_tenants}
        for w in self.workloads:
            if w.tenant not in tenants:
                raise ValueError(f"workload {w.name}: unknown tenant {w.tenant!r}; known: "
                                 f"{', '.join(sorted(tenants))}")
        names = [w.name for w in self.workloads]
        if len(set(names)) != len(names):
            raise ValueError("workload names must be unique")
        return self

    @property
    def all_tenants(self) -> list[Tenant]:
        return self.tenants or [Tenant(name="default")]

    def tenant(self, name: str) -> Tenant:
        return next(t for t in self.all_tenants if t.name == name)

    def slo_of(self, workload: WorkloadInput) -> SloInput:
        return workload.slo or self.slo

    @property
    def day_offset_s(self) -> float:
        """Seconds past 00:00 UTC of a trace's first request."""
        return seconds_of_day_utc(self.start_time)


def plan_input_from_dict(data: Any, *, source: str = "<plan input>") -> PlanInput:
    return validate_mapping(PlanInput, data, source=source)


def load_plan_input(path: Path) -> PlanInput:
    data = load_yaml(path)
    if input_kind(data) == "scenario":
        # A scenario would otherwise fail on `cluster.instance_type`, which says nothing useful.
        key = "strategies" if "strategies" in data else "model"
        raise UserInputError(f"a serving scenario (it has `{key}`); run `gpuscale simulate` or "
                             "`gpuscale compare` on it; `gpuscale plan` takes a plan input "
                             "(docs/plan.md)", source=str(path), field=key)
    return plan_input_from_dict(data, source=str(path))
