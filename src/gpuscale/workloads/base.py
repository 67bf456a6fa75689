"""The workload contract: requests as columnar arrays, sorted by arrival.

Generators and trace readers all return `Requests`; nothing downstream keeps one Python object
per request past the hot path.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

import numpy as np

from gpuscale.workloads.prefix_blocks import PrefixBlocks


@dataclass(frozen=True)
class Requests:
    """Columnar request table. `arrival_s` is sorted ascending and starts at or after 0."""

    arrival_s: np.ndarray  # float64, seconds from the start of the run
    prompt_tokens: np.ndarray  # int64, >= 1
    output_tokens: np.ndarray  # int64, >= 1
    # Prompt block hashes (Mooncake `hash_ids`), only for traces that carry them; None keeps
    # every other workload exactly as it was (no prefix cache).
    prefix_blocks: PrefixBlocks | None = None
    # The wall-clock instant of arrival 0, for a trace that records one (Azure's TIMESTAMP,
    # BurstGPT's seconds from midnight); None for generated traffic and traces whose times
    # are only relative (generic CSV, Mooncake). A run without its own `start_time` takes it.
    start_time: datetime | None = None

    def __post_init__(self) -> None:
        n = len(self.arrival_s)
        if len(self.prompt_tokens) != n or len(self.output_tokens) != n:
            raise ValueError("Requests columns must have equal length")
        if self.prefix_blocks is not None and len(self.prefix_blocks) != n:
            raise ValueError("Requests.prefix_blocks must have one row per request")
        # Neighbours compared, not `np.diff(...) < 0`: the same answer (x - y < 0 exactly
        # when x < y, NaN and infinities included) without a float temporary per table.
        if n and (np.any(self.arrival_s[1:] < self.arrival_s[:-1]) or self.arrival_s[0] < 0):
            raise ValueError("Requests.arrival_s must be sorted and >= 0")

    def __len__(self) -> int:
        return len(self.arrival_s)

    @property
    def span_s(self) -> float:
        return float(self.arrival_s[-1] - self.arrival_s[0]) if len(self) else 0.0

    def take(self, index: np.ndarray | slice) -> Requests:
        """Rows `index` (a slice or a boolean mask keeping arrival order), block hashes too."""
        blocks = None if self.prefix_blocks is None else self.prefix_blocks.take(index)
        return Requests(self.arrival_s[index], self.prompt_tokens[index],
                        self.output_tokens[index], blocks, self.start_time)

    def shifted(self, start_s: float) -> Requests:
        """The table with time `start_s` as its new 0 (arrivals minus `start_s`), its wall
        clock moved with it."""
        clock = None if self.start_time is None else self.start_time + timedelta(
            seconds=start_s)
        return replace(self, arrival_s=self.arrival_s - start_s, start_time=clock)

    @staticmethod
    def concat(parts: list[Requests]) -> Requests:
        """Merge several tables into one sorted by arrival (stable, so ties keep part order).
        Each part's times count from its own 0, so the merge has no one wall clock."""
        if not parts:
            return Requests(np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64))
        arrival = np.concatenate([p.arrival_s for p in parts])
        order = np.argsort(arrival, kind="stable")
        blocks = None
        if any(p.prefix_blocks is not None for p in parts):  # parts without hashes: empty rows
            size = next(p.prefix_blocks.block_tokens for p in parts
                        if p.prefix_blocks is not None)
            blocks = PrefixBlocks.concat([
                PrefixBlocks.empty(len(p), size) if p.prefix_blocks is None else p.prefix_blocks
                for p in parts]).take(order)
        return Requests(
            arrival[order],
            np.concatenate([p.prompt_tokens for p in parts])[order],
            np.concatenate([p.output_tokens for p in parts])[order],
            blocks,
        )
