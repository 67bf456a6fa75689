"""Budget schedules read as Karpenter reads them: robfig/cron's ParseStandard behind the
NodePool CRD's pattern (kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.cron import CronError, cron_matches, parse_cron, schedule_problem
from gpuscale.provisioning.karpenter.nodepool import Budget

BOUNDS = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 6)]


@given(st.tuples(*[st.integers(lo, hi) for lo, hi in BOUNDS]))
def test_every_in_range_schedule_parses(values):
    expr = " ".join(map(str, values))
    assert schedule_problem(expr) is None
    sets, _, _ = parse_cron(expr)
    assert [min(s) for s in sets] == list(values)


@given(st.integers(0, 4), st.integers(60, 10**6))
def test_a_field_past_its_maximum_is_refused_by_name(index, value):
    fields = ["0", "0", "1", "1", "0"]
    fields[index] = str(value)
    with pytest.raises(CronError, match=f"end of range \\({value}\\) above maximum"):
        parse_cron(" ".join(fields))


@pytest.mark.parametrize("expr", ["not a cron", "@fortnightly", "", "@every 1h"])
def test_what_the_api_server_refuses(expr):
    assert "refused by the Kubernetes API" in schedule_problem(expr)


@pytest.mark.parametrize("expr", ["*/0 * * * *", "0 0 99 * *", "0 0 * * 7", "1 2 3 4 5 6"])
def test_accepted_by_the_api_but_unparseable_blocks_disruption_so_refused_at_load(expr):
    assert "allows no disruption for the pool" in schedule_problem(expr)
    with pytest.raises(ValueError, match="allows no disruption"):
        Budget(nodes="0", schedule=expr, duration="1h")


def test_question_mark_is_a_star_and_days_are_or_only_when_both_restricted():
    monday = datetime(2026, 1, 5, tzinfo=timezone.utc)
    assert cron_matches("0 0 ? * 1", monday)
    assert not cron_matches("0 0 ? * 1", monday + timedelta(days=1))
    # "1st OR Monday" when both are restricted; `*/1` counts as a star (robfig's starBit).
    assert cron_matches("0 0 1 * 1", monday)
    assert not cron_matches("0 0 1 */1 1", monday + timedelta(days=1))
    assert not cron_matches("0 0 */1 * 1", monday + timedelta(days=1))


_GO_PATTERN = __import__("re").compile(
    r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))\Z")


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet=" \t\nab@*/1", max_size=14))
def test_the_api_pattern_check_agrees_with_the_crd_regex(expr):
    from gpuscale.cron import api_accepts_schedule

    # `\s` of RE2 is [\t\n\f\r ]; on this alphabet Python's agrees. `\Z`: Go's `$`.
    assert api_accepts_schedule(expr) == bool(_GO_PATTERN.search(expr))


def test_a_huge_schedule_is_checked_in_linear_time():
    import time

    from gpuscale.cron import schedule_problem

    start = time.perf_counter()
    assert "refused by the Kubernetes API" in schedule_problem("x" * 100_000)
    assert time.perf_counter() - start < 2
