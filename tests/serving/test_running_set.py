"""The running set's list of admitted requests keeps finished entries only up to its bound."""

from __future__ import annotations

import pytest

from gpuscale.serving.requests_table import NOT_DECODING, NOT_PREFILLING
from gpuscale.serving.running_set import RunningSet

_SLACK = 64  # running_set._COMPACT_SLACK


def _mostly_finished(total: int, live: int) -> tuple[RunningSet, list[int]]:
    """`total` requests admitted and decoding, then all but the `live` newest finished."""
    decode_g0 = [0] * total
    running = RunningSet(decode_g0, [NOT_PREFILLING] * total)
    for rid in range(total):
        running.add(rid)
    for rid in range(total - live):
        decode_g0[rid] = NOT_DECODING
        running.finish_one()
    return running, decode_g0


@pytest.mark.parametrize("leave", ["pop_newest", "remove"])
def test_a_preemption_or_hand_off_keeps_the_list_within_its_bound(leave):
    # 71 entries, 4 live: within 2 x 4 + 64, so nothing was compacted. One leaving by a
    # preemption (the newest) or a hand-off makes it 70 entries for 3 live: over the bound.
    running, _ = _mostly_finished(2 * 4 + _SLACK - 1, 4)
    assert len(running.rids) == 71 and running.num_running == 4
    newest = running.rids[-1]
    if leave == "pop_newest":
        assert running.pop_newest() == newest
    else:
        running.remove(newest)
    assert running.num_running == 3
    assert len(running.rids) < 2 * running.num_running + _SLACK
    assert running.in_order() == running.rids == [67, 68, 69]


def test_finished_entries_are_left_in_place_below_the_bound():
    running, _ = _mostly_finished(70, 40)
    assert len(running.rids) == 70 and running.in_order() == list(range(30, 70))
