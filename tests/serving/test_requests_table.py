"""The request table's hot-path token lists (serving/requests_table.py)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gpuscale.serving.requests_table import RequestTable, shared_int_list
from gpuscale.workloads.base import Requests


@given(hnp.arrays(np.int64, st.integers(0, 300),
                  elements=st.one_of(st.integers(0, 5000), st.integers(-3, 3),
                                     st.integers(1 << 22, 1 << 40))))
def test_shared_int_list_is_tolist_with_one_object_per_small_value(values):
    out = shared_int_list(values)
    assert out == values.tolist() and all(type(v) is int for v in out)
    if len(values) and values.min() >= 0 and values.max() <= 1 << 21:
        # Equal small counts are one object: the list costs a pointer per request.
        first = {}
        for v in out:
            assert first.setdefault(v, v) is v


def test_the_table_lists_match_its_numpy_columns():
    requests = Requests(arrival_s=np.array([0.0, 0.5, 1.0]),
                        prompt_tokens=np.array([700, 12, 700]),
                        output_tokens=np.array([3, 400, 1]))
    table = RequestTable(requests)
    cols = table.columns()
    assert table.prompt_tokens_list == cols.prompt_tokens.tolist() == [700, 12, 700]
    assert table.output_tokens_list == cols.output_tokens.tolist() == [3, 400, 1]
    assert table.prompt_tokens_list[0] is table.prompt_tokens_list[2]


def test_take_recently_completed_hands_over_each_completion_once():
    # The scrape drains the completions through this: what it took must not change when the
    # table records more, and nothing is handed over twice.
    table = RequestTable(Requests(np.zeros(3), np.array([1, 2, 3]), np.array([4, 5, 6])))
    for rid in (2, 0):
        table.complete(rid, 1.0)
        table.recently_completed.append(rid)  # as the replica records a completion
    taken = table.take_recently_completed()
    assert taken == [2, 0]
    table.recently_completed.append(1)
    assert taken == [2, 0]
    assert table.take_recently_completed() == [1]
    assert table.take_recently_completed() == []
