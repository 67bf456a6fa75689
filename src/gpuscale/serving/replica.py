"""One continuous-batching engine (vLLM V1 semantics), advanced from batch change to batch change.

Each engine step serves every decoding sequence one token and spends what is left of the token
budget (`max_num_batched_tokens`) on prefill chunks (chunked prefill), admitting waiting
requests FCFS while `max_num_seqs` and KV blocks allow. Steps that carry prefill are simulated
one by one (each changes the batch). A stretch of pure decode is advanced analytically: the
engine computes how many steps pass until the next sequence finishes or the KV cache runs out
(the step time grows linearly with the cached context, see `DecodeSegment`), and sets its one
timer there. An arrival in the middle of a stretch cuts it at the end of the step in
progress, where the newcomer joins, as it would in vLLM.

Bookkeeping uses a per-replica step counter G: a sequence that entered decode at G0 has
generated G - G0 tokens since, so finishing times are kept in a heap keyed by G (one
`DecodeFinish` a sequence: its finish_G and request id, compared as native fields), and the
total cached context is `decode_base + n_decode x G`, with no per-token or per-sequence loop.

KV approximation (documented in docs/serving.md): blocks in use = cached tokens / block_size
+ half a block per running sequence (the last block of each sequence is on average half full);
a request's whole prefill is reserved at admission. Preemption is by recompute, newest first.
With prompt block hashes, `prefix_cache` (serving/prefix_cache.py) is asked at admission how
much of the prompt is cached (that part is not computed), told which blocks each scheduled
chunk fills, and given a request's blocks back when it finishes or is preempted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, cast

from gpuscale.core import Priority, Simulation
from gpuscale.core.simulation import TimerOwner
from gpuscale.serving.performance import (
    ReplicaHardware,
    StepCost,
    segment_duration_s,
    segment_steps_within,
)
from gpuscale.serving.prefix_cache import PrefixCache
from gpuscale.serving.requests_table import NOT_DECODING, NOT_PREFILLING, RequestTable

# Final: the compiled hot path reads them as constants, not as module globals.
_IDLE: Final = 0
_STEP: Final = 1
_SEGMENT: Final = 2
# The engine's event priority as a plain int (an IntEnum member is a class attribute lookup
# and a generic int subclass each time it is read in the compiled build).
_ENGINE_PRIORITY: Final = int(Priority.ENGINE)


@dataclass(frozen=True)
class EngineConfig:
    max_num_seqs: int
    max_num_batched_tokens: int
    block_size: int
    num_blocks: int
    max_model_len: int
    request_timeout_s: float
    # "chunked" (vLLM V1, Sarathi): decodes and prefill chunks share each step's token budget.
    # "prefill_first" (vLLM V0's default scheduler, Vidur's `vllm`): waiting prompts run whole
    # in prefill-only steps (up to the budget) before any decode step; decodes wait meanwhile.
    # "whole_prompt" (TensorRT-LLM in-flight batching, chunked context off, its default): decodes
    # and prefills share a step, but a prompt is never split; one that does not fit the budget
    # left waits for the next step.
    batching: str = "chunked"
    # "max_utilization" (vLLM; TensorRT-LLM's MAX_UTILIZATION): admit while the KV in use fits,
    # preempt when it runs out. "guaranteed_no_evict" (TensorRT-LLM's default capacity
    # scheduler): admit only if the KV of the prompt and of every output token still to come
    # fits beside what the running requests have reserved, so nothing is ever preempted.
    admission: str = "max_utilization"
    # vLLM V1's automatic prefix caching (on by default since V1); it acts only on a trace
    # that carries prompt block hashes (serving/prefix_cache.py).
    enable_prefix_caching: bool = True

    @property
    def capacity_tokens(self) -> int:
        return self.num_blocks * self.block_size


class DecodeFinish:
    """A decoding sequence's entry in its replica's finish heap: the step count G at which it
    finishes and its request id (the tie-break: heap order is that of (finish_g, rid)). Never
    changed once made, so copies of a replica (the oracle probe's fork) can share them.
    Objects with native fields, not one `finish_g x span + rid` int a sequence: heapq compares
    ints through the generic rich comparison (~60 instructions each), a compiled sift reads
    two fields; an int key was one allocation a sequence too."""

    __slots__ = ("finish_g", "rid")

    def __init__(self, finish_g: int, rid: int) -> None:
        self.finish_g = finish_g
        self.rid = rid


class ReplicaEvents:
    """The requests whose first token this engine produced and those it completed since the
    last scrape (in order), kept only when the run exports per-pod request series
    (`vllm:time_to_first_token_seconds`, `vllm:request_success_total`, ...): the scrape
    drains both lists into those counters and histograms (metrics/prometheus.py). None on a
    replica when no series needs them: one test per first token and completion."""

    __slots__ = ("completions", "first_tokens")

    def __init__(self) -> None:
        self.first_tokens: list[int] = []
        self.completions: list[int] = []


def _push_finish(heap: list[DecodeFinish], entry: DecodeFinish) -> None:
    """Add `entry` to the binary min-heap `heap` (sift up)."""
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


def _pop_finish(heap: list[DecodeFinish]) -> DecodeFinish:
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


class Replica(TimerOwner):
    """A serving engine bound to its event loop and the shared request table."""

    __slots__ = (
        "G",
        "accepting",
        "busy_accum_s",
        "busy_since_s",
        "cfg",
        "cost",
        "decode_base",
        "events",
        "heap",
        "hw",
        "kv_ready",
        "load_log",
        "n_decode",
        "name",
        "no_evict",
        "num_running",
        "on_complete",
        "on_drained",
        "on_prefilled",
        "prefill_first",
        "prefill_reserved",
        "prefill_role",
        "prefilling",
        "prefix_cache",
        "queue",
        "queue_head",
        "reserved_tokens",
        "resume_generated",
        "role",
        "route_rank",
        "running",
        "seg_G0",
        "seg_first_s",
        "seg_slope_s",
        "seg_start_s",
        "seg_steps",
        "sim",
        "state",
        "step_budget",
        "step_chunks",
        "step_decodes",
        "step_start_s",
        "table",
        "timer",
        "ttft_observations",
        "waiting_prompt_tokens",
        "whole_prompts",
    )

    def __init__(self, name: str, hw: ReplicaHardware, cfg: EngineConfig, sim: Simulation,
                 table: RequestTable, cost: StepCost | None = None, role: str = "serve",
                 on_prefilled: Callable[[int, float], None] | None = None) -> None:
        self.name = name
        self.hw = hw
        self.cost = cost if cost is not None else StepCost(hw)
        self.cfg = cfg
        self.sim = sim
        self.table = table
        # The waiting queue, FCFS: queue[queue_head:] (a list and a head index, not a deque:
        # the compiled build reads, appends and pops a list natively; the consumed prefix is
        # dropped once it is half the list).
        self.queue: list[int] = []
        self.queue_head = 0
        # Sum of the waiting requests' prompt tokens (vllm:num_prefill_tokens_waiting's
        # input), kept as the queue changes so a scrape does not walk every queue.
        self.waiting_prompt_tokens = 0
        # The running requests (admitted, prefilling or decoding) in admission order, the
        # newest last (preemption takes it), with the finished ones left in place until they
        # are half the list (`is_running`, `_finish_running`): a completion costs no removal (a
        # dict's delete boxes the id and frees the key, ~450 instructions a request). Its
        # live count is `num_running`.
        self.running: list[int] = []
        self.num_running = 0
        # The prefilling requests in admission order (their tokens still to compute are
        # table.prefill_left[rid]).
        self.prefilling: list[int] = []
        # A decoding sequence's G0 (step count when its decode began) is table.decode_g0[rid].
        # Each decoding sequence's (finish_G, rid), least first (`_push_finish`); stale once
        # the sequence was preempted (its G0 then differs from finish_G - output, or it is
        # NOT_DECODING).
        self.heap: list[DecodeFinish] = []
        self.resume_generated: dict[int, int] = {}  # preempted rid -> tokens already generated
        self.G = 0
        self.decode_base = 0  # sum over decoding of (prompt + generated_before - G0)
        self.n_decode = 0
        self.prefill_reserved = 0  # sum of whole prefill lengths of prefilling sequences
        self.state = _IDLE
        # The end of the step or decode stretch in progress: one pending firing, replaced
        # whenever the plan changes (an arrival cuts a stretch, joins a planned step), so a
        # superseded end never runs (core/simulation.py timers).
        self.timer = sim.new_timer(self)
        # The decode stretch in progress (state _SEGMENT): its step-time line a + b k
        # (performance.py DecodeSegment's two numbers, kept here: no object per stretch).
        self.seg_first_s = 0.0
        self.seg_slope_s = 0.0
        self.seg_start_s = 0.0
        self.seg_G0 = 0
        self.seg_steps = 0
        self.busy_since_s = 0.0
        self.busy_accum_s = 0.0
        self.accepting = True
        self.on_drained: Callable[[Replica], None] | None = None
        self.step_start_s = 0.0  # a planned step may start in the future (after a cut)
        self.step_chunks: list[tuple[int, int, int]] = []
        self.step_budget = 0
        self.step_decodes = True  # False for a prefill-only step (prefill_first batching)
        self.prefill_first = cfg.batching == "prefill_first"
        self.whole_prompts = self.prefill_first or cfg.batching == "whole_prompt"
        self.no_evict = cfg.admission == "guaranteed_no_evict"
        self.reserved_tokens = 0  # guaranteed_no_evict: prompt + output of every running request
        # Disaggregation: a "prefill" replica hands each request off after its prefill
        # (on_prefilled); a "decode" replica admits requests whose KV arrived (kv_ready)
        # straight into decode.
        self.role = role
        self.prefill_role = role == "prefill"  # read per finished prefill: a bool, not a str ==
        self.on_prefilled = on_prefilled
        self.kv_ready: set[int] = set()
        # Closed-loop clients: told when their request is done (serving/bench.py).
        self.on_complete: Callable[[int, float], None] | None = None
        self.ttft_observations: list[float] = []  # drained by each metrics scrape
        self.events: ReplicaEvents | None = None  # per-pod request series (ReplicaEvents)
        # Automatic prefix caching (serving/prefix_cache.py), set by the fleet only when the
        # trace has prompt block hashes and engine.enable_prefix_caching is on; None costs
        # nothing but one test per admission, chunk and completion.
        self.prefix_cache: PrefixCache | None = None
        # The router's index (serving/router.py LeastOutstanding): while this replica is a
        # routing target, it appends itself to `load_log` whenever its outstanding() count
        # changes (enqueue, drop, completion, hand-off), and `route_rank` is its place in the
        # ready list (0 = not routed to).
        self.load_log: list[Replica] | None = None
        self.route_rank = 0

    # -- observation (metrics) -----------------------------------------------------------------
    def outstanding(self) -> int:
        """Waiting + running requests (the router's load)."""
        return self.num_waiting() + self.num_running

    def num_waiting(self) -> int:
        return len(self.queue) - self.queue_head

    def waiting_rids(self) -> list[int]:
        """The waiting queue, head first."""
        return self.queue[self.queue_head:]

    def running_rids(self) -> list[int]:
        """The running requests, in admission order."""
        return [rid for rid in self.running if self.is_running(rid)]

    def current_G(self, now_s: float) -> int:
        if self.state == _SEGMENT:
            done = segment_steps_within(self.seg_first_s, self.seg_slope_s,
                                        now_s - self.seg_start_s)
            return self.seg_G0 + min(done, self.seg_steps)
        return self.G

    def kv_tokens(self, now_s: float) -> float:
        return self.decode_base + self.n_decode * self.current_G(now_s) + self.prefill_reserved

    def kv_usage_frac(self, now_s: float) -> float:
        blocks = self.kv_tokens(now_s) / self.cfg.block_size + self.num_running / 2
        return min(1.0, blocks / self.cfg.num_blocks) if self.cfg.num_blocks else 1.0

    def is_busy(self) -> bool:
        """Executing a step or a decode stretch (DCGM sees the GPU busy)."""
        return self.state != _IDLE

    def busy_s(self, now_s: float) -> float:
        """Seconds spent executing steps so far (DCGM GPU_UTIL's duty cycle numerator)."""
        if self.state != _IDLE:
            return self.busy_accum_s + (now_s - self.busy_since_s)
        return self.busy_accum_s

    # -- inputs -------------------------------------------------------------------------------
    def enqueue(self, rid: int, now_s: float, kv_ready: bool = False) -> None:
        """A request reaches this engine's waiting queue; it joins at the next step boundary.

        `kv_ready`: its prompt's KV cache (and first token) came from a prefill replica.
        """
        if not kv_ready and self.table.prompt_tokens_list[rid] >= self.cfg.max_model_len:
            # vLLM's OpenAI server answers 400 ("maximum context length is N tokens") for a
            # prompt that leaves no room for one output token; it is never served.
            self.table.drop(rid, now_s, "exceeds_max_model_len")
            return
        if kv_ready:
            self.kv_ready.add(rid)
        self.queue.append(rid)
        self.waiting_prompt_tokens += self.table.prompt_tokens_list[rid]
        if self.load_log is not None:
            self.load_log.append(self)
        if self.state == _IDLE:
            self._plan(now_s)
        elif self.state == _SEGMENT:
            self._cut_segment(now_s)
        elif now_s <= self.step_start_s and self.num_waiting() == 1:
            self._join_planned_step()

    def enqueue_burst(self, rid: int, now_s: float) -> int:
        """`enqueue` request `rid` and the ones after it that arrive at the same instant (a
        client's burst: the oracle's probe queues its whole mix at t = 0); returns the first
        request id not enqueued (len(table) once all are in). Here, in the compiled build,
        not in the probe's interpreted loop."""
        table = self.table
        arrivals = table.arrival_s_view
        n = len(table)
        while True:
            table.num_arrived = rid + 1
            self.enqueue(rid, now_s)
            rid += 1
            if rid >= n or arrivals[rid] > now_s:
                return rid

    def drain(self, on_drained: Callable[[Replica], None]) -> None:
        """Stop taking requests; call `on_drained` once the in-flight ones are done."""
        self.accepting = False
        self.on_drained = on_drained
        if self.state == _IDLE and not self.num_waiting():
            on_drained(self)

    def evict(self) -> list[int]:
        """Stop at once (pod killed): returns the request ids that were in flight here."""
        self._go_idle(self.sim.now_s)
        self.sim.cancel_timer(self.timer)
        running = self.running_rids()
        lost = running + self.waiting_rids()
        for rid in running:
            self.table.decode_g0[rid] = NOT_DECODING
        for rid in self.prefilling:
            self.table.prefill_left[rid] = NOT_PREFILLING
        self.queue = []
        self.queue_head = 0
        self.waiting_prompt_tokens = 0
        self.running.clear()
        self.num_running = 0
        self.prefilling.clear()
        self.heap.clear()
        self.resume_generated.clear()
        self.kv_ready.clear()
        self.decode_base = self.n_decode = self.prefill_reserved = self.reserved_tokens = 0
        self.accepting = False
        return lost

    # -- internals ------------------------------------------------------------------------------
    def _blocks_needed(self, extra_tokens: int, extra_seqs: int, steps_ahead: int) -> float:
        tokens = (self.decode_base + self.n_decode * (self.G + steps_ahead) + self.prefill_reserved
                  + extra_tokens)
        # (n / 2, not 0.5 * n: the same double, and the compiled build divides two ints
        # natively where a float times an int is a generic multiply of two boxed numbers.)
        return tokens / self.cfg.block_size + (self.num_running + extra_seqs) / 2

    def _go_idle(self, now_s: float) -> None:
        if self.state != _IDLE:
            self.busy_accum_s += now_s - self.busy_since_s
        self.state = _IDLE

    def _start_busy(self, now_s: float, state: int) -> None:
        if self.state == _IDLE:
            self.busy_since_s = now_s
        self.state = state

    def _drop_first_waiting(self, rid: int, now_s: float, reason: str) -> None:
        """Drop the head of the waiting queue (`rid`): it timed out or can never fit."""
        self._pop_waiting(self.table.prompt_tokens_list[rid])
        self.resume_generated.pop(rid, None)
        self.kv_ready.discard(rid)
        self.table.drop(rid, now_s, reason)
        if self.load_log is not None:
            self.load_log.append(self)

    def _pop_waiting(self, prompt_tokens: int) -> None:
        """Take the head (of `prompt_tokens`) off the waiting queue."""
        self.waiting_prompt_tokens -= prompt_tokens
        head = self.queue_head + 1
        if head >= 64 and 2 * head >= len(self.queue):  # drop the consumed prefix
            del self.queue[:head]
            head = 0
        self.queue_head = head

    def _push_front(self, rid: int, prompt_tokens: int) -> None:
        """Put `rid` (of `prompt_tokens`) back at the head of the waiting queue (a preempted
        request)."""
        self.waiting_prompt_tokens += prompt_tokens
        if self.queue_head:
            self.queue_head -= 1
            self.queue[self.queue_head] = rid
        else:
            self.queue.insert(0, rid)

    def _admit(self, now_s: float, budget: int, chunks: list[tuple[int, int, int]]) -> int:
        """Admit waiting requests FCFS while seats, KV blocks and token budget allow."""
        table = self.table
        cfg = self.cfg
        queue = self.queue
        while self.queue_head < len(queue) and budget > 0 \
                and self.num_running < cfg.max_num_seqs:
            rid = queue[self.queue_head]
            if now_s - table.arrival_s_view[rid] > cfg.request_timeout_s:
                self._drop_first_waiting(rid, now_s, "timeout")
                continue
            # Empty but in disaggregated serving: tested first, as a lookup boxes the request
            # id (an int object allocated and freed) to hash it.
            kv_ready = len(self.kv_ready) != 0 and rid in self.kv_ready
            prompt = table.prompt_tokens_list[rid]
            need = prompt + (1 if kv_ready else self._resumed_tokens(rid))
            # KV blocks after admitting it, one step ahead (`_blocks_needed`, inlined).
            tokens = (self.decode_base + self.n_decode * (self.G + 1) + self.prefill_reserved
                      + need)
            if tokens / cfg.block_size + (self.num_running + 1) / 2 > cfg.num_blocks:
                if not self.num_running:  # can never fit, even alone: vLLM rejects it
                    self._drop_first_waiting(rid, now_s, "exceeds_kv_cache")
                    continue
                break
            if self.no_evict:
                full = prompt + table.output_tokens_list[rid]
                if (self.reserved_tokens + full) / cfg.block_size \
                        + (self.num_running + 1) / 2 > cfg.num_blocks:
                    if not self.num_running:  # its whole length can never be reserved
                        self._drop_first_waiting(rid, now_s, "exceeds_kv_cache")
                        continue
                    break
            if kv_ready:  # its KV is here already: straight into decode, no prefill compute
                self._pop_waiting(prompt)
                self._reserve(rid, 1)
                self.kv_ready.discard(rid)
                if table.output_tokens_list[rid] <= 1:
                    self._complete(rid, now_s)  # done at once: never among the running
                else:
                    self._add_running(rid)
                    self._join_decode(rid, 1)
                continue
            if self.whole_prompts and need > budget and (
                    chunks or (self.n_decode and not self.prefill_first)):
                # Whole prompts only: it waits for the next step. One longer than the budget
                # runs alone (in a prefill-only step, or once the decodes beside it are done).
                break
            self._pop_waiting(prompt)
            self._add_running(rid)
            self._reserve(rid, 1)
            cache = self.prefix_cache
            # Tokens found in the prefix cache are not computed; the chunk's attention still
            # reads them (its prefix). The whole prompt stays reserved: it is this request's KV.
            hit = 0 if cache is None else cache.acquire(
                rid, need, tokens / cfg.block_size + self.num_running / 2)
            todo = need - hit
            table.prefill_left[rid] = todo
            self.prefilling.append(rid)
            self.prefill_reserved += need
            take = todo if todo < budget or self.whole_prompts else budget
            chunks.append((rid, take, hit))
            budget -= take
            if cache is not None:
                cache.scheduled(rid, hit + take)
        return budget

    def _plan(self, now_s: float) -> None:
        """At a step boundary: choose the next step (mixed with prefill) or a decode stretch."""
        if not self.prefilling and not self.num_waiting() and self.n_decode:
            self._start_segment(now_s)  # fast path: nothing to admit or prefill
            return
        # prefill_first: a prefill-only step gets the whole budget; decodes wait for it.
        budget = self.cfg.max_num_batched_tokens - (0 if self.prefill_first else self.n_decode)
        chunks: list[tuple[int, int, int]] = []  # (rid, tokens this step, prefix already done)
        cache = self.prefix_cache
        prefill_left = self.table.prefill_left
        for rid in self.prefilling:
            remaining = prefill_left[rid]
            if budget <= 0:
                break
            take = remaining if remaining < budget else budget
            total = self.table.prompt_tokens_list[rid] + self._resumed_tokens(rid)
            chunks.append((rid, take, total - remaining))
            budget -= take
            if cache is not None:
                cache.scheduled(rid, total - remaining + take)
        if self.accepting or self.num_waiting():
            budget = self._admit(now_s, budget, chunks)
        if chunks:
            self._start_busy(now_s, _STEP)
            self.step_start_s = now_s
            self.step_chunks = chunks
            self.step_budget = budget
            self.step_decodes = not self.prefill_first
            self._schedule_step()
            return
        if self.n_decode:
            self._start_segment(now_s)
            return
        self._go_idle(now_s)
        if not self.accepting and not self.num_running and not self.num_waiting() \
                and self.on_drained:
            callback, self.on_drained = self.on_drained, None
            callback(self)

    def _schedule_step(self) -> None:
        chunks = self.step_chunks
        decodes = self.n_decode if self.step_decodes else 0
        duration = self.cost.engine_step_s(
            decodes, self.decode_base + decodes * self.G if decodes else 0, chunks)
        self.sim.set_timer(self.timer, self.step_start_s + duration, _ENGINE_PRIORITY, _STEP,
                           chunks)

    def _join_planned_step(self) -> None:
        """A request arriving before a planned step starts still joins that step."""
        before = (len(self.step_chunks), self.n_decode)
        self.step_budget = self._admit(self.step_start_s, self.step_budget, self.step_chunks)
        if (len(self.step_chunks), self.n_decode) != before:
            self._schedule_step()

    def _start_segment(self, now_s: float) -> None:
        heap = self.heap
        decode_g0 = self.table.decode_g0
        output = self.table.output_tokens_list
        while True:
            first = heap[0]
            finish_g = first.finish_g
            rid = first.rid
            if decode_g0[rid] + output[rid] == finish_g:
                break
            _pop_finish(heap)  # stale entries of preempted sequences
        G = self.G
        n = self.n_decode
        context = self.decode_base + n * G
        steps_to_finish = finish_g - G
        if steps_to_finish < 1:
            steps_to_finish = 1
        # KV: the step index at which blocks would run out (preempt at that boundary).
        cfg = self.cfg
        # Free tokens = (num_blocks - running / 2) x block_size - context - prefill_reserved,
        # a whole number of half tokens: floored over n in integers, the exact value the float
        # division gave, without its fmod.
        free_half_tokens = ((2 * cfg.num_blocks - self.num_running) * cfg.block_size
                            - 2 * (context + self.prefill_reserved))
        steps_to_full = free_half_tokens // (2 * n)
        steps = steps_to_finish if steps_to_finish < steps_to_full else max(1, steps_to_full)
        cost = self.cost
        first_s = cost.decode_step_s(n, context)
        slope_s = cost.segment_slope_s(n, context, first_s)
        self.seg_first_s = first_s
        self.seg_slope_s = slope_s
        self.seg_start_s = now_s
        self.seg_G0 = G
        self.seg_steps = steps
        self._start_busy(now_s, _SEGMENT)
        self.sim.set_timer(self.timer, now_s + segment_duration_s(first_s, slope_s, steps),
                           _ENGINE_PRIORITY, _SEGMENT, steps)

    def _cut_segment(self, now_s: float) -> None:
        """End the decode stretch at the end of the step in progress, where the newcomer joins.

        Nothing finishes and the KV cache cannot run out before that boundary (the stretch was
        sized to end at the first such event), so the state there is known now: advance to it
        and plan the next step to start at the boundary, without an event in between.
        """
        first_s = self.seg_first_s
        slope_s = self.seg_slope_s
        done = segment_steps_within(first_s, slope_s, now_s - self.seg_start_s)
        boundary = done + 1
        if boundary >= self.seg_steps:
            return  # the stretch ends at that step anyway
        boundary_s = self.seg_start_s + segment_duration_s(first_s, slope_s, boundary)
        self.G += boundary
        self._plan(boundary_s)

    def on_timer(self, kind: int, arg: object) -> None:
        """The step (`_STEP`, its chunks) or decode stretch (`_SEGMENT`, its steps) ends."""
        if kind == _STEP:
            self._end_step(cast("list[tuple[int, int, int]]", arg))
        else:
            self._end_segment(cast(int, arg))

    def _end_segment(self, steps: int) -> None:
        now_s = self.sim.now_s
        self.G += steps
        self._finish_due(now_s)
        self._relieve_kv_pressure()
        self._plan(now_s)

    def _end_step(self, chunks: list[tuple[int, int, int]]) -> None:
        now_s = self.sim.now_s
        table = self.table
        if self.step_decodes:
            self.G += 1
            heap = self.heap
            if heap and heap[0].finish_g <= self.G:  # one is due
                self._finish_due(now_s)
        prefill_left = table.prefill_left
        for rid, take, _prefix in chunks:
            left = prefill_left[rid]
            if left < 0:
                continue  # preempted meanwhile
            remaining = left - take
            if remaining > 0:
                prefill_left[rid] = remaining
                continue
            # Prefill done: this step also produced the next token.
            prefill_left[rid] = NOT_PREFILLING
            self._remove_prefilling(rid)
            generated = (self.resume_generated.pop(rid, 0) if len(self.resume_generated)
                         else 0) + 1
            prompt = table.prompt_tokens_list[rid]
            self.prefill_reserved -= prompt + generated - 1
            first_token_s = table.first_token_s_view[rid]
            if not self.prefill_role and first_token_s != first_token_s:
                # NaN: the first token is out now (a prefill replica's leaves with its KV)
                table.first_token_s_view[rid] = now_s
                self.ttft_observations.append(now_s - table.arrival_s_view[rid])
                if self.events is not None:
                    self.events.first_tokens.append(rid)
            if self.prefill_role and self.on_prefilled is not None:
                # Its KV (and first token) leave for a decode replica. Removed from the list
                # (not left to `is_running`: the id may come back here after an eviction retry).
                self.running.remove(rid)
                self.num_running -= 1
                self._reserve(rid, -1)
                self._release_prefix(rid)
                if self.load_log is not None:
                    self.load_log.append(self)
                self.on_prefilled(rid, now_s)
                continue
            if generated >= table.output_tokens_list[rid]:
                self._finish_running()
                self._complete(rid, now_s)
                continue
            self._join_decode(rid, generated)
        self._relieve_kv_pressure()
        self._plan(now_s)

    def _join_decode(self, rid: int, generated: int) -> None:
        """Enter decode having generated `generated` tokens; finishes when G reaches its end."""
        g0 = self.G - generated
        self.table.decode_g0[rid] = g0
        self.decode_base += self.table.prompt_tokens_list[rid] - g0
        self.n_decode += 1
        _push_finish(self.heap, DecodeFinish(g0 + self.table.output_tokens_list[rid], rid))

    def _finish_due(self, now_s: float) -> None:
        heap = self.heap
        G = self.G
        table = self.table
        decode_g0 = table.decode_g0
        output = table.output_tokens_list
        while heap and heap[0].finish_g <= G:
            entry = _pop_finish(heap)
            finish_g = entry.finish_g
            rid = entry.rid
            g0 = decode_g0[rid]
            if g0 + output[rid] != finish_g:
                continue  # stale entry of a preempted sequence
            decode_g0[rid] = NOT_DECODING
            self._finish_running()
            self.decode_base -= table.prompt_tokens_list[rid] - g0
            self.n_decode -= 1
            self._complete(rid, now_s)

    def _resumed_tokens(self, rid: int) -> int:
        """Tokens `rid` had generated before it was preempted (0 if it never was). The dict is
        empty until a preemption: tested first, as a lookup boxes the id to hash it."""
        resumed = self.resume_generated
        return resumed.get(rid, 0) if len(resumed) else 0

    def _add_running(self, rid: int) -> None:
        self.running.append(rid)
        self.num_running += 1

    def _finish_running(self) -> None:
        """One running request finished (it stays in `running` until compacted)."""
        self.num_running -= 1
        if len(self.running) >= 2 * self.num_running + 64:
            self.running = self.running_rids()

    def is_running(self, rid: int) -> bool:
        """Whether `rid`, a request routed here, runs here now: decoding, or prefilling. A
        finished request is neither (it left decode, or never reached it); a preempted or
        handed-off one was removed from `running`, so an entry there is never another
        replica's."""
        return self.table.decode_g0[rid] != NOT_DECODING or self.table.prefill_left[rid] >= 0

    def _remove_prefilling(self, rid: int) -> None:
        """Take `rid` out of `prefilling`: found from the front, where the step's chunks are."""
        order = self.prefilling
        j = 0
        while order[j] != rid:
            j += 1
        order.pop(j)

    def prefill_tokens_left(self) -> int:
        """Prompt tokens the prefilling requests still have to compute."""
        left = self.table.prefill_left
        total = 0
        for rid in self.prefilling:
            total += left[rid]
        return total

    def _reserve(self, rid: int, sign: int) -> None:
        """guaranteed_no_evict bookkeeping: a request's whole length, reserved while it runs."""
        if self.no_evict:
            self.reserved_tokens += sign * (self.table.prompt_tokens_list[rid]
                                            + self.table.output_tokens_list[rid])

    def _release_prefix(self, rid: int) -> None:
        """Its prompt blocks go back to the pool, still cached (serving/prefix_cache.py)."""
        cache = self.prefix_cache
        if cache is not None:
            cache.release(rid, self._blocks_needed(0, 0, 0))

    def _complete(self, rid: int, now_s: float) -> None:
        self._reserve(rid, -1)
        if self.prefix_cache is not None:
            self._release_prefix(rid)
        if self.load_log is not None:
            self.load_log.append(self)
        self.table.complete(rid, now_s)
        self.table.recently_completed.append(rid)
        if self.events is not None:
            self.events.completions.append(rid)
        if self.on_complete is not None:
            self.on_complete(rid, now_s)

    def _relieve_kv_pressure(self) -> None:
        """Preempt (recompute) the newest sequences until the next step's KV fits."""
        cfg = self.cfg
        tokens = self.decode_base + self.n_decode * (self.G + 1) + self.prefill_reserved
        if tokens / cfg.block_size + self.num_running / 2 <= cfg.num_blocks:
            return  # the common case: no pressure
        while self.num_running and self._blocks_needed(0, 0, 1) > cfg.num_blocks:
            rid = self.running.pop()
            if not self.is_running(rid):
                continue  # a finished one left in place
            self.num_running -= 1
            self._reserve(rid, -1)
            self.table.num_preemptions[rid] += 1
            prompt = self.table.prompt_tokens_list[rid]
            if self.table.prefill_left[rid] >= 0:
                self.table.prefill_left[rid] = NOT_PREFILLING
                self._remove_prefilling(rid)
                self.prefill_reserved -= prompt + self._resumed_tokens(rid)
            else:
                g0 = self.table.decode_g0[rid]
                self.table.decode_g0[rid] = NOT_DECODING
                self.decode_base -= prompt - g0
                self.n_decode -= 1
                self.resume_generated[rid] = self.G - g0
            self._release_prefix(rid)
            self._push_front(rid, prompt)
