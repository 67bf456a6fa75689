"""`resolved`: what one simulate/compare run actually simulated, stated from the Scenario.

Every run's JSON carries it (key names are part of the public output; checks depend on them):
`model.{name,tp,precision,kv_precision,ep,attention_dp,nodes_per_replica}` (EP degree,
DP attention ranks, nodes one replica spans: a LeaderWorkerSet group above 1),
`engine.{kind,batching,max_num_batched_tokens,max_prompt_tokens[,note]}`,
`gpu.{name,instance_type,calibrated,efficiency_source}`, `autoscaler.{kind,min_replicas,
max_replicas}`, `nodes.{kind,consolidation_policy}`, `scheduler.kind`, `catalog` (which entries
came from a user catalog), `start_time.{value,source}` (the wall clock of t = 0: the
scenario's `start_time`, the trace's first request, or the default; scenario/clock.py).
The table shows the same in one line per run (`resolved_line`).
"""

from __future__ import annotations

from gpuscale.catalog import get_instance_type
from gpuscale.catalog.specs import user_entry_names
from gpuscale.catalog.user import gpu_has_calibration_points
from gpuscale.provisioning.karpenter.nodepool import order_by_weight
from gpuscale.scenario.clock import DEFAULT
from gpuscale.scenario.models import Scenario, Strategy
from gpuscale.sim.replica_setup import engine_config, engine_resolved, replica_hardware

# Replica floor/ceiling field of each autoscaler kind (KPA's max_scale 0 means unbounded).
_BOUNDS = {"hpa": ("min_replicas", "max_replicas"),
           "keda": ("min_replica_count", "max_replica_count"),
           "kpa": ("min_scale", "max_scale"),
           "fixed": ("replicas", "replicas"),
           "sla_planner": ("min_endpoint", None)}


def _autoscaler(spec) -> dict:
    if spec is None:
        return {"kind": None, "min_replicas": None, "max_replicas": None}
    low, high = _BOUNDS.get(spec.kind, (None, None))
    top = getattr(spec, high) if high else None
    return {"kind": spec.kind, "min_replicas": getattr(spec, low) if low else None,
            "max_replicas": None if (spec.kind == "kpa" and top == 0) else top}


def _nodes(scenario: Scenario, strategy: Strategy) -> dict:
    spec = strategy.nodes or scenario.nodes
    if spec is None:
        return {"kind": "pool", "consolidation_policy": None,
                "max_nodes": scenario.cluster.max_nodes}
    out: dict = {"kind": spec.kind, "consolidation_policy": None}
    if spec.kind == "karpenter":
        pools = order_by_weight(list(spec.node_pools))
        # The pool tried first decides for the serving pods; others are listed beside it.
        out["consolidation_policy"] = pools[0].disruption.consolidation_policy
        out["consolidate_after"] = pools[0].disruption.consolidate_after
        out["node_pools"] = {p.name: p.disruption.consolidation_policy for p in pools}
    return out


def resolved_for(scenario: Scenario, strategy: Strategy, clock_source: str = DEFAULT) -> dict:
    itype = get_instance_type(scenario.cluster.instance_type)
    gpu = itype.gpu_spec
    if strategy.autoscaler is not None:
        autoscaler = _autoscaler(strategy.autoscaler)
    else:  # disaggregated, one autoscaler per role
        autoscaler = {"kind": "per-role", "min_replicas": None, "max_replicas": None,
                      "prefill": _autoscaler(strategy.prefill),
                      "decode": _autoscaler(strategy.decode)}
    scheduler = strategy.scheduler or scenario.scheduler
    model = scenario.model
    user = {"models": user_entry_names("models"), "gpus": user_entry_names("gpus"),
            "instance_types": user_entry_names("instance_types")}
    hw = replica_hardware(scenario)
    return {
        "model": {"name": model.name, "tp": model.tp, "precision": model.precision.value,
                  "kv_precision": hw.kv_precision.value, "ep": model.ep,
                  "attention_dp": hw.layout.attention_dp,
                  "nodes_per_replica": hw.layout.nodes},
        "engine": engine_resolved(scenario, hw, engine_config(scenario, hw)),
        "gpu": {"name": gpu.name, "instance_type": itype.name,
                "calibrated": gpu_has_calibration_points(gpu.name),
                "efficiency_source": gpu.efficiency_source},
        "autoscaler": autoscaler,
        "nodes": _nodes(scenario, strategy),
        "scheduler": {"kind": scheduler.kind if scheduler is not None else "first-fit"},
        "catalog": {"model": "user" if model.name in user["models"] else "built-in",
                    "gpu": "user" if gpu.name in user["gpus"] else "built-in",
                    "instance_type": "user" if itype.name in user["instance_types"]
                    else "built-in"},
        "start_time": {"value": scenario.start_time.isoformat(), "source": clock_source},
    }


def attach_resolved(data: dict, scenario: Scenario, clock_source: str = DEFAULT) -> dict:
    """Add `resolved` to each run of a result JSON (runs are named by strategy); `scenario`
    as it ran (`ScenarioResult.scenario`, on its trace's clock when it took one)."""
    by_name = {s.name: s for s in scenario.strategies}
    for run in data.get("runs", []):
        strategy = by_name.get(run.get("name"))
        if strategy is not None:
            run["resolved"] = resolved_for(scenario, strategy, clock_source)
    return data


def resolved_line(run: dict) -> str:
    """One line for the table: what this run simulated."""
    r = run["resolved"]
    m, g, a, n = r["model"], r["gpu"], r["autoscaler"], r["nodes"]
    bounds = "" if a["min_replicas"] is None else f" {a['min_replicas']}..{a['max_replicas']}"
    policy = f" {n['consolidation_policy']}" if n["consolidation_policy"] else ""
    calib = "" if g["calibrated"] else ", NO calibration points: efficiency assumed"
    layout = (f" ep={m['ep']}" if m.get("ep", 1) > 1 else "") + (
        f" dp-attention={m['attention_dp']}" if m.get("attention_dp", 1) > 1 else "") + (
        f", {m['nodes_per_replica']} nodes/replica (LeaderWorkerSet)"
        if m.get("nodes_per_replica", 1) > 1 else "")
    clock = r.get("start_time", {})
    # the wall clock only when it is not the default (the trace's, or one the user gave)
    start = "" if clock.get("source", DEFAULT) == DEFAULT else \
        f" | starts {clock['value']} ({clock['source']})"
    return (f"{run['name']}: {m['name']} tp={m['tp']}{layout} {m['precision']} on "
            f"{g['instance_type']} ({g['name']}{calib}) | autoscaler {a['kind']}{bounds} | "
            f"nodes {n['kind']}{policy} | scheduler {r['scheduler']['kind']}{start}")


def resolved_text(run: dict, width: int = 100) -> str:
    """`resolved_line` as printed under the table: prefixed `resolved`, control characters
    escaped, wrapped at `width` columns between its ` | ` parts, so each part (the GPU, the
    autoscaler, the clock) stays on one line (a run on a user's GPU reached ~170 columns); a
    part longer than the width alone is wrapped at its spaces."""
    import textwrap

    from gpuscale.outputs import terminal_safe

    def wrapped(text: str) -> list[str]:
        return textwrap.wrap(text, width, subsequent_indent="  ", break_on_hyphens=False,
                             break_long_words=False)

    first, *rest = f"resolved {terminal_safe(resolved_line(run))}".split(" | ")
    lines = wrapped(first)
    for part in rest:
        if len(lines[-1]) + len(" | ") + len(part) <= width:
            lines[-1] += " | " + part
        else:
            lines.extend(wrapped("  | " + part))
    return "\n".join(lines)
