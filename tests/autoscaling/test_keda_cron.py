"""KEDA cron triggers (kedacore/keda pkg/scalers/cron_scaler.go): the window [start, end) on
the wall clock of the scenario's start_time, desiredReplicas inside and 1 outside, and the
generated HPA taking the max of the cron proposal and the reactive trigger's (issue 27)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from gpuscale.autoscaling import build_autoscalers
from gpuscale.autoscaling.base import AutoscalerContext
from gpuscale.autoscaling.keda import KedaParams
from gpuscale.autoscaling.keda_cron import CronReader, CronTrigger, cron_active
from gpuscale.autoscaling.keda_operator import generated_hpa_params
from gpuscale.cron import next_hit

from .hpa_views import drive, pods, view

UTC = timezone.utc
Q = "vllm:num_requests_waiting"


def cron(**kw) -> CronTrigger:
    return CronTrigger(**{"timezone": "Etc/UTC", "start": "0 8 * * *", "end": "0 20 * * *",
                          "desired_replicas": 6, **kw})


def at(hour: int, minute: int = 0, second: int = 0) -> datetime:
    return datetime(2026, 1, 1, hour, minute, second, tzinfo=UTC)


def test_window_is_start_inclusive_end_exclusive():
    trigger = cron()
    assert not cron_active(trigger, at(7, 59, 59))
    assert cron_active(trigger, at(8))  # next start is tomorrow, next end 20:00 today
    assert cron_active(trigger, at(19, 59, 59))
    assert not cron_active(trigger, at(20))  # next end is tomorrow, after tomorrow's start


def test_window_over_midnight_and_in_a_time_zone():
    night = cron(start="0 22 * * *", end="0 6 * * *")
    assert cron_active(night, at(23)) and cron_active(night, at(3))
    assert not cron_active(night, at(12))
    # 08:00 in Kolkata (+05:30) is 02:30 UTC
    india = cron(timezone="Asia/Kolkata")
    assert not cron_active(india, at(2, 29)) and cron_active(india, at(2, 30))


def test_value_is_desired_inside_and_one_outside_on_the_start_time_clock():
    # t=0 is 06:00 UTC: the window opens 2 h into the run
    reader = CronReader(cron(), datetime(2026, 1, 1, 6, tzinfo=UTC))
    assert reader.value(7199.0) == 1.0
    assert reader.value(7200.0) == 6.0
    assert reader.value(14 * 3600.0 - 1) == 6.0
    assert reader.value(14 * 3600.0) == 1.0


def test_bad_triggers_are_refused():
    with pytest.raises(ValidationError, match="start and end must differ"):
        cron(end="0 8 * * *")
    with pytest.raises(ValidationError, match="unknown time zone"):
        cron(timezone="Mars/Olympus")
    with pytest.raises(ValidationError, match="cron schedule"):
        cron(start="0 25 * * *")


def test_generated_hpa_has_the_cron_metric_at_average_value_one():
    p = KedaParams(min_replica_count=1, max_replica_count=10, triggers=(
        {"query": {"metric": Q, "aggregation": "sum"}, "threshold": 4}, cron().model_dump()))
    metrics = generated_hpa_params(p).metrics
    assert metrics[1].type == "External"
    assert (metrics[1].target.type, metrics[1].target.value) == ("AverageValue", 1.0)
    assert metrics[1].query.metric == "s1-cron-Etc/UTC-08xxx-020xxx"


def test_hpa_takes_the_max_of_cron_and_the_reactive_trigger():
    p = KedaParams(min_replica_count=1, max_replica_count=20, triggers=(
        {"query": {"metric": Q, "aggregation": "sum"}, "threshold": 4}, cron().model_dump()))
    context = AutoscalerContext(start_time=datetime(2026, 1, 1, 7, 50, tzinfo=UTC))
    hpa = build_autoscalers(p, context)[1]
    # 2 replicas, queue 8 -> the queue proposes 2; at 07:50 the cron proposes 1 (outside)
    log = drive(hpa, lambda t, n: view(t, n, pods(Q, [4.0] * n)), start=2, until_s=900)
    # 10 minutes in it is 08:00: the cron window asks for 6; without a behavior the HPA's
    # scale-up limit is max(2 x current, 4) a sync, so 2 -> 4 -> 6
    assert log[:2] == [(600.0, 4), (615.0, 6)]
    # the queue above the cron's level wins: 6 pods with 6 waiting each -> 36 / 4 = 9
    hpa2 = build_autoscalers(p, context)[1]
    log = drive(hpa2, lambda t, n: view(t, n, pods(Q, [6.0] * n)), start=6, until_s=700)
    assert log[0] == (0.0, 9)


def test_without_cron_triggers_keda_builds_as_before():
    p = KedaParams(triggers=({"query": {"metric": Q}, "threshold": 3},))
    assert [c.name for c in build_autoscalers(p)] == ["keda-operator", "keda-hpa"]


@settings(max_examples=60, deadline=None)
@given(minute=st.integers(0, 59), hour=st.integers(0, 23),
       offset_s=st.integers(0, 3 * 86400))
def test_next_hit_is_the_first_matching_minute_strictly_after(minute, hour, offset_s):
    expr = f"{minute} {hour} * * *"
    after = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=offset_s)
    hit = next_hit(expr, after, timedelta(days=2))
    assert hit is not None and hit > after and (hit.hour, hit.minute) == (hour, minute)
    assert hit - after <= timedelta(days=1)


def test_decision_log_names_an_unnamed_cron_trigger_as_keda_does():
    """KEDA names an unnamed trigger's metric s<index>-<its scaler's metric name>: the cron
    trigger is s1-cron-<zone>-<start>-<end>, not s1-prometheus (a merge once logged it so)."""
    p = KedaParams(min_replica_count=1, max_replica_count=20, triggers=(
        {"query": {"metric": Q, "aggregation": "sum"}, "threshold": 4}, cron().model_dump()))
    context = AutoscalerContext(start_time=datetime(2026, 1, 1, 8, tzinfo=UTC))
    operator = build_autoscalers(p, context)[0]
    state = operator.initial_state()
    _, state = operator.decide(view(0.0, 2, pods(Q, [4.0, 4.0])), state)
    names = [t["name"] for t in operator.explain(view(0.0, 2, pods(Q, [4.0, 4.0])), state)[
        "triggers"]]
    assert names == ["s0-prometheus", "s1-cron-Etc/UTC-08xxx-020xxx"]
