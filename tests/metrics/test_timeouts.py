"""Requests that never got a first token count as infinite TTFT and as SLO breaches."""

import math

import numpy as np

from gpuscale.metrics.summary import percentile_with_inf, request_summary, slo_breach_minutes
from gpuscale.serving.requests_table import COMPLETED, DROPPED, RequestColumns


def _cols(n_ok: int, n_dropped: int) -> RequestColumns:
    n = n_ok + n_dropped
    arrival = np.arange(n, dtype=float)
    first = np.where(np.arange(n) < n_ok, arrival + 0.1, np.nan)
    finish = np.where(np.arange(n) < n_ok, arrival + 1.0, arrival + 0.5)
    status = np.where(np.arange(n) < n_ok, COMPLETED, DROPPED).astype(np.int8)
    return RequestColumns(arrival_s=arrival, prompt_tokens=np.full(n, 100),
                          output_tokens=np.full(n, 10), first_token_s=first, finish_s=finish,
                          status=status, num_preemptions=np.zeros(n, np.int32),
                          num_retries=np.zeros(n, np.int32), num_arrived=n)


def test_dropped_requests_push_ttft_percentiles_to_infinity():
    # 14 served in 0.1 s, 546 dropped: before, TTFT p99 read 0.1 s.
    summary = request_summary(_cols(14, 546), ttft_slo_s=2.0, tpot_slo_s=0.2, window_s=560)
    assert math.isinf(summary["ttft_s"]["p50"]) and math.isinf(summary["ttft_s"]["p99"])
    assert summary["slo_attainment"] == round(14 / 560, 6)
    fine = request_summary(_cols(560, 0), ttft_slo_s=2.0, tpot_slo_s=0.2, window_s=560)
    assert fine["ttft_s"]["p99"] == 0.1


def test_percentile_with_inf_matches_numpy_on_finite_values_and_never_gives_nan():
    values = np.sort(np.random.default_rng(1).exponential(size=101))
    for q in (0, 50, 90, 99, 100):
        assert math.isclose(percentile_with_inf(values, q), float(np.percentile(values, q)))
    tail = np.append(values[:99], [np.inf, np.inf])
    assert math.isinf(percentile_with_inf(tail, 99.0))
    assert not math.isnan(percentile_with_inf(np.array([np.inf, np.inf]), 50.0))


def test_a_run_that_drops_most_requests_spends_minutes_in_breach():
    scrapes = np.arange(15.0, 600.0, 15.0)
    assert slo_breach_minutes(_cols(560, 0), 2.0, scrapes, 15.0) == 0.0
    breached = slo_breach_minutes(_cols(14, 546), 2.0, scrapes, 15.0)
    assert breached >= 0.9 * len(scrapes) * 15.0 / 60.0
