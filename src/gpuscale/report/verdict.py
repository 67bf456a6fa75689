"""The line `compare` ends with: which strategy to run, or why none will do.

A strategy meets the SLO when its attainment (requests within the TTFT and TPOT limits, over
all that arrived) is at least the target, 99 % by default (metrics/oracle.py
SLO_ATTAINMENT_TARGET). Over several seeds it must meet it on every seed, and costs compare by
their mean: a strategy that passes on average but fails one draw in three is not a pick.
When none meets it, the reason is read from the best run's own numbers; it is a reading of the
summary, not a proof, and says so ("likely").
"""

from __future__ import annotations

import math


def _pct(frac: float) -> str:
    return f"{100 * frac:.1f} %"


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def spread(results: list[dict]) -> list[dict]:
    """Per strategy, over the results of several seeds (same strategies in each): the
    attainment and cost min/mean/max and the worst TTFT p99 (None = timeout)."""
    out = []
    for index, run in enumerate(results[0]["runs"]):
        runs = [r["runs"][index] for r in results]
        slo = [r["slo_attainment"] for r in runs]
        cost = [r["cost_usd"] for r in runs]
        p99 = [r["ttft_s"]["p99"] for r in runs]
        worst = None if any(v is None or math.isinf(v) for v in p99) else max(p99)
        out.append({"name": run["name"],
                    "slo_attainment": {"min": min(slo), "mean": round(_mean(slo), 6),
                                       "max": max(slo)},
                    "cost_usd": {"min": min(cost), "mean": round(_mean(cost), 4),
                                 "max": max(cost)},
                    "ttft_p99_worst_s": worst})
    return out


def _why_short(run: dict, slo: dict) -> str:
    """The likeliest reason the best run misses the SLO, from its summary."""
    reasons = []
    tpot = run["tpot_s"]["p99"]
    if tpot is not None and tpot > slo["tpot_s"]:
        reasons.append(f"its TPOT p99 is {tpot:.3f} s against {slo['tpot_s']:g} s, so decode "
                       f"itself is too slow on this hardware at the batch it runs")
    req = run["requests"]
    if req["dropped"]:
        causes = ", ".join(f"{k} {v}" for k, v in (run.get("drops_by_reason") or {}).items())
        reasons.append(f"it drops {req['dropped']} of {req['total']} requests"
                       + (f" ({causes})" if causes else ""))
    ttft = run["ttft_s"]["p99"]
    if not reasons and (ttft is None or math.isinf(ttft) or ttft > slo["ttft_s"]):
        shown = "timeout" if ttft is None or math.isinf(ttft) else f"{ttft:.2f} s"
        reasons.append(f"its TTFT p99 is {shown} against {slo['ttft_s']:g} s at a peak of "
                       f"{run['replicas']['peak']} replicas: capacity comes too late or is "
                       f"capped")
    return "; ".join(reasons) or "requests miss the TTFT or TPOT limit"


def verdict(results: list[dict], slo: dict, target_frac: float) -> str:
    """One line: the cheapest strategy that meets the SLO on every seed and what it saves
    against the next cheapest that also does; or that none can, how close the best comes
    and why. `results` are result JSONs of one scenario, one per seed."""
    rows = spread(results)
    seeds = f" on all {len(results)} seeds" if len(results) > 1 else ""
    meeting = sorted((r for r in rows if r["slo_attainment"]["min"] >= target_frac),
                     key=lambda r: (r["cost_usd"]["mean"], r["name"]))
    if meeting:
        best = meeting[0]
        line = (f"verdict: {best['name']} meets the {_pct(target_frac)} SLO{seeds} "
                f"({_pct(best['slo_attainment']['min'])}) at ${best['cost_usd']['mean']:.2f}")
        if len(meeting) > 1:
            other = meeting[1]
            saved = other["cost_usd"]["mean"] - best["cost_usd"]["mean"]
            share = saved / other["cost_usd"]["mean"] if other["cost_usd"]["mean"] else 0.0
            if saved < 0.005:
                line += f", the same cost as {other['name']}, which meets it too"
            else:
                line += (f", ${saved:.2f} ({100 * share:.0f} %) below {other['name']}, the "
                         f"next cheapest that meets it")
        else:
            line += ", the only strategy that meets it"
        return line
    best_index = max(range(len(rows)), key=lambda i: (rows[i]["slo_attainment"]["min"],
                                                      -rows[i]["cost_usd"]["mean"]))
    best = rows[best_index]
    run = results[0]["runs"][best_index]
    return (f"verdict: no strategy meets the {_pct(target_frac)} SLO{seeds}; the best, "
            f"{best['name']}, reaches {_pct(best['slo_attainment']['min'])}: likely because "
            f"{_why_short(run, slo)}")


def failing_gate(results: list[dict], threshold_frac: float) -> str | None:
    """`--fail-under-slo`: a message when no strategy reaches the threshold on every seed."""
    rows = spread(results)
    if any(r["slo_attainment"]["min"] >= threshold_frac for r in rows):
        return None
    best = max(r["slo_attainment"]["min"] for r in rows)
    return (f"no strategy reaches the --fail-under-slo {_pct(threshold_frac)} (best "
            f"{_pct(best)})")
