"""KAI fair share, checked against values computed by hand from the rules in
../shared/reference/layer2-scheduling.md 2.6 (quota first, then priority, then weights)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gpuscale.cluster.groups import Queue
from gpuscale.scheduling.queues import fair_shares


def qs(*queues: Queue) -> dict[str, Queue]:
    return {q.name: q for q in queues}


TEAMS = qs(Queue("team-a", quota_gpus=16), Queue("team-b", quota_gpus=8))


def test_two_teams_hand_values():
    # team-a idle: team-b may use the whole pool (it asks for 40)
    assert fair_shares(TEAMS, {"team-a": 0, "team-b": 40}, 32) == {"team-a": 0, "team-b": 32}
    # a asks 16: quotas 16 + 8, leftover 8 goes to b (a is satisfied) -> 16 / 16
    assert fair_shares(TEAMS, {"team-a": 16, "team-b": 40}, 32) == {"team-a": 16, "team-b": 16}
    # a asks 24: quotas 16 + 8, leftover 8 split 1:1 -> 20 / 12
    assert fair_shares(TEAMS, {"team-a": 24, "team-b": 40}, 32) == {"team-a": 20, "team-b": 12}


def test_over_quota_weights_split_leftover():
    queues = qs(Queue("q1", over_quota_weight=2), Queue("q2", over_quota_weight=1))
    shares = fair_shares(queues, {"q1": 100, "q2": 100}, 30)
    assert shares["q1"] == 20 and shares["q2"] == 10


def test_satisfied_queue_drops_out_and_rest_is_redistributed():
    queues = qs(Queue("q1", over_quota_weight=1), Queue("q2", over_quota_weight=1))
    shares = fair_shares(queues, {"q1": 4, "q2": 100}, 30)
    assert shares["q1"] == 4 and abs(shares["q2"] - 26) < 1e-9


def test_higher_priority_gets_leftover_first():
    queues = qs(Queue("hi", priority=200), Queue("lo", priority=100, quota_gpus=2))
    shares = fair_shares(queues, {"hi": 25, "lo": 100}, 30)
    # quota first (lo 2), then hi takes all it asks (25), lo the rest (3)
    assert shares == {"hi": 25, "lo": 5}


def test_limit_caps_fair_share():
    queues = qs(Queue("capped", limit_gpus=5), Queue("free"))
    shares = fair_shares(queues, {"capped": 100, "free": 100}, 30)
    assert shares["capped"] == 5 and abs(shares["free"] - 25) < 1e-9


def test_hierarchy_divides_parent_share_among_children():
    queues = qs(Queue("dept", quota_gpus=10), Queue("other", quota_gpus=10),
                Queue("c1", parent="dept", over_quota_weight=1),
                Queue("c2", parent="dept", over_quota_weight=3))
    shares = fair_shares(queues, {"c1": 100, "c2": 100, "other": 100}, 40)
    # top: 10 + 10 quota, 20 left split 1:1 -> dept 20, other 20; dept's 20 split 1:3
    assert shares["dept"] == 20 and shares["other"] == 20
    assert shares["c1"] == 5 and shares["c2"] == 15


@given(st.lists(st.tuples(st.floats(0, 20), st.floats(0, 5), st.floats(0, 50),
                          st.sampled_from([100, 200])), min_size=1, max_size=5),
       st.floats(0, 100))
def test_invariants(rows, total):
    queues = {f"q{i}": Queue(f"q{i}", quota_gpus=quota, over_quota_weight=w, priority=prio)
              for i, (quota, w, _req, prio) in enumerate(rows)}
    requested = {f"q{i}": req for i, (_q, _w, req, _p) in enumerate(rows)}
    shares = fair_shares(queues, requested, total)
    assert sum(shares.values()) <= total + 1e-6
    for name, share in shares.items():
        assert -1e-9 <= share <= requested[name] + 1e-6
    if total >= sum(requested.values()) and all(
            q.over_quota_weight > 0 or requested[q.name] <= q.quota_gpus for q in queues.values()):
        for name, share in shares.items():
            assert abs(share - requested[name]) < 1e-6
