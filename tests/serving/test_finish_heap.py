"""The decode finish heap pops what `heapq` over (finish step, request id) pops, skipping the
entries of sequences that left decode (their decode_g0 column no longer gives that finish)."""

from __future__ import annotations

import heapq

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.serving.finish_heap import FinishHeap
from gpuscale.serving.requests_table import NOT_DECODING

_RIDS = 8  # few, so the same request is pushed, preempted and pushed again

# (op, rid, g): push rid to finish at g0 + output; preempt rid (its entry goes stale); pop
# what is due at step count g; read the next live finish.
ops = st.lists(st.tuples(st.sampled_from(["push", "preempt", "pop", "next"]),
                         st.integers(0, _RIDS - 1), st.integers(0, 300)), max_size=200)


@settings(max_examples=300, deadline=None)
@given(ops=ops, outputs=st.lists(st.integers(1, 60), min_size=_RIDS, max_size=_RIDS))
def test_pops_what_heapq_pops_and_skips_stale_entries(ops, outputs):
    decode_g0 = [NOT_DECODING] * _RIDS
    heap = FinishHeap(decode_g0, outputs)
    model: list[tuple[int, int]] = []  # live (finish_g, rid) only
    # A sequence that decodes again (after a preemption) starts from a later G0 than before,
    # as in the replica, so its old entry stays stale.
    last_g0 = [-1] * _RIDS
    for op, rid, g in ops:
        if op == "push" and decode_g0[rid] == NOT_DECODING and g > last_g0[rid]:
            decode_g0[rid] = last_g0[rid] = g
            heap.push(rid, g + outputs[rid])
            heapq.heappush(model, (g + outputs[rid], rid))
        elif op == "preempt" and decode_g0[rid] != NOT_DECODING:
            model.remove((decode_g0[rid] + outputs[rid], rid))
            heapq.heapify(model)
            decode_g0[rid] = NOT_DECODING
        elif op == "pop":
            want = heapq.heappop(model)[1] if model and model[0][0] <= g else -1
            assert heap.pop_due(g) == want
            if want >= 0:
                decode_g0[want] = NOT_DECODING  # it finished: the replica marks it so
        elif op == "next" and model:
            assert heap.next_finish_g() == model[0][0]
    assert heap.has_due(10**9) or not model
