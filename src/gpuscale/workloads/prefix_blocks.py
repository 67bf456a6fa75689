"""Prompt block hashes of a trace (Mooncake's `hash_ids`), stored lean: one flat id column.

A trace that names each `block_tokens`-token block of every prompt by a hash (Mooncake FAST'25:
512-token blocks, shared/traces/README.md "mooncake/") drives the prefix cache. Each request's
blocks are a row of a CSR table: `ids[offsets[i]:offsets[i + 1]]`, 8 bytes per block
reference and no Python object per request.

The ids stored are *chained*: id k of a row names the whole prefix up to and including block
k (the pair (id of block k-1, hash of block k) interned to one integer), as vLLM's block hash
covers the parent hash and the block's tokens (vLLM docs/design/prefix_caching.md). Two
requests share block k only if they share blocks 0..k too, whatever the trace's own hashes
promise; Mooncake's ids already behave so, and chaining makes it hold for any trace.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

# Mooncake's hash block: "each hash id names one 512-token block of the prompt"
# (shared/traces/README.md, Mooncake FAST25-release/traces).
MOONCAKE_BLOCK_TOKENS = 512


@dataclass(frozen=True)
class PrefixBlocks:
    """Per-request chained block ids: row i is `ids[offsets[i]:offsets[i + 1]]`."""

    offsets: np.ndarray  # int64, len n + 1, offsets[0] == 0, non-decreasing
    ids: np.ndarray  # int64 chained prefix ids, >= 0
    block_tokens: int  # tokens per hashed block (512 for Mooncake)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def row(self, i: int) -> np.ndarray:
        return self.ids[self.offsets[i]:self.offsets[i + 1]]

    def take(self, index: np.ndarray | slice) -> PrefixBlocks:
        """Rows `index` (a slice, a boolean mask or integer positions), in that order."""
        rows = np.arange(len(self))[index]
        lengths = self.offsets[rows + 1] - self.offsets[rows]
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        if len(rows) and np.all(np.diff(rows) == 1):  # a contiguous run: one slice, no gather
            ids = self.ids[self.offsets[rows[0]]:self.offsets[rows[-1] + 1]]
        else:
            starts = np.repeat(self.offsets[rows] - offsets[:-1], lengths)
            ids = self.ids[np.arange(offsets[-1]) + starts]
        return PrefixBlocks(offsets, ids, self.block_tokens)

    @staticmethod
    def empty(n: int, block_tokens: int) -> PrefixBlocks:
        return PrefixBlocks(np.zeros(n + 1, np.int64), np.zeros(0, np.int64), block_tokens)

    @staticmethod
    def concat(parts: Sequence[PrefixBlocks]) -> PrefixBlocks:
        """Rows of every part, in order. Ids of later parts are shifted past the earlier ones,
        so blocks of different traces never match by accident."""
        offsets = [np.zeros(1, np.int64)]
        ids = []
        base_offset = base_id = 0
        for part in parts:
            offsets.append(part.offsets[1:] + base_offset)
            ids.append(part.ids + base_id)
            base_offset += int(part.offsets[-1])
            base_id += int(part.ids.max()) + 1 if len(part.ids) else 0
        return PrefixBlocks(np.concatenate(offsets), np.concatenate(ids) if ids else
                            np.zeros(0, np.int64), parts[0].block_tokens)


class ChainInterner:
    """Turns each row's trace hashes into chained prefix ids while a trace is read."""

    __slots__ = ("_chain", "ids", "offsets")

    def __init__(self) -> None:
        self._chain: dict[tuple[int, int], int] = {}
        self.ids: list[int] = []
        self.offsets: list[int] = [0]

    def add(self, hashes: Iterable[int]) -> None:
        chain = self._chain
        parent = -1
        for h in hashes:
            key = (parent, h)
            cid = chain.get(key)
            if cid is None:
                cid = chain[key] = len(chain)
            self.ids.append(cid)
            parent = cid
        self.offsets.append(len(self.ids))

    def build(self, block_tokens: int) -> PrefixBlocks:
        return PrefixBlocks(np.asarray(self.offsets, np.int64), np.asarray(self.ids, np.int64),
                            block_tokens)
