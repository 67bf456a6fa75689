"""Karpenter's disruption-budget schedules, parsed as Karpenter parses them (robfig/cron v3
`ParseStandard`, via `Budget.IsActive` in kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go).

A leaf module (no simulator imports): the scenario loader, the Karpenter provider and the
audit rule GPU034 all read schedules through it, and `audit` must start without the simulator.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from functools import lru_cache

# robfig/cron v3 (what Karpenter's Budget.IsActive calls: cron.ParseStandard("TZ=UTC " + s),
# kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go): descriptors, 5 fields, `?` = `*`,
# weekday 0-6 (7 is out of range there), names case-insensitive, "N/step" = N-max/step.
_MACROS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
           "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
           "@hourly": "0 * * * *"}
_MONTHS = {"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8,
           "sep": 9, "oct": 10, "nov": 11, "dec": 12}
_DAYS = {"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}
_FIELDS = ((0, 59, None), (0, 23, None), (1, 31, None), (1, 12, _MONTHS), (0, 6, _DAYS))
# The NodePool CRD's pattern for `schedule` (same file), what the API server accepts:
#   ^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$
# The alternation is anchored only at its outer ends, as in the Go source. Go's RE2 runs it in
# linear time; Python's backtracking `re` takes minutes on a 100k-character schedule, so
# `api_accepts_schedule` checks the same language with one backward scan.
_API_DESCRIPTOR = re.compile(r"@(annually|yearly|monthly|weekly|daily|midnight|hourly)")
_RE2_SPACE = frozenset("\t\n\f\r ")  # RE2's \s; `.` is anything but \n


def api_accepts_schedule(expr: str) -> bool:
    """Does the CRD pattern match `expr` (RE2 semantics: `$` is the end of the text)?

    The second alternative, `(.+)\\s(.+)\\s(.+)\\s(.+)\\s(.+)$`, is run as a small NFA over
    the text read backwards: state 2k expects the first character of field k (from the
    right), 2k+1 is inside field k; at most 10 states per character, so linear time."""
    if _API_DESCRIPTOR.match(expr):
        return True
    states = {0}
    for ch in reversed(expr):
        nxt = set()
        for state in states:
            inside = state % 2 == 1
            if ch != "\n":  # `.`: a character of the field (starting it, or inside it)
                nxt.add(state if inside else state + 1)
            if inside and ch in _RE2_SPACE and state < 9:
                nxt.add(state + 1)  # the separator after field k
        if 9 in nxt:
            return True  # the leftmost field has a character: the unanchored search matches
        states = nxt
        if not states:
            return False
    return False




class CronError(ValueError):
    """A schedule robfig/cron cannot parse; the message is robfig's reason."""


def _number(text: str, names: dict | None) -> int:
    if names and text.lower() in names:
        return names[text.lower()]
    if not re.fullmatch(r"[+-]?\d{1,18}", text):  # Go's strconv.Atoi, bounded
        raise CronError(f"failed to parse int from {text!r}")
    value = int(text)
    if value < 0:
        raise CronError(f"negative number ({value}) not allowed: {text}")
    return value


def _parse_range(expr: str, low: int, high: int, names: dict | None) -> tuple[set[int], bool]:
    """One comma part -> (values, star), as robfig's getRange."""
    range_and_step = expr.split("/")
    low_high = range_and_step[0].split("-")
    star = False
    if low_high[0] in ("*", "?"):
        start, end, star = low, high, True
    else:
        start = _number(low_high[0], names)
        if len(low_high) == 1:
            end = start
        elif len(low_high) == 2:
            end = _number(low_high[1], names)
        else:
            raise CronError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _number(range_and_step[1], None)
        if len(low_high) == 1:  # "N/step" means "N-max/step"
            end = high
        if step > 1:
            star = False
    else:
        raise CronError(f"too many slashes: {expr}")
    if start < low:
        raise CronError(f"beginning of range ({start}) below minimum ({low}): {expr}")
    if end > high:
        raise CronError(f"end of range ({end}) above maximum ({high}): {expr}")
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise CronError(f"step of range should be a positive number: {expr}")
    return set(range(start, end + 1, step)), star


def _parse_field(text: str, low: int, high: int, names: dict | None) -> tuple[frozenset[int], bool]:
    values: set[int] = set()
    star = False
    for part in (p for p in text.split(",") if p):  # robfig skips empty parts
        got, part_star = _parse_range(part, low, high, names)
        values |= got
        star = star or part_star
    return frozenset(values), star


@lru_cache(maxsize=256)
def parse_cron(expr: str) -> tuple[tuple[frozenset[int], ...], bool, bool]:
    """Schedule -> (value sets, day of month is a star, day of week is a star), read as
    robfig/cron's ParseStandard reads it; raises CronError with robfig's reason."""
    text = expr.strip()
    if text.startswith("@"):
        if text not in _MACROS:
            raise CronError(f"unrecognized descriptor: {text}")
        text = _MACROS[text]
    parts = text.split()
    if len(parts) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(parts)}: {expr}")
    parsed = [
        _parse_field(p, lo, hi, names) for p, (lo, hi, names) in zip(parts, _FIELDS, strict=True)
    ]
    return tuple(values for values, _ in parsed), parsed[2][1], parsed[4][1]


def schedule_problem(expr: str) -> str | None:
    """Why Karpenter cannot use `expr`, or None. The API server refuses what its pattern does
    not match; what it matches but robfig/cron cannot parse is accepted, and Karpenter then
    allows no disruption for the pool (GetAllowedDisruptionsByReason returns 0 with the
    error), so the simulator refuses it at load rather than simulate a pool that never
    disrupts because of a typo."""
    if not api_accepts_schedule(expr):
        return (f"schedule {expr!r} is refused by the Kubernetes API (NodePool pattern: a 5-field "
                "cron or @annually/@yearly/@monthly/@weekly/@daily/@midnight/@hourly)")
    try:
        parse_cron(expr)
    except CronError as exc:
        return (f"schedule {expr!r}: {exc}; the API server accepts it, but Karpenter cannot parse "
                "it and then allows no disruption for the pool")
    return None


def _day_matches(expr: str, t: datetime) -> bool:
    (_, _, dom, month, dow), dom_star, dow_star = parse_cron(expr)
    if t.month not in month:
        return False
    dom_ok = t.day in dom
    dow_ok = (t.isoweekday() % 7) in dow
    # robfig's dayMatches: when either day field is a star (`*`, `?`, `*/1`) both must match;
    # when both are restricted, either may (day of month OR day of week).
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


def next_hit(expr: str, after: datetime, horizon: timedelta) -> datetime | None:
    """Earliest minute strictly after `after` matching `expr` (robfig/cron's
    `SpecSchedule.Next`: it first moves to the next whole second, and a 5-field spec fires at
    second 0, so a schedule never fires at the instant it is asked from); None beyond
    `horizon`. Works on `after`'s own wall clock (a naive or zone-aware datetime alike)."""
    (minute, hour, *_), _, _ = parse_cron(expr)
    t = after.replace(second=0, microsecond=0) + timedelta(minutes=1)
    ceiling = after + horizon
    while t <= ceiling:
        if not _day_matches(expr, t):
            t = t.replace(hour=0, minute=0) + timedelta(days=1)
        elif t.hour not in hour:
            t = t.replace(minute=0) + timedelta(hours=1)
        elif t.minute not in minute:
            t += timedelta(minutes=1)
        else:
            return t
    return None
