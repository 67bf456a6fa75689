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


class KvBudget:
    """One replica's KV blocks in use, as a function of its step count G."""

    __slots__ = ("block_size", "decode_base", "num_blocks", "num_decoding", "prefill_reserved",
                 "reserved_tokens")

    def __init__(self, block_size: int, num_blocks: int) -> None:
        self.block_size = block_size
        self.num_blocks = num_blocks
        self.decode_base = 0  # sum over the decoding sequences of (prompt + generated - G)
        self.num_decoding = 0
        self.prefill_reserved = 0  # sum of the prefilling requests' whole prefills
        self.reserved_tokens = 0

    def fork_blank(self) -> KvBudget:
        """A budget for a fork of the replica to fill (core/fork.py)."""
        return KvBudget(self.block_size, self.num_blocks)

    # -- the formula ---------------------------------------------------------------------------
    def blocks(self, tokens: int, seqs: int) -> float:
        """Blocks that `seqs` sequences holding `tokens` cached tokens in all occupy.

        (seqs / 2, not 0.5 * seqs: the same double, and the compiled build divides two ints
        natively where a float times an int is a generic multiply of two boxed numbers.)"""
        return tokens / self.block_size + seqs / 2

    def decode_context(self, g: int) -> int:
        """Tokens the decoding sequences hold at step count `g` (what a decode step reads)."""
        return self.decode_base + self.num_decoding * g

    def cached_tokens(self, g: int) -> int:
        """Tokens held at step count `g`: the decoding context and the reserved prefills."""
        return self.decode_base + self.num_decoding * g + self.prefill_reserved

    def fits(self, g: int, extra_tokens: int, seqs: int) -> bool:
        """Whether `seqs` running sequences, with `extra_tokens` more than are held now, fit
        the cache at step count `g`. (`cached_tokens` written out: one call fewer on the
        hottest test here, at every admission and step end.)"""
        tokens = self.decode_base + self.num_decoding * g + self.prefill_reserved + extra_tokens
        return self.blocks(tokens, seqs) <= self.num_blocks

    def usage_frac(self, g: int, seqs: int) -> float:
        """Blocks in use / blocks at step count `g` (vllm:kv_cache_usage_perc, 0..1)."""
        if not self.num_blocks:
            return 1.0
        return min(1.0, self.blocks(self.cached_tokens(g), seqs) / self.num_blocks)

    def decode_steps_until_full(self, g: int, seqs: int) -> int:
        """The most decode steps k from step count `g` with `fits(g + k, 0, seqs)`, while
        `seqs` sequences run and only the decoding ones grow (negative if even `g` does not
        fit; some sequence decodes). In integers: the free room is a whole number of half
        tokens, floored over 2 x num_decoding, the exact value the float division gave."""
        free_half_tokens = ((2 * self.num_blocks - seqs) * self.block_size
                            - 2 * self.cached_tokens(g))
        return free_half_tokens // (2 * self.num_decoding)

    # -- changes -------------------------------------------------------------------------------
    def reserve_prefill(self, tokens: int) -> None:
        """A request admitted to prefill `tokens` tokens (prompt + any it recomputes)."""
        self.prefill_reserved += tokens

    def release_prefill(self, tokens: int) -> None:
        """A prefill of `tokens` tokens is done (its tokens now decode) or preempted."""
        self.prefill_reserved -= tokens

    def join_decode(self, prompt_tokens: int, g0: int) -> None:
        """A sequence of `prompt_tokens` starts decoding, as if since step count `g0`."""
        self.decode_base += prompt_tokens - g0
        self.num_decoding += 1

    def leave_decode(self, prompt_tokens: int, g0: int) -> None:
        """The sequence `join_decode` added finished or was preempted."""
        self.decode_base -= prompt_tokens - g0
        self.num_decoding -= 1

    def clear(self) -> None:
        self.decode_base = self.num_decoding = self.prefill_reserved = self.reserved_tokens = 0
