"""The engine's request counters and histograms of one replica, from its requests' events.

A replica's engine counts from 0 when it starts (a new process: a restarted pod's counters
reset, which `rate()` absorbs); each scrape adds the requests whose first token or
completion came since the last one (`serving.replica.ReplicaEvents`), reading their times
and lengths from the request table. What is counted when:
- at the first token: the TTFT observation (first token - arrival, as vLLM measures from the
  frontend's arrival), the prompt's tokens (`prompt_tokens`), one generated token;
- at completion: the other generated tokens, `request_success{finished_reason="stop"}`, the
  e2e latency (finish - arrival), the prompt and generation lengths, the request's mean
  time per output token, and `output - 1` inter-token latencies at that mean.
Approximations (docs/metrics.md): vLLM observes each inter-token latency as it happens and
counts tokens per step; here a request's decode is spread evenly and counted when it ends, so
`rate()` over a window shorter than a request lags. Prompt tokens served from the prefix cache
are counted (vLLM counts them too, as prompt tokens of the request).
"""

from __future__ import annotations

import math

import numpy as np

from gpuscale.metrics.exposition import Family
from gpuscale.serving.requests_table import RequestTable


def go_float_label(value: float) -> str:
    """How prometheus_client writes a bucket bound (`floatToGoString`): "0.5", "1.0",
    "+Inf", "1e+06"."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    text = repr(float(value))
    dot = text.find(".")
    if value > 0 and dot > 6:
        mantissa = f"{text[0]}.{text[1:dot]}{text[dot + 1:]}".rstrip("0.")
        return f"{mantissa}e+0{dot - 1}"
    return text


class Histogram:
    """Cumulative bucket counts, sum and count of one histogram of one replica."""

    __slots__ = ("bounds", "counts", "les", "sum", "total")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = np.array((*bounds, math.inf))
        self.les = tuple(go_float_label(b) for b in self.bounds.tolist())  # the `le` values
        self.counts = np.zeros(len(self.bounds))  # per bucket, not cumulative
        self.sum = 0.0
        self.total = 0.0

    def observe(self, values: np.ndarray, weights: np.ndarray | None = None) -> None:
        """`values` (each `weights` times), into the first bucket whose bound is >= value
        (prometheus_client: bisect_left over the upper bounds)."""
        if not len(values):
            return
        index = np.searchsorted(self.bounds, values, side="left")
        w = np.ones(len(values)) if weights is None else weights
        np.add.at(self.counts, index, w)
        # Sequential sum in observation order, as the client's running sum adds them.
        for value, times in zip(values.tolist(), w.tolist(), strict=True):
            self.sum += value * times
        self.total += float(w.sum())

    def cumulative(self) -> np.ndarray:
        return np.cumsum(self.counts)


class EngineCounters:
    """One replica's request counters and histograms (only those some query or the export
    reads: `families` maps quantity -> Family)."""

    def __init__(self, families: dict[str, Family]) -> None:
        self.families = families
        self.histograms = {q: Histogram(f.buckets) for q, f in families.items()
                           if f.type == "histogram"}
        self.counters = {q: 0.0 for q, f in families.items() if f.type == "counter"}

    def observe(self, table: RequestTable, first_tokens: list[int],
                completions: list[int]) -> None:
        arrival = np.frombuffer(table.arrival_s, dtype=np.float64)
        first = np.frombuffer(table.first_token_s, dtype=np.float64)
        finish = np.frombuffer(table.finish_s, dtype=np.float64)
        prompt = np.frombuffer(table.prompt_tokens, dtype=np.int64)
        output = np.frombuffer(table.output_tokens, dtype=np.int64)
        if first_tokens:
            rows = np.array(first_tokens, dtype=np.int64)
            self._hist("ttft", first[rows] - arrival[rows])
            self._add("prompt_tokens", float(prompt[rows].sum()))
            self._add("generation_tokens", float(len(rows)))
        if completions:
            rows = np.array(completions, dtype=np.int64)
            out = output[rows]
            self._add("generation_tokens", float((out - 1).clip(min=0).sum()))
            self._add("request_success", float(len(rows)))
            self._add("requests", float(len(rows)))
            self._hist("e2e", finish[rows] - arrival[rows])
            self._hist("request_prompt_tokens", prompt[rows].astype(np.float64))
            self._hist("request_generation_tokens", out.astype(np.float64))
            decoding = out > 1
            if decoding.any():
                tpot = (finish[rows][decoding] - first[rows][decoding]) / (out[decoding] - 1)
                self._hist("tpot_request", tpot)
                self._hist("itl", tpot, (out[decoding] - 1).astype(np.float64))

    def _add(self, quantity: str, amount: float) -> None:
        if quantity in self.counters:
            self.counters[quantity] += amount

    def _hist(self, quantity: str, values: np.ndarray, weights: np.ndarray | None = None
              ) -> None:
        if quantity in self.histograms:
            self.histograms[quantity].observe(values, weights)
