"""When no fleet up to the GPU limit meets the SLO: what is reachable, and what would reach it.

On the history's busiest stretch (the short window the search prunes on), every figure here is
simulated:
- the reachable attainment: the best any always-on fleet up to the GPU limit reached;
- the cheapest always-on fleet within 0.1 point of it (more replicas buy nothing past it);
- the changes that would reach the SLO, each on the reachable fleet's GPUs: FP8 weights and KV
  cache, twice the tensor parallelism, each other GPU the input allows, and the SLO the
  reachable fleet meets (its own P99 TTFT and TPOT, simulated again under that SLO).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, replace

from gpuscale.catalog import get_instance_type, get_model
from gpuscale.plan.history import Window
from gpuscale.plan.model import EvidenceRow
from gpuscale.plan.search import search_min_replicas

CLOSE_FRAC = 0.001  # "within 0.1 point" of the reachable attainment


@dataclass(frozen=True)
class Unreachable:
    reachable: EvidenceRow  # the best attainment reached
    cheapest_close: EvidenceRow  # the fewest replicas within 0.1 point of it
    changes: tuple[EvidenceRow, ...]  # each change's run; `config` says what changed
    line: str  # one line for the terminal and the exit code 2


def _fixed_data(s, window: Window, n: int) -> dict:
    return s.scenario(window, s.fixed(n), n)


def _alternatives(s, window: Window, n: int) -> list[tuple[str, dict]]:
    """(what changes, scenario) at the reachable fleet's GPUs."""
    out: list[tuple[str, dict]] = []
    base = _fixed_data(s, window, n)
    model = get_model(s.w.model)
    if s.w.precision.value != "fp8":
        data = copy.deepcopy(base)
        data["model"]["precision"] = "fp8"
        out.append(("FP8 weights and KV cache", data))
    tp, per_node = s.setup.tp, s.opt.it.num_gpus
    if 2 * tp <= per_node and not model.tp_error(2 * tp) and n >= 2:
        data = copy.deepcopy(base)
        half = max(1, n // 2)
        data["model"]["tp"] = 2 * tp
        data["strategies"] = [s.fixed(half)]
        data["cluster"]["ready_nodes"] = math.ceil(half * 2 * tp / per_node)
        data["strategies"][0]["ready_nodes"] = data["cluster"]["ready_nodes"]
        out.append((f"TP{2 * tp} ({half} replicas, the same GPUs)", data))
    gpus = n * s.opt.gpus
    for name in s.plan.cluster.instance_types:
        it = get_instance_type(name)
        if it.gpu == s.opt.it.gpu or it.num_gpus < tp:
            continue
        data = copy.deepcopy(base)
        per = max(1, it.num_gpus // tp)
        nodes = max(1, math.ceil(gpus / tp / per))
        replicas = nodes * per
        data["cluster"].update(instance_type=name, ready_nodes=nodes,
                               max_nodes=max(nodes, data["cluster"]["max_nodes"]))
        data["strategies"] = [dict(s.fixed(replicas), ready_nodes=nodes)]
        out.append((f"{it.gpu} ({name}, {replicas} replicas)", data))
    return out


def analyse(s, window: Window, rows: list[EvidenceRow]) -> Unreachable:
    """`rows`: the always-on fleets simulated on `window`, none meeting the SLO."""
    best = max(rows, key=lambda r: (r.slo_attainment, -r.min_replicas))
    target = best.slo_attainment - CLOSE_FRAC

    def evaluate(n: int) -> EvidenceRow:
        row = s.run([_fixed_data(s, window, n)], [f"always on {n}"])[0]
        close = row.slo_attainment >= target
        return replace(row, min_replicas=n, meets_slo=close)

    found, tried = search_min_replicas(evaluate, 1, best.min_replicas,
                                       s.plan.simulation.max_candidates)
    close = next((r for r in tried if r.min_replicas == found), best)
    alternatives = _alternatives(s, window, best.min_replicas)
    changes = s.run([d for _, d in alternatives], [label for label, _ in alternatives])
    slo_data = _fixed_data(s, window, best.min_replicas)
    ttft = math.ceil((best.ttft_p99_s or 0.0) * 100) / 100
    tpot = math.ceil((best.itl_p99_s or 0.0) * 1000) / 1000
    reachable_slo: list[EvidenceRow] = []
    if math.isfinite(ttft) and ttft > 0 and tpot > 0:
        slo_data["slo"] = {"ttft_s": max(ttft, s.slo.ttft_p99_s),
                           "tpot_s": max(tpot, s.slo.itl_p99_s)}
        runner, slo = s.runner, s.slo
        row = runner.run([slo_data], ["reachable SLO"], s.base_dir, max(ttft, slo.ttft_p99_s),
                         slo.goodput_frac)[0]
        reachable_slo.append(replace(row, config=f"the SLO TTFT <= {max(ttft, slo.ttft_p99_s):g} "
                                     f"s, ITL <= {max(tpot, slo.itl_p99_s):g} s"))
    change_rows = tuple(
        replace(r, why="reaches the SLO" if r.meets_slo else
                f"{r.slo_attainment:.2%}, still short") for r in list(changes) + reachable_slo)
    reaching = [r.config for r in change_rows if r.meets_slo]
    line = (f"the SLO ({s.slo.goodput_frac:.0%} of requests within TTFT {s.slo.ttft_p99_s:g} s "
            f"and ITL {s.slo.itl_p99_s:g} s) is not reachable for {s.w.name} on "
            f"{s.opt.label} up to {best.min_replicas} replicas: at most "
            f"{best.slo_attainment:.2%} (simulated on the busiest stretch); "
            f"{close.min_replicas} replicas reach {close.slo_attainment:.2%}; "
            + ("what would reach it: " + "; ".join(reaching) if reaching else
               "no change tried reaches it") + " (plan.md has each figure)")
    return Unreachable(best, replace(close, meets_slo=False), change_rows, line)
