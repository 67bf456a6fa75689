"""A replica's KV budget: how many of its KV blocks its requests hold, and whether more fit.

vLLM's `KVCacheManager` (`vllm/v1/core/kv_cache_manager.py`) allocates blocks to each request
as its tokens are computed and reports `usage` (blocks in use / blocks); this class keeps the
same quantities in closed form, in the approximation docs/serving.md states (KV cache):

    blocks in use = cached tokens / block_size + half a block per running sequence

(the last block of each sequence is on average half full), the one formula, multiplied out
in `free_half_tokens` (exact integers, for the decisions) and as it reads in `blocks`
(doubles, for the metrics).
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
    this arithmetic runs at every admission, step end and stretch (docs/hot-path.md)."""

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
    def free_half_tokens(self, tokens: i64, seqs: i64) -> i64:
        """The room left when `seqs` sequences hold `tokens` cached tokens in all, in half
        tokens: (num_blocks - blocks in use) x 2 x block_size, the formula above multiplied
        out, so exact in integers. Every decision is taken on it (`fits`, ...)."""
        return (2 * self.num_blocks - seqs) * self.block_size - 2 * tokens

    def blocks(self, tokens: int, seqs: int) -> float:
        """Blocks in use when `seqs` sequences hold `tokens` cached tokens in all, in doubles:
        what the usage metric and the prefix cache read (their arithmetic since they exist).
        It is <= num_blocks exactly when `free_half_tokens` >= 0: the doubles round below
        2**-52 of the value, and a nonzero room is at least half a token, 1 / (2 block_size)
        of a block (tests/serving/test_kv_budget.py)."""
        return tokens / self.block_size + seqs / 2

    def _tokens(self, g: i64) -> i64:
        return self.decode_base + self.num_decoding * g + self.prefill_reserved

    def cached_tokens(self, g: i64) -> int:
        """Tokens held at step count `g`: the decoding context and the reserved prefills."""
        return self._tokens(g)

    def decode_context(self, g: i64) -> int:
        """Tokens the decoding sequences hold at step count `g` (what a decode step reads)."""
        return self.decode_base + self.num_decoding * g

    def fits(self, g: i64, extra_tokens: i64, seqs: i64) -> bool:
        """Whether `seqs` running sequences, with `extra_tokens` more than are held now, fit
        the cache at step count `g`."""
        return self.free_half_tokens(self._tokens(g) + extra_tokens, seqs) >= 0

    def fits_reserved(self, whole_tokens: i64, seqs: i64) -> bool:
        """Whether `seqs` sequences fit the cache with `whole_tokens` reserved beside the
        running requests' reservations (guaranteed-no-evict admission)."""
        return self.free_half_tokens(self.reserved_tokens + whole_tokens, seqs) >= 0

    def usage_frac(self, g: i64, seqs: i64) -> float:
        """Blocks in use / blocks at step count `g` (vllm:kv_cache_usage_perc, 0..1)."""
        if not self.num_blocks:
            return 1.0
        return min(1.0, self.blocks(self._tokens(g), seqs) / float(self.num_blocks))

    def decode_steps_until_full(self, g: i64, seqs: i64) -> int:
        """The most decode steps k from step count `g` with `fits(g + k, 0, seqs)`, while
        `seqs` sequences run and only the decoding ones, num_decoding tokens a step, grow
        (negative if even `g` does not fit; some sequence decodes)."""
        return self.free_half_tokens(self._tokens(g), seqs) // (2 * self.num_decoding)

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
