"""A replica's running requests: admitted and not finished, prefilling or decoding.

vLLM V1's scheduler keeps them in one list in admission order (`Scheduler.running`,
`vllm/v1/core/sched/scheduler.py`) and preempts from its end, the newest first; so does this
set, with the prefilling ones among them in a second list, also in admission order (a step's
prefill chunks go to the oldest first).

A request's state on its replica lives in two request-table columns, one for every replica
(a request runs on one replica at a time): `decode_g0` (the step count at which its decode
began, NOT_DECODING when it is not decoding) and `prefill_left` (prompt tokens still to
compute, NOT_PREFILLING when it is not prefilling). A request runs here while either says so.

A finished request is left in the list until the finished ones are half of it, for speed:
see docs/hot-path.md.
"""

from __future__ import annotations

from typing import Final

from gpuscale.serving.requests_table import NOT_DECODING, NOT_PREFILLING

# The list is compacted once it holds this many entries beyond twice the live count.
_COMPACT_SLACK: Final = 64


class RunningSet:
    """One replica's running requests in admission order (`rids`, finished ones left in place
    until compacted; `num_running` live), and the prefilling ones (`prefilling`)."""

    __slots__ = ("decode_g0", "num_running", "prefill_left", "prefilling", "rids")

    def __init__(self, decode_g0: list[int], prefill_left: list[int]) -> None:
        # The request table's state columns (`RequestTable.decode_g0`, `prefill_left`), held
        # here rather than read through the table at each call; a fork maps them to its twin
        # table's (core/fork.py).
        self.decode_g0 = decode_g0
        self.prefill_left = prefill_left
        self.rids: list[int] = []
        self.num_running = 0
        self.prefilling: list[int] = []

    def fork_blank(self) -> RunningSet:
        """A set for a fork of the replica to fill (core/fork.py)."""
        return RunningSet(self.decode_g0, self.prefill_left)

    def is_running(self, rid: int) -> bool:
        """Whether `rid`, a request routed here, runs here now: decoding, or prefilling. A
        finished request is neither (it left decode, or never reached it); a preempted or
        handed-off one was removed from `rids`, so an entry there is never another
        replica's."""
        return self.decode_g0[rid] != NOT_DECODING or self.prefill_left[rid] >= 0

    def in_order(self) -> list[int]:
        """The running requests, in admission order."""
        return [rid for rid in self.rids if self.is_running(rid)]

    def add(self, rid: int) -> None:
        """`rid` was admitted: it runs, the newest."""
        self.rids.append(rid)
        self.num_running += 1

    def finish_one(self) -> None:
        """One running request finished: its columns say so already; its entry stays in
        `rids` until compacted. A completion costs no removal (a dict's delete boxed the id
        and freed the key, ~450 instructions a request)."""
        self.num_running -= 1
        self._compact_if_sparse()

    def _compact_if_sparse(self) -> None:
        """Drop the finished entries once the list is over twice the live count plus the
        slack (after any removal: a finish, a preemption, a hand-off)."""
        if len(self.rids) >= 2 * self.num_running + _COMPACT_SLACK:
            self.rids = self.in_order()

    def remove(self, rid: int) -> None:
        """`rid` left for another replica (a prefill replica's hand-off): out of the list, as
        the id may come back here later (an eviction's retry)."""
        self.rids.remove(rid)
        self.num_running -= 1
        self._compact_if_sparse()

    def pop_newest(self) -> int:
        """Remove and return the newest running request (a preemption's victim). Only called
        while one runs."""
        rids = self.rids
        while True:
            rid = rids.pop()
            if self.is_running(rid):  # else a finished one left in place
                self.num_running -= 1
                self._compact_if_sparse()
                return rid

    def start_prefill(self, rid: int, tokens_to_compute: int) -> None:
        """Admitted `rid` prefills `tokens_to_compute` tokens, after the older prefills."""
        self.prefill_left[rid] = tokens_to_compute
        self.prefilling.append(rid)

    def end_prefill(self, rid: int) -> None:
        """`rid` prefills no more (done, or preempted): found from the front of `prefilling`,
        where a step's chunks are."""
        self.prefill_left[rid] = NOT_PREFILLING
        order = self.prefilling
        j = 0
        while order[j] != rid:
            j += 1
        order.pop(j)

    def prefill_tokens_left(self) -> int:
        """Prompt tokens the prefilling requests still have to compute."""
        left = self.prefill_left
        total = 0
        for rid in self.prefilling:
            total += left[rid]
        return total

    def evict(self) -> list[int]:
        """Stop every running request (the pod is gone): their columns say they run nowhere
        and the set is empty. Returns them in admission order."""
        running = self.in_order()
        for rid in running:
            self.decode_g0[rid] = NOT_DECODING
        for rid in self.prefilling:
            self.prefill_left[rid] = NOT_PREFILLING
        self.rids.clear()
        self.num_running = 0
        self.prefilling.clear()
        return running
