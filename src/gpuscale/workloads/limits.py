"""How much work a workload spec means, estimated from its fields before anything is drawn.

A ten-year horizon, a 1e9/s rate, a 1e-12 s phase cycled for an hour, `repeat: 1e7` or a
spike of 1e9 requests would otherwise allocate GiB-to-PiB arrays (numpy MemoryError) or run
for days. Each is refused here with the figure and how to proceed; the limits are listed in
docs/input-limits.md.
"""

from __future__ import annotations

import math

from gpuscale.errors import UserInputError

# Requests in one run. A 10-million-request day peaks at 1.26 GiB of request results
# (docs/architecture.md); twice that is the most one run is allowed to hold.
MAX_REQUESTS = 20_000_000
# Simulated time of one run: controllers and scrapes tick every 15-30 s, so a month is ~180k
# scrapes per strategy; a longer horizon is a window of it repeated.
MAX_HORIZON_S = 31 * 86_400.0
# Phase instances of a cycled piecewise workload (one array row each).
MAX_PHASE_INSTANCES = 1_000_000
# Gap CV of a bursty workload: production traces measure 1.09-13.15 (shared/traces/README.md);
# past ~100 the gamma shape (1/cv^2) underflows and nearly every gap is 0.
MAX_CV = 100.0

# Simulation runs one command may start (seeds x strategies; a sweep's grid points x
# strategies), and the requests all of them replay: ~200 M is ~25 minutes at the ~130,000
# requests/s of the compiled loop (docs/benchmarks.md). A 10^9-seed or 10^9-point request is a
# typo, answered before anything runs.
MAX_RUNS = 100_000
MAX_TOTAL_REQUESTS = 10 * MAX_REQUESTS
# Seeds are 64-bit, as a scenario file holds them (gpuscale/inputs.py reads integers as int64).
MAX_SEED = 2**63 - 1
SIMULATED_REQUESTS_PER_S = 130_000

_HOW = ("simulate a representative window (a shorter duration_s or a trace window), a lower "
        "rate, or fewer copies (repeat), and scale the result")


def _refuse(what: str, requests: float, span_s: float) -> None:
    if requests > MAX_REQUESTS:
        raise UserInputError(
            f"{what} means about {requests:,.0f} requests, more than the {MAX_REQUESTS:,} one run "
            f"holds (docs/input-limits.md); {_HOW}")
    if span_s > MAX_HORIZON_S:
        raise UserInputError(
            f"{what} spans {span_s:,.0f} s ({span_s / 86_400:,.1f} days), more than the "
            f"{MAX_HORIZON_S / 86_400:.0f}-day horizon of one run (docs/input-limits.md); {_HOW}")


def planned_load(spec) -> tuple[float, float]:
    """(expected requests, span in seconds) of a generated workload; (0, 0) for a trace,
    whose size is known only once read (`check_trace`)."""
    kind = spec.kind
    if kind == "poisson":
        return spec.rate_per_s * spec.duration_s, spec.duration_s
    if kind == "bursty":
        if spec.cv > MAX_CV:
            raise UserInputError(f"workload cv {spec.cv:g} is past {MAX_CV:g}: production traces "
                                 "measure 1-15 (shared/traces/README.md); use at most "
                                 f"{MAX_CV:g}")
        return spec.rate_per_s * spec.duration_s, spec.duration_s
    if kind == "piecewise":
        cycle_s = spec.cycle_s
        total_s = spec.duration_s if spec.duration_s is not None else cycle_s
        instances = math.ceil(total_s / cycle_s) * len(spec.phases)
        if instances > MAX_PHASE_INSTANCES:
            raise UserInputError(
                f"piecewise workload cycles its {cycle_s:g}-s phases {instances:,} times in "
                f"{total_s:g} s, more than {MAX_PHASE_INSTANCES:,} phase instances "
                "(docs/input-limits.md); use longer phases or a shorter duration_s")
        per_cycle = sum(p.rate_per_s * p.duration_s for p in spec.phases)
        return per_cycle * total_s / cycle_s, total_s
    if kind == "diurnal":
        # Thinning draws candidates at the peak rate first (arrivals.diurnal_arrivals).
        return spec.max_rate_per_s * spec.duration_s, spec.duration_s
    if kind == "long_prompt_spike":
        return float(spec.count), spec.at_s + spec.spread_s
    if kind == "mix":
        loads = [planned_load(part) for part in spec.parts]
        return sum(r for r, _ in loads), max(s for _, s in loads)
    return 0.0, 0.0


def check_planned(spec) -> None:
    """Refuse a workload whose expected size or horizon no run can hold."""
    requests, span_s = planned_load(spec)
    _refuse(f"workload {spec.kind!r}", requests, span_s)


def check_trace(requests: float, span_s: float, source: str) -> None:
    """The same limits for a trace once read (its window, copies and rate scale applied)."""
    try:
        _refuse("the trace as replayed", requests, span_s)
    except UserInputError as exc:
        raise UserInputError(str(exc), source=source) from None


def check_runs(what: str, runs: int, requests_per_run: float = 0.0) -> None:
    """Refuse a command that would start more than MAX_RUNS runs, or replay more than
    MAX_TOTAL_REQUESTS requests in all, with the figures and how to proceed."""
    if runs > MAX_RUNS:
        raise UserInputError(f"{what} means {runs:,} simulation runs, more than the "
                             f"{MAX_RUNS:,} one command starts (docs/input-limits.md); run "
                             "fewer seeds or grid points, or split the sweep")
    total = runs * requests_per_run
    if total > MAX_TOTAL_REQUESTS:
        hours = total / SIMULATED_REQUESTS_PER_S / 3600
        raise UserInputError(f"{what} replays about {total:,.0f} requests in {runs:,} runs "
                             f"(~{hours:,.1f} h of simulation), more than the "
                             f"{MAX_TOTAL_REQUESTS:,} one command replays "
                             "(docs/input-limits.md); run fewer seeds or grid points, or a "
                             "shorter window")
