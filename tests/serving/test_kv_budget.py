"""The KV budget's decisions, taken in exact integers, are those of the blocks-in-use formula
as the replica computed it in doubles (docs/serving.md, KV cache)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.serving.kv_budget import KvBudget

# Block sizes engines use (powers of two, where the doubles are exact) and others, where they
# round: the verdicts must agree for every one.
block_sizes = st.sampled_from([1, 3, 7, 8, 16, 24, 32, 48, 64, 100, 128, 256])


def _budget(block_size: int, num_blocks: int, decoding: list[tuple[int, int]],
            prefill_tokens: int) -> KvBudget:
    kv = KvBudget(block_size, num_blocks)
    for prompt, g0 in decoding:
        kv.join_decode(prompt, g0)
    kv.reserve_prefill(prefill_tokens)
    return kv


@settings(max_examples=400, deadline=None)
@given(block_size=block_sizes, num_blocks=st.integers(0, 2_000_000),
       decoding=st.lists(st.tuples(st.integers(1, 200_000), st.integers(0, 50_000)),
                         max_size=20),
       prefill_tokens=st.integers(0, 10**7), g=st.integers(50_000, 10**6),
       extra=st.integers(0, 10**6), seqs=st.integers(0, 4096))
def test_fits_is_the_float_formula(block_size, num_blocks, decoding, prefill_tokens, g, extra,
                                   seqs):
    kv = _budget(block_size, num_blocks, decoding, prefill_tokens)
    tokens = sum(prompt + g - g0 for prompt, g0 in decoding) + prefill_tokens + extra
    assert kv.fits(g, extra, seqs) == (tokens / block_size + seqs / 2 <= num_blocks)
    assert kv.blocks(tokens, seqs) == tokens / block_size + seqs / 2


@settings(max_examples=300, deadline=None)
@given(block_size=block_sizes, num_blocks=st.integers(1, 2_000_000),
       decoding=st.lists(st.tuples(st.integers(1, 200_000), st.integers(0, 50_000)),
                         min_size=1, max_size=20),
       prefill_tokens=st.integers(0, 10**6), g=st.integers(50_000, 10**6),
       seqs=st.integers(0, 4096))
def test_decode_steps_until_full_is_the_last_step_that_fits(block_size, num_blocks, decoding,
                                                             prefill_tokens, g, seqs):
    kv = _budget(block_size, num_blocks, decoding, prefill_tokens)
    steps = kv.decode_steps_until_full(g, seqs)
    if steps >= 0:
        assert kv.fits(g + steps, 0, seqs)
    assert not kv.fits(g + steps + 1, 0, seqs)


def test_the_no_evict_reservation_counts_whole_lengths_beside_the_blocks_in_use():
    kv = KvBudget(16, 10)  # 160 tokens; each sequence's last half block leaves 8 fewer
    kv.reserve_whole(100)  # a running request's prompt + output
    assert kv.fits_reserved(52, 1) and not kv.fits_reserved(53, 1)
    assert kv.fits_reserved(44, 2) and not kv.fits_reserved(45, 2)
    kv.release_whole(100)
    assert kv.fits_reserved(152, 1) and not kv.fits_reserved(153, 1)
