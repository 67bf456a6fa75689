"""Disruption budgets: a small UTC cron matcher and Karpenter's allowance arithmetic.

Rules (reference layer1-node-provisioning.md 1.8, pkg/apis/v1/nodepool.go):
- `nodes` is an integer or a percentage of the pool's nodes; percentages round **up**.
- allowance = roundup(total x pct) - deleting - notReady, clamped at 0; the minimum over all
  active budgets that apply to the reason wins; no active budget means no limit.
- A scheduled budget is active when the cron fired within the last `duration`
  (a hit at minute m makes it active on [m, m + duration)).
Simulation time 0 is `start_utc`; cron fields are matched on UTC minutes.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import lru_cache

from gpuscale.provisioning.karpenter.nodepool import Budget

_MACROS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
           "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
           "@hourly": "0 * * * *"}
_NAMES = {"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8,
          "sep": 9, "oct": 10, "nov": 11, "dec": 12,
          "sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}
_BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
UNLIMITED = 10**9


def _value(text: str) -> int:
    return _NAMES[text.lower()] if text.lower() in _NAMES else int(text)


def _parse_field(text: str, low: int, high: int) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        rng, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if step < 1:
            raise ValueError(f"cron step must be >= 1 in {text!r}")
        if rng == "*":
            start, end = low, high
        elif "-" in rng:
            a, b = rng.split("-", 1)
            start, end = _value(a), _value(b)
        else:
            start = _value(rng)
            end = high if step_text else start
        if not (low <= start <= high and low <= end <= high and start <= end):
            raise ValueError(f"cron field {text!r} out of range {low}-{high}")
        values.update(range(start, end + 1, step))
    return frozenset(values)


@lru_cache(maxsize=256)
def parse_cron(expr: str) -> tuple[tuple[frozenset[int], ...], bool, bool]:
    """5-field cron -> (value sets, dom is '*', dow is '*'); raises ValueError when malformed."""
    text = _MACROS.get(expr.strip(), expr.strip())
    parts = text.split()
    if len(parts) != 5:
        raise ValueError(f"cron {expr!r} needs 5 fields (minute hour day month weekday)")
    sets = tuple(_parse_field(p, lo, hi) for p, (lo, hi) in zip(parts, _BOUNDS, strict=True))
    dow = frozenset(d % 7 for d in sets[4])  # 7 is Sunday too
    return (*sets[:4], dow), parts[2].startswith("*"), parts[4].startswith("*")


def _day_matches(expr: str, t: datetime) -> bool:
    (_, _, dom, month, dow), dom_star, dow_star = parse_cron(expr)
    if t.month not in month:
        return False
    dom_ok = t.day in dom
    dow_ok = (t.isoweekday() % 7) in dow
    # Standard cron: when both day fields are restricted, either may match.
    return dom_ok and dow_ok if (dom_star or dow_star) else dom_ok or dow_ok


def cron_matches(expr: str, t: datetime) -> bool:
    (minute, hour, *_), _, _ = parse_cron(expr)
    return t.minute in minute and t.hour in hour and _day_matches(expr, t)


def last_hit(expr: str, now: datetime, horizon: timedelta) -> datetime | None:
    """Latest minute <= now matching `expr`, searched back no further than `horizon`."""
    (minute, hour, *_), _, _ = parse_cron(expr)
    t = now.replace(second=0, microsecond=0)
    floor = now - horizon
    while t >= floor:
        if not _day_matches(expr, t):
            t = t.replace(hour=0, minute=0) - timedelta(minutes=1)
        elif t.hour not in hour:
            t = t.replace(minute=0) - timedelta(minutes=1)
        elif t.minute not in minute:
            t -= timedelta(minutes=1)
        else:
            return t
    return None


def budget_active(budget: Budget, now_s: float, start_utc: datetime) -> bool:
    if budget.schedule is None:
        return True
    now = start_utc + timedelta(seconds=now_s)
    duration = timedelta(seconds=budget.duration_s)
    hit = last_hit(budget.schedule, now, duration)
    return hit is not None and now < hit + duration


def budget_nodes(budget: Budget, total: int) -> int:
    """Nodes a budget allows for a pool of `total` nodes; percentages round up."""
    if budget.nodes.endswith("%"):
        return -(-total * int(budget.nodes[:-1]) // 100)  # integer ceiling, no float error
    return int(budget.nodes)


def allowed_disruptions(budgets: list[Budget], reason: str, *, total: int, deleting: int,
                        not_ready: int, now_s: float, start_utc: datetime) -> int:
    """How many more nodes of one pool may be disrupted for `reason` right now."""
    allowed = UNLIMITED
    for budget in budgets:
        if budget.reasons is not None and reason not in budget.reasons:
            continue
        if not budget_active(budget, now_s, start_utc):
            continue
        allowed = min(allowed, budget_nodes(budget, total) - deleting - not_ready)
    return max(0, allowed)
