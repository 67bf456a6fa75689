"""Quantities and unit conversion: the one place units are converted.

Kubernetes quantities ("80Gi", "500m", "1.5") and durations ("30s", "5m", "1h", "Never").
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta, timezone

GIB = 2**30
MIB = 2**20
GB = 10**9
SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86400.0
# Simulated t=0 unless a scenario says otherwise: midnight UTC, so a trace's second N is N
# seconds past 00:00 (a Thursday; time-of-day schedules and exported timestamps read it).
DEFAULT_START_TIME = datetime(2026, 1, 1, tzinfo=timezone.utc)


def wall_clock(start_time: datetime, t_s: float) -> datetime:
    """The wall-clock instant of simulated time `t_s` in a run that starts at `start_time`."""
    return start_time + timedelta(seconds=t_s)


def seconds_of_day_utc(t: datetime) -> float:
    """Seconds past 00:00 UTC of the instant `t`."""
    t = t.astimezone(timezone.utc)
    return t.hour * 3600.0 + t.minute * 60.0 + t.second + t.microsecond / 1e6


def epoch_ms(instant: datetime) -> int:
    """An aware datetime as Unix milliseconds (what Prometheus timestamps are)."""
    return round(instant.timestamp() * 1000)

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
            "P": 1e15, "E": 1e18}
_QUANTITY_RE = re.compile(r"^([+-]?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]{0,2})$")
_DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_DURATION_FULL_RE = re.compile(r"^(?:\d+(?:\.\d+)?(?:ms|h|m|s))+$")
_DURATION_UNIT_S = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_quantity(value: str | int | float) -> float:
    """Kubernetes resource quantity -> plain number ("80Gi" -> 85899345920.0, "500m" -> 0.5)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _bounded_quantity(float(value), value)
    match = _QUANTITY_RE.match(str(value).strip())
    if not match:
        raise ValueError(
            f"not a Kubernetes quantity: {value!r} (expected e.g. '8', '500m', '80Gi')"
        )
    number, suffix = float(match.group(1)), match.group(2)
    if suffix in _BINARY:
        return _bounded_quantity(number * _BINARY[suffix], value)
    if suffix in _DECIMAL:
        return _bounded_quantity(number * _DECIMAL[suffix], value)
    raise ValueError(f"unknown quantity suffix {suffix!r} in {value!r}")


# Largest quantity read: 2^63 (8 EiB of memory; any GPU or CPU count is far below). A
# 400-digit GPU count would otherwise overflow to inf and then raise OverflowError in the
# arithmetic that rounds it.
MAX_QUANTITY = float(2**63)


def _bounded_quantity(number: float, value) -> float:
    if not math.isfinite(number) or abs(number) > MAX_QUANTITY:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "..."
        raise ValueError(f"quantity {shown} is out of range (at most 2^63)")
    return number


def parse_duration_s(value: str | int | float) -> float:
    """Go-style duration ("1h30m", "45s", "500ms") or bare seconds -> seconds.

    "Never" is returned as +inf, as Karpenter's `consolidateAfter: Never` means no deadline.
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"duration must be >= 0, got {value}")
        return float(value)
    text = str(value).strip()
    if text == "Never":
        return float("inf")
    if not _DURATION_FULL_RE.match(text):
        raise ValueError(f"not a duration: {value!r} (expected e.g. '30s', '5m', '1h', 'Never')")
    return sum(float(n) * _DURATION_UNIT_S[u] for n, u in _DURATION_RE.findall(text))


def format_duration(seconds: float) -> str:
    """Seconds -> the shortest Go-style duration string ("3600" -> "1h")."""
    if seconds == float("inf"):
        return "Never"
    seconds = round(seconds)
    if seconds % 3600 == 0 and seconds:
        return f"{seconds // 3600}h"
    if seconds % 60 == 0 and seconds:
        return f"{seconds // 60}m"
    return f"{seconds}s"
