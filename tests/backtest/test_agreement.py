"""Recorded against replayed: replicas within one, scale events matched with their lag, the
bar of `agrees`, and the signal that departs first with what it suggests."""

import numpy as np

from gpuscale.backtest import agreement

STEP_S = 15.0
STEPS = 40


def _aligned(**departures: tuple[int, float]) -> agreement.Aligned:
    """Every signal alike on both sides but those given: (from step, amount added to the
    replay from there)."""
    base = {"queue": 2.0, "ttft_p50_s": 0.2, "ttft_p99_s": 0.8, "itl_p50_s": 0.03,
            "itl_p99_s": 0.05, "kv_usage": 0.3, "replicas": 2.0, "gpus": 2.0}
    recorded = {name: np.full(STEPS, value) for name, value in base.items()}
    simulated = {name: values.copy() for name, values in recorded.items()}
    for name, (start, amount) in departures.items():
        simulated[name][start:] += amount
    return agreement.Aligned(recorded, simulated, STEP_S, 30.0)


def test_nothing_departs_nothing_is_named():
    assert agreement.first_divergence(_aligned()) is None


def test_the_load_departing_first_points_at_the_replicas_speed():
    found = agreement.first_divergence(_aligned(queue=(8, 40.0), replicas=(12, 3.0)))
    assert found["signal"] == "queue" and found["at_s"] == 30.0 + 8 * STEP_S
    assert "calibrate --fit" in found["suggests"]


def test_replicas_departing_while_the_load_agrees_point_at_a_controller_setting():
    found = agreement.first_divergence(_aligned(replicas=(5, 2.0), gpus=(9, 2.0)))
    assert found["signal"] == "replicas" and "controller setting" in found["suggests"]


def test_a_blip_shorter_than_a_minute_is_no_divergence():
    aligned = _aligned()
    aligned.simulated["queue"][10:13] += 50.0  # three steps: 45 s
    assert agreement.first_divergence(aligned) is None


def test_at_the_same_step_the_cause_is_named_before_what_follows_it():
    found = agreement.first_divergence(_aligned(replicas=(6, 2.0), queue=(6, 40.0)))
    assert found["signal"] == "queue"


def test_scale_events_are_matched_in_turn_within_the_window():
    recorded = agreement.scale_events(np.array([1, 1, 2, 2, 2, 3, 3, 2, 2, 2.0]), 60.0)
    replayed = agreement.scale_events(np.array([1, 1, 1, 2, 2, 2, 2, 2, 2, 2.0]), 60.0)
    assert recorded == [(120.0, 1, 2.0), (300.0, 1, 3.0), (420.0, -1, 2.0)]
    matched = agreement.match_events(recorded, replayed)
    assert (matched["recorded"], matched["simulated"], matched["matched"]) == (3, 1, 1)
    assert matched["lag_s_median"] == 60.0  # the replay's one up, a step after the first


def test_the_bar_of_agrees():
    aligned = _aligned(replicas=(30, 2.0))  # 10 of 40 steps two replicas apart
    numbers = agreement.compare(aligned, (0.9, 0.91))
    assert numbers["replicas_within_one_frac"] == 0.75 and not numbers["agrees"]
    numbers = agreement.compare(_aligned(replicas=(36, 2.0)), (0.9, 0.91))
    assert numbers["replicas_within_one_frac"] == 0.9 and numbers["agrees"]
    assert not agreement.compare(_aligned(), (0.9, 0.95))["agrees"]  # 5 SLO points apart
