"""A trace as a history (issue 27): fit and check windows, the daily profile, and the cron
schedule learned from it."""

from __future__ import annotations

import numpy as np
import pytest

from gpuscale.errors import UserInputError
from gpuscale.plan.history import (
    Window,
    busiest_window,
    daily_profile_rps,
    fill_unseen,
    split_history,
)
from gpuscale.plan.schedule import Sizing, cron_windows, learned_schedule, minute_wants

ONE = Sizing(1.0, 1.0, 2.0, 1.0)  # one replica per request/s at every rate

DAY = 86400.0


def arrivals(rate_per_s: float, end_s: float) -> np.ndarray:
    return np.arange(0.0, end_s, 1.0 / rate_per_s)


def test_a_day_holds_out_its_last_fifth_and_two_days_their_last_day():
    one = split_history(arrivals(1, DAY), check_s=None, check_frac=0.2,
                        other_check_end_s=None, source="in.yaml")
    assert (one.fit.end_s, one.check.start_s, one.check.end_s) == (69120.0, 69120.0, DAY)
    two = split_history(arrivals(1, 2 * DAY + 100), check_s=None, check_frac=0.2,
                        other_check_end_s=None, source="in.yaml")
    assert two.check.duration_s == DAY and two.fit.end_s == two.check.start_s


def test_a_history_shorter_than_the_held_out_part_is_one_clear_error():
    with pytest.raises(UserInputError) as info:
        split_history(arrivals(1, 3600), check_s=7200, check_frac=0.2, other_check_end_s=None,
                      source="in.yaml")
    message = str(info.value)
    assert "\n" not in message and "in.yaml" in message and "simulation.check_s" in message
    assert info.value.exit_code == 2


def test_another_trace_is_the_check_and_the_whole_trace_is_fitted():
    h = split_history(arrivals(1, 3600), check_s=None, check_frac=0.2, other_check_end_s=1800.0,
                      source="in.yaml")
    assert h.check_is_other_trace and h.fit.end_s == 3600.0 and h.check.end_s == 1800.0


def test_busiest_window_finds_the_burst():
    quiet, burst = arrivals(1, 7200), 3600 + arrivals(10, 600)
    a = np.sort(np.concatenate([quiet, burst]))
    w = busiest_window(a, Window(0, 7200, "fit"), 600)
    assert (w.start_s, w.end_s) == (3600.0, 4200.0)


def test_daily_profile_is_per_slot_of_the_utc_day_and_fills_unseen_slots():
    # 2 req/s from 00:00 to 02:00, then 6 req/s to 03:00; t=0 is 01:00 UTC
    a = np.concatenate([arrivals(2, 7200), 7200 + arrivals(6, 3600)])
    profile = daily_profile_rps(a, Window(0, 10800, "fit"), 3600.0, 1800.0, 60.0)
    assert np.isnan(profile[0]) and np.isnan(profile[1])  # 00:00-01:00 never seen
    assert profile[2:6] == pytest.approx([2, 2, 2, 2])
    assert profile[6:8] == pytest.approx([6, 6])
    filled = fill_unseen(profile)
    assert filled[8:] == pytest.approx(6) and filled[0] == pytest.approx(6)


def test_schedule_arrives_a_lead_before_the_busy_slot():
    profile = np.full(48, 2.0)
    profile[20:24] = 6.0  # 10:00-12:00 UTC
    floor, windows = learned_schedule(profile, ONE, 1.0, lead_s=900.0, ceiling=100)
    assert floor == 2
    assert [(w.start, w.end, w.desired_replicas) for w in windows] == [
        ("45 9 * * *", "0 12 * * *", 6)]


def test_schedule_across_midnight_is_one_window():
    wants = np.full(1440, 2)
    wants[-60:] = 5
    wants[:30] = 5
    assert [(w.start, w.end, w.desired_replicas) for w in cron_windows(wants, 2)] == [
        ("0 23 * * *", "30 0 * * *", 5)]


def test_wants_are_capped_and_never_below_one():
    wants = minute_wants(np.array([0, 50] * 24), 0.0)
    assert wants.min() >= 0
    floor, _ = learned_schedule(np.zeros(48), ONE, 1.0, 0.0, ceiling=4)
    assert floor == 1
    _, windows = learned_schedule(np.full(48, 100.0), ONE, 1.0, 0.0, ceiling=4)
    assert windows == ()  # 4 all day: the floor, no window


def test_quiet_hours_get_more_replicas_per_request_than_busy_ones():
    sizing = Sizing(quiet_rps=2.0, quiet_per_rps=1.0, busy_rps=10.0, busy_per_rps=0.6)
    got = sizing.replicas(np.array([1.0, 2.0, 6.0, 10.0, 20.0]))
    assert got == pytest.approx([1.0, 2.0, 6 * 0.8, 6.0, 12.0])
