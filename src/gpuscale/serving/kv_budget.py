"""A replica's KV budget: how many of its KV blocks its requests hold, and whether more fit.

vLLM's `KVCacheManager` (`vllm/v1/core/kv_cache_manager.py`) allocates blocks to each request
as its tokens are computed and reports `usage` (blocks in use / blocks); this class keeps the
same quantities in closed form, in the approximation docs/serving.md states (KV cache):

    blocks in use = cached tokens / block_size + half a block per running sequence

(the last block of each sequence is on average half full), the one formula, in `blocks`.
The cached tokens are

- those of the decoding sequences, `decode_base + num_decoding x G` at the replica's step
  count G: a sequence that entered decode at step G0 holds prompt + (G - G0) tokens, so the
  sum over them is the sum of (prompt - G0), kept in `decode_base`, plus num_decoding x G;
- the whole prefill of each prefilling request, reserved at admission (`prefill_reserved`:
  vLLM allocates chunk by chunk, which only matters when the cache is nearly full).

`reserved_tokens` is the guaranteed-no-evict admission's own reservation (prompt + every
output token of each running request, serving/admission.py), held beside the blocks in use.
"""

from __future__ import annotations

from gpuscale._mypyc_hints import i64


class KvBudget:
    """One replica's KV blocks in use, as a function of its step count G.

    Its counts are native 64-bit ints in the compiled build (`i64`, gpuscale/_mypyc_hints.py):
    this arithmetic runs at every admission, step end and stretch, and token counts are far
    below 2**53, where a float holds them exactly, so every division below gives the double
    Python's int division gives."""

    __slots__ = ("block_size", "decode_base", "num_blocks", "num_decoding", "prefill_reserved",
                 "reserved_tokens")

    def __init__(self, block_size: int, num_blocks: int) -> None:
        self.block_size: i64 = block_size
        self.num_blocks: i64 = num_blocks
        # sum over the decoding sequences of (prompt + generated - G)
        self.decode_base: i64 = 0
        self.num_decoding: i64 = 0
        self.prefill_reserved: i64 = 0  # sum of the prefilling requests' whole prefills
        self.reserved_tokens: i64 = 0

    def fork_blank(self) -> KvBudget:
        """A budget for a fork of the replica to fill (core/fork.py)."""
        return KvBudget(self.block_size, self.num_blocks)

    # -- the formula ---------------------------------------------------------------------------
    def blocks(self, tokens: i64, seqs: i64) -> float:
        """Blocks that `seqs` sequences holding `tokens` cached tokens in all occupy.

        (Both divisions in doubles: exactly Python's `tokens / block_size + seqs / 2` below
        2**53, which the compiled build computes natively from the i64s.)"""
        return float(tokens) / float(self.block_size) + float(seqs) / 2.0

    def decode_context(self, g: i64) -> int:
        """Tokens the decoding sequences hold at step count `g` (what a decode step reads)."""
        return self.decode_base + self.num_decoding * g

    def cached_tokens(self, g: i64) -> int:
        """Tokens held at step count `g`: the decoding context and the reserved prefills."""
        return self.decode_base + self.num_decoding * g + self.prefill_reserved

    def fits(self, g: i64, extra_tokens: i64, seqs: i64) -> bool:
        """Whether `seqs` running sequences, with `extra_tokens` more than are held now, fit
        the cache at step count `g`. (`cached_tokens` written out: one call fewer on the
        hottest test here, at every admission and step end.)"""
        tokens = self.decode_base + self.num_decoding * g + self.prefill_reserved + extra_tokens
        return self.blocks(tokens, seqs) <= float(self.num_blocks)

    def fits_reserved(self, whole_tokens: i64, seqs: i64) -> bool:
        """Whether `seqs` sequences fit the cache with `whole_tokens` reserved beside the
        running requests' reservations (guaranteed-no-evict admission)."""
        return self.blocks(self.reserved_tokens + whole_tokens, seqs) <= float(self.num_blocks)

    def usage_frac(self, g: i64, seqs: i64) -> float:
        """Blocks in use / blocks at step count `g` (vllm:kv_cache_usage_perc, 0..1)."""
        if not self.num_blocks:
            return 1.0
        return min(1.0, self.blocks(self.cached_tokens(g), seqs) / float(self.num_blocks))

    def decode_steps_until_full(self, g: i64, seqs: i64) -> int:
        """The most decode steps k from step count `g` with `fits(g + k, 0, seqs)`, while
        `seqs` sequences run and only the decoding ones grow (negative if even `g` does not
        fit; some sequence decodes). In integers: the free room is a whole number of half
        tokens, floored over 2 x num_decoding, the exact value the float division gave."""
        free_half_tokens = ((2 * self.num_blocks - seqs) * self.block_size
                            - 2 * self.cached_tokens(g))
        return free_half_tokens // (2 * self.num_decoding)

    # -- changes -------------------------------------------------------------------------------
    def reserve_whole(self, tokens: i64) -> None:
        """Guaranteed-no-evict: a request's whole length is reserved while it runs."""
        self.reserved_tokens += tokens

    def release_whole(self, tokens: i64) -> None:
        self.reserved_tokens -= tokens

    def reserve_prefill(self, tokens: i64) -> None:
        """A request admitted to prefill `tokens` tokens (prompt + any it recomputes)."""
        self.prefill_reserved += tokens

    def release_prefill(self, tokens: i64) -> None:
        """A prefill of `tokens` tokens is done (its tokens now decode) or preempted."""
        self.prefill_reserved -= tokens

    def join_decode(self, prompt_tokens: i64, g0: i64) -> None:
        """A sequence of `prompt_tokens` starts decoding, as if since step count `g0`."""
        self.decode_base += prompt_tokens - g0
        self.num_decoding += 1

    def leave_decode(self, prompt_tokens: i64, g0: i64) -> None:
        """The sequence `join_decode` added finished or was preempted."""
        self.decode_base -= prompt_tokens - g0
        self.num_decoding -= 1

    def clear(self) -> None:
        self.decode_base = self.num_decoding = self.prefill_reserved = self.reserved_tokens = 0
