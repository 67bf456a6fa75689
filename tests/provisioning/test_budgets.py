"""Disruption budgets: percentage rounding, allowance arithmetic, cron schedules."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuscale.cron import cron_matches, parse_cron
from gpuscale.provisioning.karpenter.budgets import (
    UNLIMITED,
    allowed_disruptions,
    budget_active,
    budget_nodes,
)
from gpuscale.provisioning.karpenter.nodepool import Budget

MONDAY = datetime(2026, 1, 5, tzinfo=timezone.utc)  # 2026-01-05 is a Monday
H = 3600.0


@pytest.mark.parametrize(("nodes", "total", "expected"), [
    ("10%", 0, 0), ("10%", 1, 1), ("10%", 10, 1), ("10%", 11, 2), ("10%", 19, 2),
    ("50%", 3, 2), ("100%", 7, 7), ("0%", 9, 0), ("3", 100, 3), ("0", 5, 0),
])
def test_percentages_round_up(nodes, total, expected):
    assert budget_nodes(Budget(nodes=nodes), total) == expected


@given(st.integers(0, 100), st.integers(0, 5000))
def test_percentage_is_smallest_integer_not_below_exact_share(pct, total):
    allowed = budget_nodes(Budget(nodes=f"{pct}%"), total)
    exact = Fraction(total * pct, 100)
    assert allowed >= exact and allowed - 1 < exact


def test_allowance_subtracts_deleting_and_not_ready_and_takes_minimum():
    budgets = [Budget(nodes="20%"), Budget(nodes="5")]
    # 20% of 30 = 6 -> 6 - 2 deleting - 1 not ready = 3; "5" -> 2; minimum wins.
    assert allowed_disruptions(budgets, "Empty", total=30, deleting=2, not_ready=1, now_s=0,
                               start_utc=MONDAY) == 2
    assert allowed_disruptions([Budget(nodes="1")], "Empty", total=3, deleting=2, not_ready=0,
                               now_s=0, start_utc=MONDAY) == 0  # clamped, never negative


def test_reasons_filter_and_no_active_budget_means_unlimited():
    budgets = [Budget(nodes="0", reasons=["Underutilized"])]
    assert allowed_disruptions(budgets, "Underutilized", total=4, deleting=0, not_ready=0,
                               now_s=0, start_utc=MONDAY) == 0
    assert allowed_disruptions(budgets, "Empty", total=4, deleting=0, not_ready=0, now_s=0,
                               start_utc=MONDAY) == UNLIMITED


def test_weekday_business_hours_schedule():
    budget = Budget(nodes="0", schedule="0 9 * * 1-5", duration="8h")
    assert not budget_active(budget, 8 * H + 59 * 60, MONDAY)
    assert budget_active(budget, 9 * H, MONDAY)
    assert budget_active(budget, 16 * H + 59 * 60, MONDAY)
    assert not budget_active(budget, 17 * H, MONDAY)  # active on [hit, hit + duration)
    saturday_10am = 5 * 24 * H + 10 * H
    assert not budget_active(budget, saturday_10am, MONDAY)


def test_schedule_window_crosses_midnight():
    budget = Budget(nodes="0", schedule="0 22 * * *", duration="4h")
    assert budget_active(budget, 25 * H, MONDAY)  # Tuesday 01:00, hit Monday 22:00
    assert not budget_active(budget, 26 * H, MONDAY)
    assert not budget_active(budget, 21 * H, MONDAY)  # before the first hit


def test_macros_steps_lists_and_names():
    assert parse_cron("@daily") == parse_cron("0 0 * * *")
    assert cron_matches("*/15 * * * *", MONDAY + timedelta(minutes=45))
    assert not cron_matches("*/15 * * * *", MONDAY + timedelta(minutes=50))
    assert cron_matches("0 8,20 * * MON", MONDAY + timedelta(hours=20))
    assert not cron_matches("0 8,20 * * TUE", MONDAY + timedelta(hours=20))
    assert cron_matches("0 0 * * 0", MONDAY - timedelta(days=1))
    assert cron_matches("0 0 ? * SUN", MONDAY - timedelta(days=1))  # robfig: `?` is `*`


def test_day_of_month_or_day_of_week_when_both_restricted():
    # Standard cron: "1st of the month OR Monday" when neither day field is '*'.
    thursday_jan_1 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    tuesday = MONDAY + timedelta(days=1)
    assert cron_matches("0 0 1 * 1", thursday_jan_1)
    assert cron_matches("0 0 1 * 1", MONDAY)
    assert not cron_matches("0 0 1 * 1", tuesday)
    # With a '*' day-of-week, only the day of month counts.
    assert not cron_matches("0 0 1 * *", MONDAY)


@pytest.mark.parametrize("bad", ["* * * *", "61 * * * *", "0 0 * * 8", "*/0 * * * *",
                                 "0 0 * * 7", "@fortnightly", "0 0 5-1 * *", "1-2-3 * * * *"])
def test_malformed_cron_is_rejected(bad):
    with pytest.raises(ValueError):
        parse_cron(bad)


def test_budget_model_checks_schedule_and_duration_together():
    with pytest.raises(ValueError):
        Budget(nodes="1", schedule="@daily")
    with pytest.raises(ValueError):
        Budget(nodes="110%")
    assert Budget(nodes=3).nodes == "3"
