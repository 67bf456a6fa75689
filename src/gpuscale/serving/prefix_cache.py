"""Automatic prefix caching inside one replica's KV pool, with vLLM V1's semantics.

vLLM V1 (`vllm/v1/core/kv_cache_manager.py`, `block_pool.py`; docs/design/prefix_caching.md):
- a full block of prompt tokens is hashed with its parent's hash, so block i can only hit if
  blocks 0..i-1 hit; the hit is the longest run of cached blocks from the start;
- the hit is capped at `num_tokens - 1` ("when all tokens hit the cache, we must recompute the
  last token to obtain logits"), in whole engine blocks, so a prompt that hits entirely
  recomputes its last block (at least one token);
- blocks are cached as soon as the step that computes them is scheduled (`allocate_slots` ->
  `cache_blocks`), so a request scheduled later, even in the same step, can hit them;
- a finished or preempted request frees its blocks, tail first ("so that the tail blocks are
  evicted first"); a free block keeps its hash, and stays a hit, until the pool hands it to a
  new allocation, least recently freed first;
- `vllm:prefix_cache_queries` / `vllm:prefix_cache_hits` count tokens per lookup: the
  request's tokens and the tokens found cached (`record_prefix_cache_stats`,
  serving-engine-metrics.md 1.2). A lookup happens at each admission; the lookup of a request
  that was preempted before (`num_preemptions > 0`) is counted apart, in
  `preempted_queries` / `preempted_hits`, which vLLM does not export (`PrefixCacheStats.record`
  in `vllm/v1/metrics/stats.py`), so a victim re-hitting its own blocks does not raise the
  hit rate.

Approximations (docs/serving.md "Prefix caching"):
- The cache unit is the trace's hashed block (Mooncake: 512 tokens), not the engine block
  (16 tokens): one unit = 512 / block_size engine blocks, hit or missed whole. Only units the
  prompt fills entirely are cacheable (a trailing partial unit is always computed), which
  loses up to one unit's worth of engine blocks that vLLM would still hit.
- Space: the replica counts each running request's whole context in its KV use (shared prefix
  blocks once per request, so sharing saves no memory here: conservative). Cached free units
  fill what the running requests leave free; when admissions or releases find the pool short,
  the least recently used free units are evicted. vLLM's one free queue also hands out
  uncached freed blocks in freeing order, so it can evict a cached block slightly earlier.
- Only prompt blocks are hashed (the trace has no ids for generated tokens).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from gpuscale.serving.requests_table import RequestTable


@dataclass(slots=True)
class PrefixCacheStats:
    """Token counters (vLLM's prefix_cache_queries / hits), per replica or summed over a run."""

    queries_tokens: int = 0
    hits_tokens: int = 0
    # Lookups of requests preempted before (vLLM's preempted_queries / preempted_hits).
    preempted_queries_tokens: int = 0
    preempted_hits_tokens: int = 0

    @property
    def hit_rate(self) -> float | None:
        """Share of looked-up prompt tokens served from the cache; None with no lookup."""
        return self.hits_tokens / self.queries_tokens if self.queries_tokens else None


class PrefixCache:
    """One replica's cached prompt units: held ones (ref counts) and free ones (LRU)."""

    __slots__ = ("block_size", "blocks_per_unit", "free", "held", "ids", "num_blocks",
                 "num_preemptions", "offsets", "prompt_tokens", "ref", "stats", "totals",
                 "unit_tokens")

    def __init__(self, table: RequestTable, block_size: int, num_blocks: int,
                 totals: PrefixCacheStats | None = None) -> None:
        if table.prefix_ids is None or table.prefix_offsets is None:
            raise ValueError("PrefixCache needs a request table with prompt block hashes")
        self.ids = table.prefix_ids
        self.offsets = table.prefix_offsets
        self.prompt_tokens = table.prompt_tokens
        self.num_preemptions = table.num_preemptions
        self.unit_tokens = table.prefix_block_tokens
        self.block_size = block_size
        self.blocks_per_unit = self.unit_tokens / block_size
        self.num_blocks = num_blocks
        self.ref: dict[int, int] = {}  # unit -> running requests holding it
        self.free: OrderedDict[int, None] = OrderedDict()  # cached, unheld; oldest first
        self.held: dict[int, int] = {}  # rid -> units it holds (always its first ones)
        self.stats = PrefixCacheStats()
        self.totals = totals  # the run's sum over every replica (sim/fleet.py)

    def __len__(self) -> int:
        """Cached units, held or free."""
        return len(self.ref) + len(self.free)

    def _row(self, rid: int) -> tuple[int, int]:
        """(first index in `ids`, cacheable units): the units the prompt fills entirely."""
        start = self.offsets[rid]
        full = self.prompt_tokens[rid] // self.unit_tokens
        n = self.offsets[rid + 1] - start
        return start, n if n < full else full

    def match_units(self, rid: int) -> int:
        """Leading units of request `rid` cached here (held or free); no side effect."""
        start, n = self._row(rid)
        ids, ref, free = self.ids, self.ref, self.free
        k = 0
        while k < n:
            unit = ids[start + k]
            if unit not in ref and unit not in free:
                break
            k += 1
        return k

    def match_frac(self, rid: int) -> float:
        """Share of request `rid`'s prompt units cached here, leading ones (the router's
        prefix score: llm-d's prefix-cache-scorer divides the matched blocks by the prompt's
        blocks, a trailing partial one included)."""
        units = -(-self.prompt_tokens[rid] // self.unit_tokens)
        return self.match_units(rid) / units if units else 0.0

    def acquire(self, rid: int, num_tokens: int, used_blocks: float) -> int:
        """Request `rid` is admitted with `num_tokens` to prefill: returns the tokens served
        from the cache (whole engine blocks, at most num_tokens - 1), holds the hit units, and
        evicts free units the pool no longer has room for (`used_blocks` after admission)."""
        k = self.match_units(rid)
        cap = (num_tokens - 1) // self.block_size * self.block_size
        hit = k * self.unit_tokens
        if hit > cap:
            hit = cap
        start = self.offsets[rid]
        ids, ref, free = self.ids, self.ref, self.free
        for i in range(start, start + k):
            unit = ids[i]
            if unit in free:
                del free[unit]
                ref[unit] = 1
            else:
                ref[unit] += 1
        self.held[rid] = k
        self._count(num_tokens, hit, self.num_preemptions[rid] > 0)
        self._trim(used_blocks)
        return hit

    def scheduled(self, rid: int, computed_tokens: int) -> None:
        """A step computing request `rid`'s prompt up to `computed_tokens` is scheduled: the
        units it fills become cached (held by `rid`)."""
        held = self.held.get(rid)
        if held is None:
            return  # not looked up here (its KV came from a prefill replica)
        start, n = self._row(rid)
        upto = computed_tokens // self.unit_tokens
        if upto > n:
            upto = n
        if upto <= held:
            return
        ids, ref, free = self.ids, self.ref, self.free
        for i in range(start + held, start + upto):
            unit = ids[i]
            if unit in ref:
                ref[unit] += 1  # computed twice (both missed it): approximated as shared
            else:
                free.pop(unit, None)
                ref[unit] = 1
        self.held[rid] = upto

    def release(self, rid: int, used_blocks: float) -> None:
        """Request `rid` finished, was preempted or left: its units go free, tail first, and
        stay cached while the pool (`used_blocks` in use now) has room for them."""
        k = self.held.pop(rid, 0)
        if k:
            start = self.offsets[rid]
            ids, ref, free = self.ids, self.ref, self.free
            for i in range(start + k - 1, start - 1, -1):
                unit = ids[i]
                count = ref[unit] - 1
                if count:
                    ref[unit] = count
                else:
                    del ref[unit]
                    free[unit] = None  # most recently used end
        self._trim(used_blocks)

    def _trim(self, used_blocks: float) -> None:
        """Evict least recently used free units until they fit beside `used_blocks`."""
        free = self.free
        room_units = (self.num_blocks - used_blocks) / self.blocks_per_unit
        excess = len(free) - (int(room_units) if room_units > 0 else 0)
        while excess > 0:
            free.popitem(last=False)
            excess -= 1

    def _count(self, queries_tokens: int, hits_tokens: int, preempted: bool) -> None:
        for stats in (self.stats, self.totals):
            if stats is None:
                continue
            if preempted:
                stats.preempted_queries_tokens += queries_tokens
                stats.preempted_hits_tokens += hits_tokens
            else:
                stats.queries_tokens += queries_tokens
                stats.hits_tokens += hits_tokens
