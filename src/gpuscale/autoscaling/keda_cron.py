"""KEDA's `cron` trigger: scheduled capacity, `desiredReplicas` between `start` and `end`.

Semantics from kedacore/keda `pkg/scalers/cron_scaler.go`:
- both schedules are robfig/cron 5-field specs evaluated in the IANA `timezone`
  (`cron.New(cron.WithLocation(location))`); KEDA refuses a `start` equal to `end`;
- activity (`IsActive` / `GetMetricsAndActivity`): with `nextStart` and `nextEnd` the next
  firings after now, the trigger is inactive when `nextStart < nextEnd` (the window has not
  begun), active otherwise: inside `[start, end)`;
- the metric (`GetMetricSpecForScaling`): an External metric named
  `s<i>-cron-<timezone>-<start>-<end>` with target `AverageValue` 1, whose value is
  `desiredReplicas` while active and 1 outside (`defaultDesiredReplicas`), so the HPA KEDA
  generates proposes `desiredReplicas` in the window, and the max over its metrics wins.

Simulated time becomes wall-clock time through the scenario's `start_time` (units.wall_clock):
trace second 0 is 00:00 UTC unless the scenario says otherwise.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gpuscale.cron import CronError, next_hit, parse_cron
from gpuscale.units import DEFAULT_START_TIME, wall_clock

# robfig/cron gives up after five years without a match (`Next` in spec.go); so does this.
SEARCH_HORIZON = timedelta(days=5 * 366)
OUTSIDE_VALUE = 1.0  # cron_scaler.go defaultDesiredReplicas: the metric outside the window


class CronTrigger(BaseModel):
    """A `type: cron` trigger of a ScaledObject."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["cron"] = "cron"
    name: str | None = Field(None, description="The trigger's `name` (unique); a formula "
                             "refers to it by it.")
    timezone: str = Field("Etc/UTC", description="IANA time zone the schedules are read in.")
    start: str = Field(description="Cron (5 fields) at which the window opens, e.g. '0 8 * * *'.")
    end: str = Field(description="Cron (5 fields) at which the window closes.")
    desired_replicas: int = Field(ge=0, description="Replicas the trigger asks for inside the "
                                  "window (desiredReplicas); 1 outside it.")

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, name: str) -> str:
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {name!r} (an IANA name such as Etc/UTC or "
                             "Europe/Berlin)") from None
        return name

    @field_validator("start", "end")
    @classmethod
    def _parses(cls, expr: str) -> str:
        try:
            parse_cron(expr)
        except CronError as exc:
            raise ValueError(f"cron schedule {expr!r}: {exc}") from None
        return expr

    @model_validator(mode="after")
    def _distinct(self) -> CronTrigger:
        if self.start.strip() == self.end.strip():
            raise ValueError("start and end must differ (KEDA refuses a cron trigger whose "
                             "start and end are the same schedule)")
        return self

    # What KEDA's operator and metrics server need of any trigger (keda.KedaTrigger): the
    # cron scaler's metric is AverageValue with target 1 and is never cached.
    @property
    def metric_type(self) -> Literal["AverageValue"]:
        return "AverageValue"

    @property
    def use_cached_metrics(self) -> bool:
        return False

    @property
    def target_value(self) -> float:
        return 1.0

    @property
    def label(self) -> str:
        return self.metric_name

    def is_active(self, value: float) -> bool:
        """Activity read back from the value alone (unbound: `CronReader` knows the clock):
        above the outside value means inside the window."""
        return value > OUTSIDE_VALUE

    @property
    def metric_name(self) -> str:
        """KEDA's metric name (before the `s<i>-` prefix): cron-<zone>-<start>-<end>, with
        spaces dropped and `*`, `/`, `?` spelled x, Sl, Qm (parseCronTimeFormat)."""
        def spell(expr: str) -> str:
            return (expr.replace(" ", "").replace("*", "x").replace("/", "Sl")
                    .replace("?", "Qm"))
        return f"cron-{self.timezone}-{spell(self.start)}-{spell(self.end)}"


def cron_active(trigger: CronTrigger, now: datetime) -> bool:
    """Inside the window at wall-clock `now` (cron_scaler.go's IsActive: inactive exactly when
    the next start comes before the next end)."""
    local = now.astimezone(ZoneInfo(trigger.timezone)).replace(tzinfo=None)
    next_start = next_hit(trigger.start, local, SEARCH_HORIZON)
    next_end = next_hit(trigger.end, local, SEARCH_HORIZON)
    if next_start is not None and next_end is not None:
        return not next_start < next_end
    return next_end is not None  # a start that never fires again: active until the end does


class CronReader:
    """A cron trigger bound to the run's wall clock: its metric over simulated time
    (desiredReplicas while active, else 1) and its activity, as KEDA's operator and metrics
    server read any trigger (keda.KedaTrigger, `value_at`). The answer only changes on whole
    minutes, so each minute is computed once."""

    def __init__(self, trigger: CronTrigger, start_time: datetime | None):
        self.trigger = trigger
        self.start_time = start_time or DEFAULT_START_TIME
        self._minute: int | None = None
        self._active = False
        self._last_active = False

    # keda.KedaTrigger
    name = property(lambda self: self.trigger.name)
    metric_type = property(lambda self: self.trigger.metric_type)
    use_cached_metrics = property(lambda self: False)
    target_value = property(lambda self: 1.0)
    label = property(lambda self: self.trigger.label)
    metric_name = property(lambda self: self.trigger.metric_name)

    def value_at(self, view) -> float:
        self._last_active = self.active(view.now_s)
        return self.value(view.now_s)

    def is_active(self, value: float) -> bool:
        """The window's activity at the last read (KEDA's cron scaler reports activity apart
        from the value, so desiredReplicas 1 inside the window is still active)."""
        return self._last_active

    def active(self, now_s: float) -> bool:
        now = wall_clock(self.start_time, now_s)
        minute = int(now.astimezone(timezone.utc).timestamp() // 60)
        if minute != self._minute:
            self._minute = minute
            self._active = cron_active(self.trigger, now.replace(second=0, microsecond=0))
        return self._active

    def value(self, now_s: float) -> float:
        return float(self.trigger.desired_replicas) if self.active(now_s) else OUTSIDE_VALUE


def opens_within(trigger: CronTrigger, start: datetime, end: datetime) -> bool:
    """Is the window open at some instant of [start, end)? (open at `start`, or its start
    fires before `end`)."""
    if cron_active(trigger, start):
        return True
    local = start.astimezone(ZoneInfo(trigger.timezone)).replace(tzinfo=None)
    first = next_hit(trigger.start, local - timedelta(seconds=1), SEARCH_HORIZON)
    span = end - start
    return first is not None and first - local < span
