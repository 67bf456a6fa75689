"""`plan.md`: one page a reviewer reads before applying the manifests (pure text)."""

from __future__ import annotations

import math

from gpuscale.plan.model import Plan

LAYER_TITLES = (("overall", "Overall"), ("nodes", "Layer 1: nodes (Karpenter)"),
                ("scheduling", "Layer 2: scheduling (KAI)"), ("replicas", "Layer 3: replicas"),
                ("warm-pool", "Warm pool"), ("monitoring", "Monitoring and kill switch"))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _fmt(value, digits: int = 3) -> str:
    if isinstance(value, float) and math.isinf(value):
        return "timeout"  # a P99 among requests that never got a first token (metrics/summary.py)
    return "-" if value is None else f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def render_plan_md(plan: Plan, files: list[str]) -> str:
    out = [f"# Autoscaling plan: {plan.name}", ""]
    if plan.refusals:
        out += ["## Refused requests", "", "| requested | instead | why |", "|---|---|---|"]
        out += [f"| {_cell(r.requested)} | {_cell(r.instead)} | {_cell(r.reason)} |" for r in plan.refusals]
        out.append("")
    if plan.managed_endpoint_advice:
        out += ["## Advice", "", plan.managed_endpoint_advice, "", "No manifests were written.", ""]
        return "\n".join(out)
    for layer, title in LAYER_TITLES:
        rows = [d for d in plan.decisions if d.layer == layer]
        if not rows:
            continue
        out += [f"## {title}", "", "| subject | decision | reason |", "|---|---|---|"]
        out += [f"| {_cell(d.subject)} | {_cell(d.choice)} | {_cell(d.reason)} |" for d in rows]
        out.append("")
    out += ["## Warm-pool evidence", ""]
    shown = set()
    for name, pool in sorted(plan.warm_pools.items()):
        out.append(f"**{name}**: min replicas {pool.min_replicas} ({pool.method}).")
        if pool.evidence and pool.evidence not in shown:
            shown.add(pool.evidence)
            out += ["", "| min replicas | P99 TTFT s | P99 TPOT s | SLO attainment | dropped | GPU-hours | meets P99 TTFT |",
                    "|---|---|---|---|---|---|---|"]
            out += [f"| {r.min_replicas} | {_fmt(r.ttft_p99_s)} | {_fmt(r.itl_p99_s)} | {_fmt(r.slo_attainment)} "
                    f"| {r.dropped} | {_fmt(r.gpu_hours, 2)} | {'yes' if r.meets_slo else 'no'} |" for r in pool.evidence]
        out.append("")
    if any(r.role in ("prefill", "decode") for r in plan.roles):
        out += ["Disaggregated roles were sized with the aggregated simulation (one engine doing both "
                "phases) and the floor split by each phase's share of a replica's time: an approximation "
                "until the simulator models the P/D split.", ""]
    out += ["## Expected SLO attainment, GPU-hours and cost per day", "",
            "| workload | SLO attainment (burst simulation) | GPU-hours/day | USD/day | oracle GPU-hours/day | efficiency vs oracle |",
            "|---|---|---|---|---|---|"]
    for name, c in sorted(plan.costs.items()):
        out.append(f"| {name} | {_fmt(c.slo_attainment)} | {c.gpu_hours_per_day:.1f} | {c.cost_usd_per_day:.2f} "
                   f"| {_fmt(c.oracle_gpu_hours_per_day, 1)} | {_fmt(c.efficiency_frac)} |")
    out += ["", "GPU-hours/day: the mean-rate fleet (never below the warm pool) in whole on-demand nodes for "
            "24 h. Oracle: capacity that follows demand exactly at 70 % load, fractional GPUs, no warm pool.",
            "", "## Manifests", ""] + [f"- `manifests/{f}`" for f in files]
    out += ["", "Placeholders to check before applying: the node IAM role, the discovery tag on subnets and "
            "security groups, the model path in `--model`, the serving image tag.", ""]
    return "\n".join(out)
