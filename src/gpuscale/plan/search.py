"""The plan as a search over simulations: hardware x scaler x floor, cheapest passing wins.

Candidates are the analytically best hardware options (instance type x TP that fit one node,
`HARDWARE_OPTIONS` of them, ranked by the price of a served request) times the scaler
variants (signal, threshold, scale-down window) times the warm-pool floor, whose boundary is
found by `warm_pool.search_min_replicas`. Every candidate is a scenario of the workload's own
traffic (the trace itself when one is given) run on the engine. The cheapest candidate in
simulated GPU-hours that meets the SLO (P99 TTFT and `goodput_frac`) wins; the evidence
lists every simulation with why it lost. The winner is then re-run on other seeds (and, for a
trace, a shifted window) and the worst is reported. `SearchBudget` stops the search when the
time budget is spent (the clock comes from the CLI; nothing below it reads the wall clock).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from gpuscale.plan.model import EvidenceRow
from gpuscale.plan.warm_pool import boundary_found, search_min_replicas

HARDWARE_OPTIONS = 2  # analytic pruning: only the two cheapest hardware options are simulated
RECHECK_SEEDS = 2  # other seeds the winner is re-run on


@dataclass
class SearchBudget:
    """Wall-clock budget of one plan (`--time-budget-s`); `clock` is supplied by the CLI."""

    time_budget_s: float | None = None
    clock: Callable[[], float] | None = None
    progress: Callable[[str], None] | None = None
    started_s: float | None = None
    simulations: int = 0
    exhausted: bool = False
    workers: int = 1  # --workers: processes the search's simulations run in (plan/parallel.py)
    backend: str = "local"  # or "ray"

    def spent(self) -> bool:
        if self.time_budget_s is None or self.clock is None:
            return False
        if self.started_s is None:
            self.started_s = self.clock()
        self.exhausted = self.exhausted or self.clock() - self.started_s > self.time_budget_s
        return self.exhausted

    def tick(self, label: str) -> None:
        self.simulations += 1
        if self.progress is not None:
            self.progress(label)


@dataclass(frozen=True)
class FloorSearch:
    """The floor search of one (hardware, scaler) candidate."""

    hardware: str  # e.g. "p5.48xlarge TP2"
    scaler: str  # the scaler variant's label, e.g. "queue depth, queue 7"
    found: int | None
    boundary: bool
    rows: tuple[EvidenceRow, ...]

    @property
    def chosen(self) -> EvidenceRow | None:
        return next((r for r in self.rows if r.min_replicas == self.found), None)


@dataclass(frozen=True)
class SearchResult:
    winner: FloorSearch | None
    tried: tuple[FloorSearch, ...]
    evidence: tuple[EvidenceRow, ...]
    recheck: tuple[EvidenceRow, ...] = ()
    budget_exhausted: bool = False
    notes: tuple[str, ...] = field(default=())


Evaluate = Callable[[int], EvidenceRow]


def search_floor(hardware: str, scaler: str, evaluate: Evaluate, start: int,
                 hi: int, max_candidates: int, budget: SearchBudget) -> FloorSearch:
    label = f"{hardware}, {scaler}"

    def run(m: int) -> EvidenceRow:
        budget.tick(f"{label}, floor {m}")
        return replace(evaluate(m), config=label)

    found, rows = search_min_replicas(run, start, hi, max_candidates)
    return FloorSearch(hardware, scaler, found, boundary_found(found, rows), tuple(rows))


def pick_winner(tried: list[FloorSearch]) -> FloorSearch | None:
    """Cheapest simulated GPU-hours among candidates whose floor meets the SLO."""
    passing = [(t.chosen.gpu_hours, t.found or 0, i, t) for i, t in enumerate(tried)
               if t.chosen is not None]
    return min(passing)[3] if passing else None


def missed(r: EvidenceRow, ttft_slo_s: float, goodput_frac: float) -> str:
    """What a candidate missed, measured: P99 TTFT, goodput, or both."""
    parts = []
    if r.ttft_p99_s is None or r.ttft_p99_s > ttft_slo_s:
        parts.append(f"P99 TTFT {r.ttft_p99_s if r.ttft_p99_s is not None else float('nan'):.2f} s "
                     f"> {ttft_slo_s:g} s")
    if r.slo_attainment < goodput_frac:
        parts.append(f"{r.slo_attainment:.1%} of requests within TTFT and ITL < {goodput_frac:.0%}")
    return "misses the SLO: " + "; ".join(parts) if parts else "misses the SLO"


def evidence_with_reasons(tried: list[FloorSearch], winner: FloorSearch | None,
                          ttft_slo_s: float = float("inf"), goodput_frac: float = 0.0
                          ) -> tuple[EvidenceRow, ...]:
    """Every simulated row, with why it lost (or that it won)."""
    out = []
    best = winner.chosen.gpu_hours if winner and winner.chosen else None
    for t in tried:
        for r in t.rows:
            if winner is t and r.min_replicas == t.found:
                why = "winner: cheapest that meets the SLO"
            elif not r.meets_slo:
                why = missed(r, ttft_slo_s, goodput_frac)
            elif t.found is not None and r.min_replicas > t.found:
                why = f"meets the SLO; floor {t.found} does too, cheaper"
            else:
                why = (f"meets the SLO at {r.gpu_hours:.2f} GPU-h, no cheaper than the winner's "
                       f"{best:.2f}" if best is not None else "meets the SLO")
            out.append(replace(r, why=why))
    return tuple(out)
