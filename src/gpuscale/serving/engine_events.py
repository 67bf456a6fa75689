"""What an engine keeps between scrapes for the per-pod request series of the run's Prometheus.

vLLM's request metrics (`vllm:time_to_first_token_seconds`, `vllm:request_success_total`, the
token histograms) are counters and histograms over every request the engine served; the
scrape (metrics/prometheus.py) builds them from the requests each engine reports here.
Compiled with the replica (setup.py), which appends to the lists natively.
"""

from __future__ import annotations


class ReplicaEvents:
    """The requests whose first token this engine produced and those it completed since the
    last scrape, in order. A replica keeps one only when a run reads a per-pod request series
    (its `events` is None otherwise: one test per first token and completion)."""

    __slots__ = ("completions", "first_tokens")

    def __init__(self) -> None:
        self.first_tokens: list[int] = []
        self.completions: list[int] = []

    def take_first_tokens(self) -> list[int]:
        """The requests whose first token came since the last call, in order."""
        taken, self.first_tokens = self.first_tokens, []
        return taken

    def take_completions(self) -> list[int]:
        """The requests completed since the last call, in order."""
        taken, self.completions = self.completions, []
        return taken
