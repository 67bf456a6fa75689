"""Prometheus range-query exports for `calibrate --fit`: per-window points of a live vLLM server.

The file is what Prometheus' `/api/v1/query_range` returns (`{"status": "success", "data":
{"resultType": "matrix", "result": [{"metric": {...}, "values": [[ts, "v"], ...]}]}}`), either
one response whose series carry `__name__` (one query with a `{__name__=~"..."}` selector, the
command docs/calibration.md gives) or a JSON object mapping each metric name to its response.
Raw series, not `rate(...)`: the counters are differenced here, window by window.

Read per replica (series grouped by their labels without `__name__` and `le`), for each step
window between two consecutive samples:
- mean TPOT = increase of `vllm:time_per_output_token_seconds_sum` / increase of its `_count`
  (or of `vllm:inter_token_latency_seconds`, its vLLM >= 0.11 name; or the `_bucket` series:
  bucket midpoints weighted by each bucket's increase);
- mean TTFT likewise from `vllm:time_to_first_token_seconds`;
- the batch: mean of `vllm:num_requests_running` at the window's two ends, and the queue from
  `vllm:num_requests_waiting` (optional);
- the context per sequence from `vllm:request_prompt_tokens` and
  `vllm:request_generation_tokens` (sum / count over the whole export, optional: 1,024 prompt
  and 256 output tokens are assumed without them, and said); prefill tokens sharing the decode
  steps from `vllm:prompt_tokens_total` / `vllm:generation_tokens_total` (optional).

A window predicts its mean TPOT as one step of `batch` decodes over that context, plus, per
decode step, the window's share of new prompts (prompt tokens / mean prompt per generated
tokens / batch) times what a mean prompt's chunks add to the steps they ride in; and its mean
TTFT as half a step in flight plus the chunked prefill of a mean prompt beside the batch, in
windows of at most MAX_TTFT_BATCH running (more: prompts share prefill steps). Both ignore
queueing, so only windows without a queue are fitted (`num_requests_waiting` < 0.5 when
exported; all windows, said so, when not): in a queued window latency is set by the
scheduler, not by the step.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from gpuscale.errors import UserInputError
from gpuscale.serving.engine_defaults import default_max_num_batched_tokens
from gpuscale.serving.performance import ReplicaHardware, step_time_s

TPOT_NAMES = ("vllm:time_per_output_token_seconds", "vllm:inter_token_latency_seconds",
              "vllm:request_time_per_output_token_seconds")
TTFT_NAME = "vllm:time_to_first_token_seconds"
RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"
PROMPT_HIST, OUTPUT_HIST = "vllm:request_prompt_tokens", "vllm:request_generation_tokens"
PROMPT_TOTAL, OUTPUT_TOTAL = "vllm:prompt_tokens_total", "vllm:generation_tokens_total"
HISTOGRAMS = (*TPOT_NAMES, TTFT_NAME, PROMPT_HIST, OUTPUT_HIST)
# Without the length histograms: a chat-like request (ShareGPT-scale means, assumed).
ASSUMED_PROMPT_TOKENS, ASSUMED_OUTPUT_TOKENS = 1024.0, 256.0
MAX_WAITING = 0.5  # a window with more queued requests on average is not fitted
MIN_BATCH = 0.5  # a window with less running on average decoded (almost) nothing
# TTFT is fitted only where a new prompt meets (almost) no other: beyond, prompts that arrive
# together share prefill steps, a queue inside the running set that the gauges do not show.
MAX_TTFT_BATCH = 2.0


@dataclass(frozen=True)
class WindowPoint:
    replica: str
    start_s: float  # seconds since the replica's first sample
    end_s: float
    batch: float
    waiting: float | None
    mean_tpot_s: float | None
    mean_ttft_s: float | None
    prompt_tokens: float
    output_tokens: float
    prompts_per_step: float  # new prompts per decode step in the window
    max_num_batched_tokens: int | None = None

    @property
    def label(self) -> str:
        return f"{self.replica} +{self.start_s:g}..{self.end_s:g}s"

    @property
    def measured(self) -> dict[str, float]:
        out = {}
        if self.mean_tpot_s is not None:
            out["mean_tpot_s"] = self.mean_tpot_s
        if self.mean_ttft_s is not None:
            out["mean_ttft_s"] = self.mean_ttft_s
        return out

    @property
    def decode_batch(self) -> float:
        return self.batch

    def predict_stats(self, hw: ReplicaHardware) -> dict[str, float]:
        seqs = max(1, round(self.batch))
        context = self.prompt_tokens + self.output_tokens / 2.0  # per running sequence
        budget = self.max_num_batched_tokens or default_max_num_batched_tokens(hw.gpu)
        decode_s = step_time_s(hw, decode_seqs=seqs, decode_context_tokens=seqs * context)
        out = {}
        if self.mean_tpot_s is not None:
            # Each new prompt rides in the decode steps as its own chunks (a prompt in a step
            # is compute-bound, so its cost is not spread thin over the window's steps).
            extra = self._prefill_s(hw, seqs, context, budget) - self._chunks(budget, seqs) \
                * decode_s
            out["mean_tpot_s"] = decode_s + self.prompts_per_step * extra
        if self.mean_ttft_s is not None:
            # The new prompt beside the others' decodes, after the step in flight (half a
            # step on average) when others are running.
            others = max(0, seqs - 1)
            wait = step_time_s(hw, decode_seqs=others, decode_context_tokens=others * context) \
                / 2.0 if others else 0.0
            out["mean_ttft_s"] = wait + self._prefill_s(hw, others, context, budget)
        return out

    def _chunks(self, budget: int, seqs: int) -> int:
        return -(-max(1, round(self.prompt_tokens)) // max(1, budget - seqs))

    def _prefill_s(self, hw: ReplicaHardware, seqs: int, context: float, budget: int) -> float:
        """Steps that carry one mean prompt in chunks of what `seqs` decodes leave of the
        token budget."""
        chunk = max(1, budget - seqs)
        prompt = max(1, round(self.prompt_tokens))
        total, done = 0.0, 0
        while done < prompt:
            size = min(chunk, prompt - done)
            total += step_time_s(hw, decode_seqs=seqs, decode_context_tokens=seqs * context,
                                 prefill_chunks=((size, done),))
            done += size
        return total


@dataclass
class _Replica:
    series: dict[str, dict[float, float]] = field(default_factory=dict)  # name -> t -> value
    buckets: dict[str, dict[float, dict[float, float]]] = field(default_factory=dict)


def is_prometheus_export(data: object) -> bool:
    """A query_range response, or a mapping of names to them (what `read_export` reads)."""
    if not isinstance(data, dict):
        return False
    if "status" in data and "data" in data:
        return True
    return bool(data) and all(isinstance(v, dict) and "status" in v and "data" in v
                              for v in data.values())


def _fail(message: str, source: str, where: str) -> UserInputError:
    return UserInputError(message, source=source, field=where)


def _responses(data: dict) -> list[tuple[str, str | None, dict]]:
    """(field path, name the key gives or None, response) of each response in the export."""
    if "status" in data and "data" in data:
        return [("", None, data)]
    return [(f"{key}.", str(key), value) for key, value in data.items()]


def _series(data: dict, source: str):
    """(field path, metric name, labels, [(t, value)]) of every series, checked."""
    for where, key, response in _responses(data):
        if response.get("status") != "success":
            error = response.get("error")
            raise _fail(f"expected \"success\", got {response.get('status')!r}"
                        + (f" (the query failed: {error})" if error else ""),
                        source, f"{where}status")
        body = response.get("data")
        if not isinstance(body, dict) or body.get("resultType") != "matrix":
            got = body.get("resultType") if isinstance(body, dict) else body
            raise _fail(f"expected \"matrix\" (a /api/v1/query_range response), got {got!r}",
                        source, f"{where}data.resultType")
        result = body.get("result")
        if not isinstance(result, list):
            raise _fail(f"expected a list of series, got {result!r}", source,
                        f"{where}data.result")
        for i, item in enumerate(result):
            at = f"{where}data.result[{i}]"
            metric = item.get("metric") if isinstance(item, dict) else None
            values = item.get("values") if isinstance(item, dict) else None
            if not isinstance(metric, dict) or not isinstance(values, list):
                raise _fail("expected {\"metric\": {...}, \"values\": [[ts, \"v\"], ...]}",
                            source, at)
            name = metric.get("__name__", key)
            if not isinstance(name, str) or not name.startswith("vllm:") or "(" in name:
                raise _fail(f"expected a raw vLLM series (query the metric names themselves, "
                            f"not rate() or sum()), got {name!r}", source, f"{at}.metric.__name__")
            samples = []
            for j, pair in enumerate(values):
                try:
                    t, v = float(pair[0]), float(pair[1])
                except (TypeError, ValueError, IndexError, KeyError):
                    raise _fail(f"expected [unix seconds, \"value\"], got {pair!r}", source,
                                f"{at}.values[{j}]") from None
                if math.isfinite(t) and math.isfinite(v):  # NaN samples are gaps
                    samples.append((t, v))
            labels = {str(k): str(v) for k, v in metric.items() if k not in ("__name__", "le")}
            yield at, name, labels, metric.get("le"), samples


def _group(data: dict, source: str) -> dict[str, _Replica]:
    replicas: dict[str, _Replica] = {}
    for at, name, labels, le, samples in _series(data, source):
        key = ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "all"
        rep = replicas.setdefault(key, _Replica())
        if name.endswith("_bucket"):
            try:
                bound = float(le)
            except (TypeError, ValueError):
                raise _fail(f"expected a bucket bound, got {le!r}", source,
                            f"{at}.metric.le") from None
            rep.buckets.setdefault(name.removesuffix("_bucket"), {})[bound] = dict(samples)
        else:
            rep.series[name] = dict(samples)
    return replicas


def _increase(series: dict[float, float] | None, t0: float, t1: float) -> float | None:
    if series is None or t0 not in series or t1 not in series:
        return None
    delta = series[t1] - series[t0]
    return delta if delta >= 0 else None  # a counter reset (restart): no window


def _total(series: dict[float, float] | None) -> float:
    """A counter's increase over the export, resets skipped."""
    if not series:
        return 0.0
    values = [series[t] for t in sorted(series)]
    return sum(max(0.0, b - a) for a, b in itertools.pairwise(values))


def _mean_from(rep: _Replica, names: tuple[str, ...], t0: float, t1: float) -> float | None:
    """Mean observation of a histogram over [t0, t1]: d(sum) / d(count), else from buckets."""
    for name in names:
        total, count = (_increase(rep.series.get(f"{name}_{s}"), t0, t1) for s in ("sum", "count"))
        if total is not None and count:
            return total / count
        if name in rep.buckets:
            return _bucket_mean(rep.buckets[name], t0, t1)
    return None


def _bucket_mean(buckets: dict[float, dict[float, float]], t0: float, t1: float) -> float | None:
    """Cumulative bucket increases -> per-bucket counts x bucket midpoints (the +Inf bucket at
    its lower bound): an estimate within half a bucket's width."""
    bounds = sorted(buckets)
    counts, lower, total, weighted = 0.0, 0.0, 0.0, 0.0
    for bound in bounds:
        cum = _increase(buckets[bound], t0, t1)
        if cum is None:
            return None
        n = max(0.0, cum - counts)
        mid = lower if math.isinf(bound) else (lower + bound) / 2.0
        total += n
        weighted += n * mid
        counts, lower = max(counts, cum), (bound if not math.isinf(bound) else lower)
    return weighted / total if total > 0 else None


def _hist_mean(rep: _Replica, name: str) -> float | None:
    count = _total(rep.series.get(f"{name}_count"))
    mean = _total(rep.series.get(f"{name}_sum")) / count if count else None
    # A mean of 0 tokens a request (a sum that never grew) measures nothing: it is treated as
    # absent (the assumed lengths, with a note), not divided by (a ZeroDivisionError).
    return mean if mean is not None and mean > 0 else None


@dataclass
class Windows:
    points: list[WindowPoint]
    notes: list[str]


def read_export(data: dict, source: str, max_num_batched_tokens: int | None = None) -> Windows:
    """Fit points of an export: per replica, the step windows without a queue."""
    replicas = _group(data, source)
    points: list[WindowPoint] = []
    notes: list[str] = []
    queued = idle = 0
    names = (*TPOT_NAMES, TTFT_NAME)
    for key, rep in sorted(replicas.items()):
        running = rep.series.get(RUNNING)
        if running is None:
            continue
        has_latency = any(f"{n}_count" in rep.series or n in rep.buckets for n in names)
        if not has_latency:
            continue
        waiting = rep.series.get(WAITING)
        prompt, output = _hist_mean(rep, PROMPT_HIST), _hist_mean(rep, OUTPUT_HIST)
        if prompt is None or output is None:
            notes.append(f"{key}: no {PROMPT_HIST} / {OUTPUT_HIST} (or a mean of 0 tokens); "
                         "context assumed "
                         f"{ASSUMED_PROMPT_TOKENS:g} prompt + {ASSUMED_OUTPUT_TOKENS:g} output "
                         "tokens per request")
            prompt, output = prompt or ASSUMED_PROMPT_TOKENS, output or ASSUMED_OUTPUT_TOKENS
        if waiting is None:
            notes.append(f"{key}: no {WAITING}; queued windows could not be left out")
        times = sorted(running)
        first = times[0] if times else 0.0
        for t0, t1 in itertools.pairwise(times):
            batch = (running[t0] + running[t1]) / 2.0
            queue = None if waiting is None or t0 not in waiting or t1 not in waiting \
                else (waiting[t0] + waiting[t1]) / 2.0
            if queue is not None and queue >= MAX_WAITING:
                queued += 1
                continue
            if batch < MIN_BATCH:
                idle += 1
                continue
            tpot = _mean_from(rep, TPOT_NAMES, t0, t1)
            ttft = _mean_from(rep, (TTFT_NAME,), t0, t1) if batch <= MAX_TTFT_BATCH else None
            if tpot is None and ttft is None:
                continue
            new_prompt = _increase(rep.series.get(PROMPT_TOTAL), t0, t1)
            generated = _increase(rep.series.get(OUTPUT_TOTAL), t0, t1)
            # Decode steps in the window = generated tokens / batch; new prompts = prompt
            # tokens / mean prompt.
            per_step = new_prompt / prompt / (generated / batch) \
                if new_prompt and generated else 0.0
            points.append(WindowPoint(key, t0 - first, t1 - first, batch, queue, tpot, ttft,
                                      prompt, output, per_step, max_num_batched_tokens))
    if queued:
        notes.append(f"{queued} window(s) with a queue (mean {WAITING} >= {MAX_WAITING:g}) "
                     "left out: their latency is the scheduler's, not the step's")
    if idle:
        notes.append(f"{idle} idle window(s) (mean {RUNNING} < {MIN_BATCH:g}) left out")
    if not points:
        raise UserInputError(f"no window to fit: expected {RUNNING} with "
                             f"{' or '.join(TPOT_NAMES[:2])} or {TTFT_NAME} (_sum and _count, "
                             "or _bucket) of the same replica, with requests running and no "
                             "queue", source=source)
    return Windows(points, notes)
