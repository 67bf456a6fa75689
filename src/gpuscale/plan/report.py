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
    return (
        "-" if value is None else f"{value:.{digits}f}" if isinstance(value, float) else str(value)
    )


_EVIDENCE_HEAD = ["| candidate | min replicas | P99 TTFT s | P99 TPOT s | SLO attainment | dropped "
                  "| GPU-hours | oracle GPU-hours | meets SLO | why |",
                  "|---|---|---|---|---|---|---|---|---|---|"]


def _rows(rows) -> list[str]:
    return [
        f"| {_cell(r.config or '-')} | {r.min_replicas} | {_fmt(r.ttft_p99_s)} | "
        f"{_fmt(r.itl_p99_s)} | {_fmt(r.slo_attainment)} | {r.dropped} | {_fmt(r.gpu_hours, 2)} | "
        f"{_fmt(r.oracle_gpu_hours, 2)} | {'yes' if r.meets_slo else 'no'} | "
        f"{_cell(r.why or '-')} |"
        for r in rows
    ]


def _evidence(plan: Plan) -> list[str]:
    """Every simulated candidate with why it lost, then the winner's re-checks. Roles of one
    workload share one table; each role line says its own floor."""
    out = ["## Warm-pool evidence", ""]
    shown = set()
    for name, pool in sorted(plan.warm_pools.items()):
        out.append(f"**{name}**: min replicas {pool.min_replicas} ({pool.method}).")
        if pool.evidence and pool.evidence not in shown:
            shown.add(pool.evidence)
            out += [""] + _EVIDENCE_HEAD + _rows(pool.evidence)
            if pool.recheck:
                out += ["", "Re-checks of the winner (the worst is the one to expect):", ""]
                out += _EVIDENCE_HEAD + _rows(pool.recheck)
        out.append("")
    if any(r.role in ("prefill", "decode") for r in plan.roles):
        simulated = any(p.simulated for n, p in plan.warm_pools.items())
        out += [("Disaggregated roles: the floor found by the aggregated search was split by "
                 "each phase's share of a replica's time, then simulated as a disaggregated "
                 "deployment (the `prefill N + decode M` rows above); each role's line gives "
                 "its own floor." if simulated else
                 "Disaggregated roles: the analytic floor split by each phase's share of a "
                 "replica's time; not simulated (--no-simulate)."), ""]
    return out


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _replay(plan: Plan, commands: dict[str, str]) -> list[str]:
    """The replay scenario's runs, the numbers `gpuscale compare DIR/scenarios/W.yaml` gives
    (`commands`: that line with what it needs, per workload)."""
    out: list[str] = []
    for name, pool in sorted(plan.warm_pools.items()):
        if not pool.replay:
            continue
        command = commands.get(name, f"gpuscale compare DIR/scenarios/{name}.yaml")
        out += [f"## Replay of {name} ({pool.replay_window})", "",
                f"`{command}` re-runs these strategies, each "
                "starting from its own minimum (the plan from its manifests as applied, its "
                "Deployment at the floor and the cron windows lifting it as the clock says; "
                "the baseline from 1 replica; the always-on fleet at its size):", "",
                "| strategy | SLO attainment | P99 TTFT s | GPU-hours | USD | drain GPU-hours "
                "(apart) | meets SLO |", "|---|---|---|---|---|---|---|"]
        out += [f"| {_cell(r.config)} | {_pct(r.slo_attainment)} | {_fmt(r.ttft_p99_s, 2)} | "
                f"{_fmt(r.gpu_hours, 1)} | {_fmt(r.cost_usd, 2)} | {_fmt(r.drain_gpu_hours, 1)} "
                f"| {'yes' if r.meets_slo else 'no'} |" for r in pool.replay]
        out.append("")
    return out


def render_plan_md(plan: Plan, files: list[str], replay_commands: dict[str, str] | None = None
                   ) -> str:
    out = [f"# Autoscaling plan: {plan.name}", ""]
    if plan.refusals:
        out += ["## Refused requests", "", "| requested | instead | why |", "|---|---|---|"]
        out += [
            f"| {_cell(r.requested)} | {_cell(r.instead)} | {_cell(r.reason)} |"
            for r in plan.refusals
        ]
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
    out += _replay(plan, replay_commands or {})
    out += _evidence(plan)
    out += ["## Expected SLO attainment, GPU-hours and cost per day", "",
            "| workload | SLO attainment (simulation) | worst re-check | GPU-hours/day | USD/day "
            "| oracle GPU-hours/day | efficiency vs oracle | efficiency in the simulation |",
            "|---|---|---|---|---|---|---|---|"]
    for name, c in sorted(plan.costs.items()):
        out.append(f"| {name} | {_fmt(c.slo_attainment)} | {_fmt(c.worst_slo_attainment)} "
                   f"| {c.gpu_hours_per_day:.1f} | {c.cost_usd_per_day:.2f} "
                   f"| {_fmt(c.oracle_gpu_hours_per_day, 1)} | {_fmt(c.efficiency_frac)} "
                   f"| {_fmt(c.simulated_efficiency_frac)} |")
    simulated = [n for n, c in sorted(plan.costs.items()) if c.simulated_per_day]
    out += [
        "",
        (f"GPU-hours/day of {', '.join(simulated)}: simulated, the plan's GPU-hours in the "
         "replay below (the traffic as recorded) over its length, times 24 h (traffic's "
         "window only; the drain is apart); SLO attainment: the held-out check window. "
         if simulated else "")
        + "Otherwise GPU-hours/day: the mean-rate fleet (never below the warm pool) in whole "
        "on-demand nodes for 24 h. Oracle: the one `simulate` reports (metrics/oracle.py): "
        "whole nodes that "
        "appear the moment they are needed, at a replica's sustained throughput at the TPOT SLO "
        "on this workload's length mix; efficiency in the simulation is that oracle over the "
        "chosen candidate's simulated GPU-hours.",
        "",
        "## Manifests",
        "",
    ] + [f"- `manifests/{f}`" for f in files]
    prepulled = any(r.prepulled_image for r in plan.roles)
    out += [
        "",
        "Placeholders to check before applying: the node IAM role, the discovery tag on subnets "
        "and security groups, the model path in `--model`, the serving image tag (with vLLM's "
        "`runai` extra, for `--load-format runai_streamer`)"
        + ("; the EC2NodeClass's `snapshotID`: an EBS snapshot of a Bottlerocket data volume "
           "holding the serving image (e.g. built with aws-samples/bottlerocket-images-cache)"
           if prepulled else "") + ".",
        "",
    ]
    return "\n".join(out)
