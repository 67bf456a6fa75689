"""The decode finish heap: at which step each of a replica's decoding sequences finishes.

A sequence that entered decode at the replica's step count G0, with `output` tokens to
generate in all, finishes when the count reaches G0 + output (serving/replica.py keeps the
count G). The heap holds one `DecodeFinish` a sequence, least (finish_g, rid) first, so the
next finish is read without a walk and a stretch of pure decode up to it is one event.

A preempted sequence's entry stays in the heap (a removal from the middle would be a search):
it is stale once the request's `decode_g0` column (serving/requests_table.py) no longer gives
that finish step, and is dropped when it surfaces. Every read here skips stale entries, so
the replica sees only live ones.

The sifts are written out instead of `heapq` for speed: see docs/hot-path.md.
"""

from __future__ import annotations

from gpuscale._mypyc_hints import mypyc_attr


@mypyc_attr(acyclic=True)
class DecodeFinish:
    """A decoding sequence's entry: the step count at which it finishes and its request id
    (the tie-break: heap order is that of (finish_g, rid)). Never changed once made, so the
    copies of a heap (the oracle probe's fork, core/fork.py) can share them.

    Objects with native fields, not one `finish_g x span + rid` int a sequence through
    `heapq`: heapq compares ints through the generic rich comparison (~60 instructions
    each), a compiled sift reads two fields; an int key was one allocation a sequence too.
    Numbers only, so acyclic: not tracked by the cycle collector (docs/hot-path.md)."""

    __slots__ = ("finish_g", "rid")

    def __init__(self, finish_g: int, rid: int) -> None:
        self.finish_g = finish_g
        self.rid = rid


class FinishHeap:
    """One replica's decode finishes, least first (a binary min-heap over a list)."""

    __slots__ = ("decode_g0", "entries", "output_tokens")

    def __init__(self, decode_g0: list[int], output_tokens: list[int]) -> None:
        # The request table's two columns that tell a live entry from a stale one
        # (`RequestTable.decode_g0`, `output_tokens_list`), held here rather than read through
        # the table at each call: two attribute loads fewer a finish. A fork maps them to its
        # twin table's (core/fork.py).
        self.decode_g0 = decode_g0
        self.output_tokens = output_tokens
        self.entries: list[DecodeFinish] = []

    def fork_blank(self) -> FinishHeap:
        """A heap for a fork of the replica to fill (core/fork.py)."""
        return FinishHeap(self.decode_g0, self.output_tokens)

    def push(self, rid: int, finish_g: int) -> None:
        """A sequence starts decoding; it finishes when the step count reaches `finish_g`."""
        _sift_up(self.entries, DecodeFinish(finish_g, rid))

    def has_due(self, g: int) -> bool:
        """Whether an entry (live or stale) is due at step count `g`: the cheap test a step's
        end makes before `pop_due`."""
        entries = self.entries
        return len(entries) != 0 and entries[0].finish_g <= g

    def pop_due(self, g: int) -> int:
        """Remove and return the request id of a live sequence due at step count `g` (least
        first), or -1 when none is."""
        entries = self.entries
        decode_g0 = self.decode_g0
        output = self.output_tokens
        while entries and entries[0].finish_g <= g:
            entry = _pop_least(entries)
            rid = entry.rid
            if decode_g0[rid] + output[rid] == entry.finish_g:
                return rid
        return -1

    def next_finish_g(self) -> int:
        """The step count at which the next live sequence finishes; stale entries above it
        are dropped. Only called while some sequence decodes (one live entry at least)."""
        entries = self.entries
        decode_g0 = self.decode_g0
        output = self.output_tokens
        while True:
            first = entries[0]
            finish_g = first.finish_g
            rid = first.rid
            if decode_g0[rid] + output[rid] == finish_g:
                return finish_g
            _pop_least(entries)

    def clear(self) -> None:
        self.entries.clear()


def _sift_up(heap: list[DecodeFinish], entry: DecodeFinish) -> None:
    """Add `entry` to the binary min-heap `heap`."""
    heap.append(entry)
    i = len(heap) - 1
    finish_g = entry.finish_g
    rid = entry.rid
    while i > 0:
        parent = (i - 1) >> 1
        other = heap[parent]
        other_g = other.finish_g
        if other_g < finish_g or (other_g == finish_g and other.rid < rid):
            break
        heap[i] = other
        i = parent
    heap[i] = entry


def _pop_least(heap: list[DecodeFinish]) -> DecodeFinish:
    """Remove and return the least entry of the non-empty min-heap `heap` (sift down)."""
    top = heap[0]
    last = heap.pop()
    n = len(heap)
    if n == 0:
        return top
    finish_g = last.finish_g
    rid = last.rid
    i = 0
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        other = heap[child]
        if child + 1 < n:
            right = heap[child + 1]
            if right.finish_g < other.finish_g or (right.finish_g == other.finish_g
                                                   and right.rid < other.rid):
                child += 1
                other = right
        other_g = other.finish_g
        if finish_g < other_g or (finish_g == other_g and rid < other.rid):
            break
        heap[i] = other
        i = child
    heap[i] = last
    return top
