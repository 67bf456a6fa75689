"""A replica's waiting queue: the requests routed to it and not admitted yet, first come first.

vLLM V1 keeps them in a `RequestQueue` (`vllm/v1/core/sched/request_queue.py`, the FCFS one a
deque) and puts a preempted request back at its head (`prepend_request`); this queue does the
same and keeps what the replica reads of it per step or per scrape:

- the sum of the waiting prompts' tokens (`prompt_tokens`, the input of the
  gpuscale:num_prefill_tokens_waiting series), kept as the queue changes so a scrape does not
  walk every queue;
- which waiting requests arrived with their KV already computed (`kv_ready`: a decode
  replica of a prefill/decode split admits them straight into decode);
- how many tokens a preempted request had generated (`resumed`), from its preemption until
  its recompute is done: its prefill recomputes prompt + those tokens.

A list and a head index, not a deque, for speed: see docs/hot-path.md.
"""

from __future__ import annotations

from typing import Final

# The consumed prefix rids[:head] is dropped once it is this long and half the list: the list
# then stays within twice the waiting count plus this, and a drop moves what is left once.
_COMPACT_AT: Final = 64


class WaitingQueue:
    """One replica's waiting requests, head first: `rids[head:]`."""

    __slots__ = ("head", "kv_ready", "prompt_tokens", "resumed", "rids")

    def __init__(self) -> None:
        self.rids: list[int] = []
        self.head = 0
        self.prompt_tokens = 0
        self.kv_ready: set[int] = set()
        self.resumed: dict[int, int] = {}

    def fork_blank(self) -> WaitingQueue:
        """An empty queue for a fork of the replica to fill (core/fork.py)."""
        return WaitingQueue()

    def count(self) -> int:
        return len(self.rids) - self.head

    def in_order(self) -> list[int]:
        """The waiting request ids, head first."""
        return self.rids[self.head:]

    def first(self) -> int:
        """The head's request id (the queue is not empty)."""
        return self.rids[self.head]

    def append(self, rid: int, prompt_tokens: int, kv_ready: bool) -> None:
        """`rid` (of `prompt_tokens`) joins the tail; `kv_ready`: its KV came computed."""
        if kv_ready:
            self.kv_ready.add(rid)
        self.rids.append(rid)
        self.prompt_tokens += prompt_tokens

    def has_kv(self, rid: int) -> bool:
        """Whether waiting `rid` arrived with its KV computed. The set is empty but in a
        prefill/decode split: tested first, as a lookup boxes the id to hash it."""
        return len(self.kv_ready) != 0 and rid in self.kv_ready

    def pop_first(self, prompt_tokens: int) -> None:
        """Take the head (of `prompt_tokens`) off the queue: it was admitted."""
        self.prompt_tokens -= prompt_tokens
        head = self.head + 1
        if head >= _COMPACT_AT and 2 * head >= len(self.rids):
            del self.rids[:head]
            head = 0
        self.head = head

    def pop_first_with_kv(self, rid: int, prompt_tokens: int) -> None:
        """`pop_first` of a head whose KV came computed (`has_kv`)."""
        self.pop_first(prompt_tokens)
        self.kv_ready.discard(rid)

    def drop_first(self, rid: int, prompt_tokens: int) -> None:
        """Take the head `rid` off the queue for good (it timed out or can never fit)."""
        self.pop_first(prompt_tokens)
        self.resumed.pop(rid, None)
        self.kv_ready.discard(rid)

    def push_front(self, rid: int, prompt_tokens: int, generated: int) -> None:
        """Put preempted `rid` (of `prompt_tokens`, `generated` output tokens so far) back at
        the head, as vLLM's `prepend_request`."""
        self.prompt_tokens += prompt_tokens
        if generated:
            self.resumed[rid] = generated
        if self.head:
            self.head -= 1
            self.rids[self.head] = rid
        else:
            self.rids.insert(0, rid)

    def resumed_tokens(self, rid: int) -> int:
        """Tokens `rid` had generated before it was preempted (0 if it never was). The dict is
        empty until a preemption: tested first, as a lookup boxes the id to hash it."""
        resumed = self.resumed
        return resumed.get(rid, 0) if len(resumed) else 0

    def take_resumed_tokens(self, rid: int) -> int:
        """`resumed_tokens`, forgotten: `rid`'s recompute is done."""
        resumed = self.resumed
        return resumed.pop(rid, 0) if len(resumed) else 0

    def drop_newest(self, count: int, prompt_tokens: int) -> None:
        """Remove the `count` newest waiting requests, of `prompt_tokens` in all (a fork of
        the oracle's probe returns to its first copy of the mix, serving/bench.py)."""
        del self.rids[len(self.rids) - count:]
        self.prompt_tokens -= prompt_tokens

    def clear(self) -> None:
        self.rids = []
        self.head = 0
        self.prompt_tokens = 0
        self.kv_ready.clear()
        self.resumed.clear()
