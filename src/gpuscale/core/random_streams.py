"""Named random streams seeded from the scenario seed and a *stable* hash of the name.

Adding a stream shifts no other stream; Python's `hash()` is salted per process, so it is
never used here (vidur's `vidur/utils/random.py` shows that trap).
"""

from __future__ import annotations

import hashlib

import numpy as np


def stable_hash(name: str) -> int:
    """64-bit hash of `name` that is the same in every process and on every machine."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")


class RandomStreams:
    """One `numpy.random.Generator` per name, created on first use."""

    def __init__(self, seed: int) -> None:
        self.seed = int(seed)
        self._streams: dict[str, np.random.Generator] = {}

    def get(self, name: str) -> np.random.Generator:
        stream = self._streams.get(name)
        if stream is None:
            seq = np.random.SeedSequence([self.seed & 0xFFFFFFFF, stable_hash(name)])
            stream = np.random.Generator(np.random.PCG64(seq))
            self._streams[name] = stream
        return stream
