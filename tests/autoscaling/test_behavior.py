"""Small pure functions of behavior.py, checked against hand arithmetic."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.autoscaling.behavior import (
    ResolvedRules,
    ScalingPolicy,
    Stamped,
    policy_limit,
    resolve_rules,
    stabilize_legacy,
    stabilize_with_behavior,
    store_scale_event,
)

MINUTE = ScalingPolicy(type="Pods", value=2, period_s=60)


def test_period_start_adds_back_recent_removals():
    rules = ResolvedRules(0.0, "Max", (MINUTE,), None)
    removed = (Stamped(100.0, 4),)  # 4 pods removed 20 s ago
    # periodStart = 6 - 0 + 4 = 10, Pods policy +2 -> 12.
    assert policy_limit(6, (), removed, rules, 120.0, scale_up=True) == 12
    # 60 s after the removal it has left the period: 6 + 2 = 8.
    assert policy_limit(6, (), removed, rules, 160.0, scale_up=True) == 8


def test_defaults_of_omitted_rules():
    up = resolve_rules(None, scale_up=True, downscale_stabilization_s=300)
    down = resolve_rules(None, scale_up=False, downscale_stabilization_s=120)
    assert (up.stabilization_window_s, up.select_policy, up.longest_period_s) == (0.0, "Max", 15)
    assert {(p.type, p.value) for p in up.policies} == {("Pods", 4), ("Percent", 100)}
    assert (
        down.stabilization_window_s == 120.0
    )  # the controller flag fills an unset scaleDown window
    assert [(p.type, p.value) for p in down.policies] == [("Percent", 100)]


def test_window_edges_differ_between_paths():
    recs = (Stamped(0.0, 9),)
    assert (
        stabilize_legacy(recs, 300.0, 2, 300.0)[0] == 9
    )  # !Before(cutoff): exactly 300 s old counts
    up = resolve_rules(None, scale_up=True, downscale_stabilization_s=300)
    down = resolve_rules(None, scale_up=False, downscale_stabilization_s=300)
    assert (
        stabilize_with_behavior(recs, 300.0, 9, 2, up, down)[0] == 2
    )  # After(cutoff): it does not


@settings(max_examples=50, deadline=None)
@given(
    proposals=st.lists(st.integers(0, 50), min_size=50, max_size=300),
    window=st.sampled_from([0, 60, 300]),
)
def test_memory_stays_bounded(proposals, window):
    recs: tuple[Stamped, ...] = ()
    events: tuple[Stamped, ...] = ()
    for k, p in enumerate(proposals):
        _, recs = stabilize_legacy(recs, 15.0 * k, p, window)
        events = store_scale_event(events, 15.0 * k, 1, 60)
    # At most one entry per 15 s sync inside the window, plus the one being reused.
    assert len(recs) <= window // 15 + 2
    assert len(events) <= 60 // 15 + 2


def _stabilize_legacy_reference(recs, now_s, proposal, window_s):
    """The two-pass form `stabilize_legacy` had: max over the window, then
    `replace_or_append` of the aged-out entries."""
    from gpuscale.autoscaling.behavior import replace_or_append

    cutoff = now_s - window_s
    best = proposal
    for r in recs:
        if r.time_s >= cutoff:
            best = max(best, r.value)
    return best, replace_or_append(recs, lambda r: r.time_s < cutoff, Stamped(now_s, proposal))


@settings(max_examples=200, deadline=None)
@given(
    recs=st.lists(st.tuples(st.sampled_from([0.0, 15.0, 30.0, 45.0, 285.0, 300.0, 315.0]),
                            st.integers(0, 20)), max_size=12),
    now_s=st.sampled_from([300.0, 315.0, 600.0]),
    proposal=st.integers(0, 20),
    window_s=st.sampled_from([0.0, 15.0, 300.0]),
)
def test_stabilize_legacy_one_pass_equals_two_passes(recs, now_s, proposal, window_s):
    entries = tuple(Stamped(t, v) for t, v in recs)
    assert stabilize_legacy(entries, now_s, proposal, window_s) == \
        _stabilize_legacy_reference(entries, now_s, proposal, window_s)
