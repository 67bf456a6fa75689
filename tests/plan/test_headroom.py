"""simulation.headroom_frac (issue 27, robust on another day): the fit runs replay the trace
with more load on the same clock; the check, the replay and what ships run it as recorded."""

from __future__ import annotations

import pytest
import yaml

from gpuscale.plan.history import History, Window
from gpuscale.plan.trace_search import DAY_HEADROOM_FRAC, headroom_frac

from .replay_checks import plan_out
from .trace_history import history_input, write_trace


def _history(span_s: float) -> History:
    return History(span_s, Window(0.0, 0.8 * span_s, "fit"),
                   Window(0.8 * span_s, span_s, "check"), False, "")


def test_a_day_of_history_gets_the_day_headroom_and_an_hour_none():
    assert headroom_frac(None, _history(86_390.0)) == DAY_HEADROOM_FRAC
    assert headroom_frac(None, _history(3 * 86_400.0)) == DAY_HEADROOM_FRAC
    assert headroom_frac(None, _history(3_600.0)) == 0.0
    assert headroom_frac(0.25, _history(3_600.0)) == 0.25  # the input's own wins
    assert headroom_frac(0.0, _history(86_400.0)) == 0.0


def _plan(tmp_path, headroom: float | None) -> tuple[dict, dict]:
    trace = write_trace(tmp_path / "t.csv")
    data = history_input(trace)
    if headroom is not None:
        data["simulation"]["headroom_frac"] = headroom
    plan, out = plan_out(tmp_path, data, f"out-{headroom}")
    return plan, yaml.safe_load((out / "scenarios" / "chat.yaml").read_text())


def _busiest_fleet(plan: dict) -> int:
    rows = [r for r in plan["warm_pools"]["chat"]["evidence"]
            if r["config"].startswith("busiest stretch") and r["meets_slo"]]
    return min(r["min_replicas"] for r in rows)


@pytest.mark.slow
def test_the_fit_is_sized_with_headroom_and_the_replay_runs_as_recorded(tmp_path):
    plain, plain_replay = _plan(tmp_path, None)  # 3 hours: no headroom by default
    more, more_replay = _plan(tmp_path, 1.0)
    assert _busiest_fleet(more) > _busiest_fleet(plain)
    assert "100% more traffic" in more["warm_pools"]["chat"]["method"]
    assert "more traffic" not in plain["warm_pools"]["chat"]["method"]
    # what compare re-runs is the traffic as recorded, whatever the fit was sized for
    for replay in (plain_replay, more_replay):
        assert replay["workload"].get("load_scale", 1.0) == 1.0
    assert more_replay["workload"] == plain_replay["workload"]
