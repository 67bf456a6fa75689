"""The run summary as types: what `simulate`, `compare` and `demo` write, and how to read it.

Each block is built from the component that owns the numbers (requests and latency from
`metrics/summary.py`, replicas from the fleets, `nodes` from the node provider's own
`summary()` on top of the facts every provider shares, `scheduling` from the scheduler's,
the oracle from `metrics/oracle.py`). The JSON is this model dumped (`ResultFile.to_json`);
readers (report, sweep, plan) load it back with `load_result` and read fields, so a renamed
key fails loudly instead of reading as None. `docs/result.schema.json` is generated from it
(`tests/golden/regen.py` rewrites it); a test keeps it current and validates outputs with it.

Blocks a run may lack (`roles` without P/D, `scheduling` with the default first fit,
`oracle` with no requests, the `nodes` provider label with the default pool) are left out of
the JSON rather than written as null, as they always were.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_serializer

# Bumped when a key changes meaning or goes away (adding a key is not a bump).
RESULT_VERSION = 1


class _Block(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    omit_if_none: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _omit_absent(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        return {k: v for k, v in data.items() if not (v is None and k in self.omit_if_none)}


class Percentiles(_Block):
    """Seconds; None when no request had the quantity (e.g. nothing completed)."""

    p50: float | None
    p90: float | None
    p99: float | None


class RequestCounts(_Block):
    total: int
    completed: int
    dropped: int
    in_flight: int


class ReplicaStats(_Block):
    initial: int
    peak: int
    mean: float  # time-weighted ready replicas


class RoleStats(_Block):
    """One pool of a disaggregated (P/D) run."""

    peak: int
    mean: float
    scale_events: int


class WaitPercentiles(_Block):
    """Provisioning wait, seconds (the default pool reports no count and max)."""

    omit_if_none: ClassVar[frozenset[str]] = frozenset({"count", "max"})
    count: int | None = None
    p50: float | None
    p99: float | None
    max: float | None = None


class NodesSummary(_Block):
    """Facts every provider reports the same way, then the provider's own keys (extras)."""

    model_config = ConfigDict(frozen=True, extra="allow")
    omit_if_none: ClassVar[frozenset[str]] = frozenset({"provider", "provisioning_wait_s"})
    peak: int
    launched: int
    evictions: dict[str, int]
    requests_retried_after_eviction: int
    requests_failed_by_eviction: int
    provider: str | None = None  # the provider's kind; absent for the default pool
    provisioning_wait_s: WaitPercentiles | None = None


class OracleBasis(_Block):
    replica_sustained_rps: float  # metrics/oracle.py: sustained, at the TPOT SLO, own mix
    basis: str


class PrefixCacheSummary(_Block):
    """Automatic prefix caching over every replica of the run (serving/prefix_cache.py).

    `hit_rate` = hits_tokens / queries_tokens, the share of looked-up prompt tokens served
    from the cache; null when nothing was looked up: a trace without prompt block hashes, or
    `engine.enable_prefix_caching: false` (every prompt token is computed)."""

    hit_rate: float | None
    hits_tokens: int
    queries_tokens: int


class RunSummary(_Block):
    """One strategy's results (docs/metrics.md defines each key). Keys it does not know (the
    report's `series`) are ignored when loading; the engine checks it writes none."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    omit_if_none: ClassVar[frozenset[str]] = frozenset({"roles", "scheduling", "oracle",
                                                        "wall_s"})
    name: str
    requests: RequestCounts
    ttft_s: Percentiles
    tpot_s: Percentiles
    slo_attainment: float
    goodput_rps: float
    replicas: ReplicaStats
    roles: dict[str, RoleStats] | None = None
    scale_events: int
    slo_breach_minutes: float
    gpu_hours: float  # over the traffic's window [0, duration_s]
    cost_usd: float  # likewise
    # What the drain (after duration_s) billed, apart; the defaults read older result files.
    drain_gpu_hours: float = 0.0
    drain_cost_usd: float = 0.0
    idle_gpu_minutes: float
    nodes: NodesSummary
    # The scheduler's own summary (docs/scheduling.md), kept as it reports it.
    scheduling: dict[str, Any] | None = None
    drops_by_reason: dict[str, int]
    preemptions: int
    # Always written; the default reads result files from before the key existed.
    prefix_cache: PrefixCacheSummary = PrefixCacheSummary(hit_rate=None, hits_tokens=0,
                                                          queries_tokens=0)
    oracle_gpu_hours: float
    efficiency: float | None
    oracle: OracleBasis | None = None
    cold_start_s: dict[str, float]
    wall_s: float | None = None  # wall-clock seconds of the run (added by the CLI's clock)


class ResultFile(_Block):
    """The JSON file: {"version", "scenario", "seed", "runs": [...]}."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    version: int = RESULT_VERSION
    scenario: str
    seed: int
    runs: list[RunSummary]

    def to_json(self) -> dict[str, Any]:
        # Python mode: values stay what the components reported (json.dumps writes them).
        return self.model_dump()


def run_summary(fields: dict[str, Any]) -> RunSummary:
    """The typed summary from the blocks the components reported; a key the type does not
    declare is a bug in the engine, not something to drop."""
    unknown = set(fields) - set(RunSummary.model_fields)
    if unknown:
        raise AssertionError(f"run summary keys without a field: {sorted(unknown)}")
    return RunSummary.model_validate(fields)


def load_run(data: Any) -> RunSummary:
    """One run of a result JSON (parsed) as types; ValidationError (a ValueError) if it is not
    what gpuscale writes."""
    return RunSummary.model_validate(data)


def load_result(data: Any) -> ResultFile:
    """A result JSON (parsed) as types; a file without `version` is from before version 1.
    Raises pydantic's ValidationError (a ValueError) naming the field that does not fit."""
    return ResultFile.model_validate(data)


def result_schema() -> dict[str, Any]:
    return ResultFile.model_json_schema()

