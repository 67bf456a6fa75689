"""When no fleet up to the GPU limit meets the SLO: what is reachable, and what would reach it.

One analysis for both searches (`FleetTrials` says how each simulates a fleet): a trace's on
its history's busiest stretch (the short window the search prunes on), a shape's on its
burst. Every figure here is simulated:
- the reachable attainment: the best any always-on fleet up to the GPU limit reached;
- the cheapest always-on fleet within 0.1 point of it (more replicas buy nothing past it);
- the changes that would reach the SLO, each on the reachable fleet's GPUs: FP8 weights and KV
  cache, twice the tensor parallelism, each other GPU the input allows, and the SLO the
  reachable fleet meets (its own P99 TTFT and TPOT, simulated again under that SLO).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from gpuscale.catalog import get_instance_type, get_model
from gpuscale.plan.hardware import HardwareOption
from gpuscale.plan.history import Window
from gpuscale.plan.inputs import PlanInput, SloInput, WorkloadInput
from gpuscale.plan.model import Decision, EvidenceRow, Refusal
from gpuscale.plan.parallel import Runner
from gpuscale.plan.search import search_min_replicas

if TYPE_CHECKING:
    from gpuscale.plan.trace_search import TraceSearch

CLOSE_FRAC = 0.001  # "within 0.1 point" of the reachable attainment


@dataclass(frozen=True)
class FleetTrials:
    """How a search simulates an always-on fleet, for the analysis to run its own."""

    plan: PlanInput
    w: WorkloadInput
    slo: SloInput
    opt: HardwareOption
    tp: int
    where: str  # what the fleets run on, e.g. "the busiest stretch"
    fixed_scenario: Callable[[int], dict]  # n replicas always on, ready at t = 0
    fixed_strategy: Callable[[int], dict]  # its strategy alone (the TP and GPU changes)
    # (scenarios, labels, TTFT SLO of the runs) -> rows, each with its label as `config`
    run: Callable[[list[dict], list[str], float], list[EvidenceRow]]


@dataclass(frozen=True)
class Unreachable:
    reachable: EvidenceRow  # the best attainment reached
    cheapest_close: EvidenceRow  # the fewest replicas within 0.1 point of it
    changes: tuple[EvidenceRow, ...]  # each change's run; `config` says what changed
    line: str  # one line for the terminal and the exit code 2
    where: str = "the busiest stretch"  # what the fleets ran on

    def decision(self, w: WorkloadInput) -> Decision:
        """plan.md's decision row: what is reachable, and each change with its figure."""
        close = self.cheapest_close
        return Decision(
            "warm-pool", f"{w.name}: SLO not reachable",
            f"at most {self.reachable.slo_attainment:.2%} (simulated on {self.where}); "
            f"{close.min_replicas} replicas always on reach {close.slo_attainment:.2%}",
            "each change simulated on the reachable fleet's GPUs: " + "; ".join(
                f"{r.config}: {r.slo_attainment:.2%}" + (" (reaches the SLO)" if r.meets_slo
                                                          else "") for r in self.changes))

    def refusal(self, w: WorkloadInput, slo: SloInput) -> Refusal:
        """plan.md's refusal row: the SLO asked, the fleet planned instead, where to look."""
        return Refusal(
            f"{w.name}: {slo.goodput_frac:.0%} within TTFT {slo.ttft_p99_s:g} s and ITL "
            f"{slo.itl_p99_s:g} s", f"{self.cheapest_close.min_replicas} replicas always on, "
            f"{self.cheapest_close.slo_attainment:.2%} (the reachable "
            f"{self.reachable.slo_attainment:.2%} within 0.1 point)",
            "no fleet up to the GPU limit meets the SLO (simulated); the evidence rows after "
            "the always-on fleets are the changes that would reach it, each simulated")


def labelled_runs(runner: Runner, base_dir: Path, goodput_frac: float
                  ) -> Callable[[list[dict], list[str], float], list[EvidenceRow]]:
    """`FleetTrials.run` on the search's runner: each row named by its label."""
    def run(scenarios: list[dict], labels: list[str], ttft_s: float) -> list[EvidenceRow]:
        rows = runner.run(scenarios, labels, base_dir, ttft_s, goodput_frac)
        return [replace(r, config=label) for r, label in zip(rows, labels, strict=True)]
    return run


def trace_trials(s: TraceSearch, window: Window) -> FleetTrials:
    """The trace search's fleets on `window` of its history."""
    return FleetTrials(s.plan, s.w, s.slo, s.opt, s.setup.tp, f"the {window.label}",
                       lambda n: s.scenario(window, s.fixed(n), n), s.fixed,
                       labelled_runs(s.runner, s.base_dir, s.slo.goodput_frac))


def _alternatives(t: FleetTrials, n: int) -> list[tuple[str, dict]]:
    """(what changes, scenario) at the reachable fleet's GPUs."""
    out: list[tuple[str, dict]] = []
    base = t.fixed_scenario(n)
    model = get_model(t.w.model)
    if t.w.precision.value != "fp8":
        data = copy.deepcopy(base)
        data["model"]["precision"] = "fp8"
        out.append(("FP8 weights and KV cache", data))
    tp, per_node = t.tp, t.opt.it.num_gpus
    if 2 * tp <= per_node and not model.tp_error(2 * tp) and n >= 2:
        data = copy.deepcopy(base)
        half = max(1, n // 2)
        data["model"]["tp"] = 2 * tp
        data["strategies"] = [t.fixed_strategy(half)]
        data["cluster"]["ready_nodes"] = math.ceil(half * 2 * tp / per_node)
        data["strategies"][0]["ready_nodes"] = data["cluster"]["ready_nodes"]
        data["initial_replicas"] = half
        out.append((f"TP{2 * tp} ({half} replicas, the same GPUs)", data))
    gpus = n * t.opt.gpus
    for name in t.plan.cluster.instance_types:
        it = get_instance_type(name)
        if it.gpu == t.opt.it.gpu or it.num_gpus < tp:
            continue
        data = copy.deepcopy(base)
        per = max(1, it.num_gpus // tp)
        nodes = max(1, math.ceil(gpus / tp / per))
        replicas = nodes * per
        data["cluster"].update(instance_type=name, ready_nodes=nodes,
                               max_nodes=max(nodes, data["cluster"]["max_nodes"]))
        data["strategies"] = [dict(t.fixed_strategy(replicas), ready_nodes=nodes)]
        data["initial_replicas"] = replicas
        out.append((f"{it.gpu} ({name}, {replicas} replicas)", data))
    return out


def _reachable_slo(t: FleetTrials, best: EvidenceRow) -> list[EvidenceRow]:
    """The reachable fleet again, under the SLO it meets (its own P99 TTFT and TPOT)."""
    ttft, tpot = best.ttft_p99_s or 0.0, best.itl_p99_s or 0.0
    if not (math.isfinite(ttft) and ttft > 0 and tpot > 0):
        return []  # a fleet that never answered some request has no SLO it meets
    ttft = max(math.ceil(ttft * 100) / 100, t.slo.ttft_p99_s)
    tpot = max(math.ceil(tpot * 1000) / 1000, t.slo.itl_p99_s)
    data = t.fixed_scenario(best.min_replicas)
    data["slo"] = {"ttft_s": ttft, "tpot_s": tpot}
    label = f"the SLO TTFT <= {ttft:g} s, ITL <= {tpot:g} s"
    return t.run([data], [label], ttft)


def analyse(s: TraceSearch, window: Window, rows: list[EvidenceRow]) -> Unreachable:
    """The trace search's entry: `rows`, the always-on fleets it simulated on `window`."""
    return analyse_fleets(trace_trials(s, window), rows)


def analyse_fleets(t: FleetTrials, rows: list[EvidenceRow]) -> Unreachable:
    """`rows`: the always-on fleets simulated as `t` simulates them, none meeting the SLO."""
    best = max(rows, key=lambda r: (r.slo_attainment, -r.min_replicas))
    target = best.slo_attainment - CLOSE_FRAC

    def evaluate(n: int) -> EvidenceRow:
        row = t.run([t.fixed_scenario(n)], [f"always on {n}"], t.slo.ttft_p99_s)[0]
        return replace(row, min_replicas=n, meets_slo=row.slo_attainment >= target)

    found, tried = search_min_replicas(evaluate, 1, best.min_replicas,
                                       t.plan.simulation.max_candidates)
    close = next((r for r in tried if r.min_replicas == found), best)
    alternatives = _alternatives(t, best.min_replicas)
    changes = t.run([d for _, d in alternatives], [label for label, _ in alternatives],
                    t.slo.ttft_p99_s)
    change_rows = tuple(
        replace(r, why="reaches the SLO" if r.meets_slo else
                f"{r.slo_attainment:.2%}, still short")
        for r in list(changes) + _reachable_slo(t, best))
    reaching = [r.config for r in change_rows if r.meets_slo]
    line = (f"the SLO ({t.slo.goodput_frac:.0%} of requests within TTFT {t.slo.ttft_p99_s:g} s "
            f"and ITL {t.slo.itl_p99_s:g} s) is not reachable for {t.w.name} on "
            f"{t.opt.label} up to {best.min_replicas} replicas: at most "
            f"{best.slo_attainment:.2%} (simulated on {t.where}); "
            f"{close.min_replicas} replicas reach {close.slo_attainment:.2%}; "
            + ("what would reach it: " + "; ".join(reaching) if reaching else
               "no change tried reaches it") + " (plan.md has each figure)")
    return Unreachable(best, replace(close, meets_slo=False), change_rows, line, t.where)
