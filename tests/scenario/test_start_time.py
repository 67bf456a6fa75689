"""`start_time`: the wall-clock instant of simulated t=0 (time-of-day schedules read it)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from gpuscale.errors import UserInputError
from gpuscale.units import DEFAULT_START_TIME, wall_clock

from ..sim.scenarios import small_scenario


def test_default_is_midnight_utc_and_an_offset_is_kept():
    assert small_scenario().start_time == DEFAULT_START_TIME
    given = small_scenario(start_time="2026-03-02T09:30:00+01:00")
    assert given.start_time == datetime(2026, 3, 2, 8, 30, tzinfo=timezone.utc)
    assert wall_clock(given.start_time, 5400.0) == datetime(2026, 3, 2, 10, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize("bad", ["2026-03-02T09:30:00", "tomorrow"])
def test_a_time_without_an_offset_or_not_a_time_is_refused(bad):
    with pytest.raises(UserInputError, match="start_time"):
        small_scenario(start_time=bad)


def test_a_number_is_read_as_unix_seconds():
    assert small_scenario(start_time=86400).start_time == datetime(1970, 1, 2, tzinfo=timezone.utc)


def test_default_start_is_a_utc_midnight():
    assert DEFAULT_START_TIME.utcoffset() == timedelta(0)
    assert (DEFAULT_START_TIME.hour, DEFAULT_START_TIME.minute) == (0, 0)
