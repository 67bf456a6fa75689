"""The plan as data: decisions with reasons, refusals, per-role sizing and the evidence.

Frozen dataclasses; `plan_to_json` is what `gpuscale plan --format json` prints and what the
manifest renderers read. Nothing here renders YAML or Markdown.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class Decision:
    layer: str  # "nodes", "scheduling", "replicas", "warm-pool", "monitoring", "overall"
    subject: str  # what the decision is about, e.g. "NodePool gpu-serving: consolidation"
    choice: str
    reason: str


@dataclass(frozen=True)
class Refusal:
    requested: str
    instead: str
    reason: str
    hard: bool = False  # True: the plan stops here (no manifests for this part)


@dataclass(frozen=True)
class EvidenceRow:
    """One simulated candidate warm pool (min replicas) of one workload."""

    min_replicas: int
    ttft_p99_s: float | None
    itl_p99_s: float | None
    slo_attainment: float
    dropped: int
    gpu_hours: float
    meets_slo: bool
    oracle_gpu_hours: float | None = None  # metrics/oracle.py, the bound simulate reports
    config: str = ""  # hardware and scaler of the candidate, e.g. "p5.48xlarge TP2, queue 7"
    why: str = ""  # why it won or lost
    cost_usd: float | None = None  # the run's cost over the traffic's window
    drain_gpu_hours: float | None = None  # billed after the traffic's window, apart


@dataclass(frozen=True)
class WarmPool:
    min_replicas: int
    simulated: bool
    method: str  # how the number was found, one line
    evidence: tuple[EvidenceRow, ...] = ()
    analytic_estimate: int = 1
    recheck: tuple[EvidenceRow, ...] = ()  # the winner on other seeds / shifted windows
    # The replay scenario's runs (plan, baseline-queue-depth, fixed-best), as
    # `gpuscale compare DIR/scenarios/W.yaml` shows them; empty when not simulated so.
    replay: tuple[EvidenceRow, ...] = ()
    replay_window: str = ""  # which traffic the replay holds


@dataclass(frozen=True)
class CronWindow:
    """Scheduled capacity: a KEDA `cron` trigger asking for `desired_replicas` from `start` to
    `end` (5-field cron, read in `timezone`), learned from the history's daily profile."""

    start: str
    end: str
    desired_replicas: int
    timezone: str = "Etc/UTC"

    def trigger(self) -> dict:
        """The scenario's KEDA trigger (autoscaling/keda_cron.py)."""
        return {"type": "cron", "timezone": self.timezone, "start": self.start, "end": self.end,
                "desired_replicas": self.desired_replicas}


@dataclass(frozen=True)
class Role:
    """One scaled unit: a whole model (role "serve") or one side of a P/D split."""

    workload: str
    role: str  # "serve", "prefill" or "decode"
    name: str  # Kubernetes object name
    namespace: str
    tenant: str
    model: str
    precision: str
    instance_type: str
    tp: int
    pp: int
    gpus_per_pod: int
    pods_per_replica: int
    gang: bool
    min_replicas: int
    max_replicas: int
    signal: str  # "queue_depth", "kv_cache" or "composite"
    queue_threshold: float
    kv_threshold: float
    cold_start_s: float
    scale_down_window_s: int
    polling_interval_s: int
    autoscaler: str  # "keda" or "hpa"
    image: str
    critical: bool
    capacity_rps: float  # requests/s one replica serves at the target load
    topology_required: str | None = None
    topology_preferred: str | None = None
    schedule: tuple[CronWindow, ...] = ()  # KEDA cron triggers beside the reactive ones

    @property
    def gpus_per_replica(self) -> int:
        return self.gpus_per_pod * self.pods_per_replica


@dataclass(frozen=True)
class NodePoolPlan:
    name: str
    instance_types: tuple[str, ...]
    capacity_types: tuple[str, ...]
    zones: tuple[str, ...]
    gpu_limit: int
    consolidate_after_s: int
    budget_nodes: str
    weight: int | None = None


@dataclass(frozen=True)
class QueuePlan:
    name: str
    parent: str | None
    priority: int
    gpu_quota: float
    gpu_limit: float
    over_quota_weight: int
    kind: str  # "parent", "inference", "training"


@dataclass(frozen=True)
class CostEstimate:
    gpu_hours_per_day: float
    cost_usd_per_day: float
    oracle_gpu_hours_per_day: float | None  # capacity that follows demand exactly, no warm pool
    efficiency_frac: float | None  # oracle / plan
    slo_attainment: float | None  # from the warm-pool simulation of the chosen size
    worst_slo_attainment: float | None = None  # the winner re-run on other seeds / windows
    simulated_efficiency_frac: float | None = None  # oracle / GPU-hours of the chosen run
    simulated_per_day: bool = False  # True: GPU-hours/day are simulated runs, not a mean fleet


@dataclass(frozen=True)
class Plan:
    name: str
    cluster_name: str
    decisions: tuple[Decision, ...]
    refusals: tuple[Refusal, ...]
    roles: tuple[Role, ...] = ()
    nodepools: tuple[NodePoolPlan, ...] = ()
    queues: tuple[QueuePlan, ...] = ()
    warm_pools: dict[str, WarmPool] = field(default_factory=dict)  # role name -> sizing
    costs: dict[str, CostEstimate] = field(default_factory=dict)  # workload -> estimate
    topology_levels: tuple[str, ...] = ()
    node_role: str = ""
    reserved_ids: tuple[str, ...] = ()
    ttft_slo_s: dict[str, float] = field(default_factory=dict)  # workload -> P99 TTFT SLO
    goodput_frac: dict[str, float] = field(default_factory=dict)  # workload -> SLO share
    managed_endpoint_advice: str | None = None
    scenarios: dict[str, dict] = field(default_factory=dict)  # workload -> replay scenario
    # One line per workload whose SLO no fleet up to the GPU limit meets (simulated): the
    # plan is still written (what is reachable, what would reach it) and the CLI exits 2.
    unmet_slo: tuple[str, ...] = ()

    @property
    def has_manifests(self) -> bool:
        return self.managed_endpoint_advice is None


def plan_to_json(plan: Plan) -> dict:
    """Plain data, stable key order (dataclass field order)."""
    data = asdict(plan)
    data["warm_pools"] = {k: asdict(v) for k, v in sorted(plan.warm_pools.items())}
    data["costs"] = {k: asdict(v) for k, v in sorted(plan.costs.items())}
    return data
