"""A KEDA cron trigger in a simulated run: capacity arrives on the wall clock of the
scenario's start_time, before the traffic asks for it (issue 27)."""

from __future__ import annotations

from gpuscale.sim import simulate_scenario

from .scenarios import small_scenario

QUEUE = {"query": {"metric": "vllm:num_requests_waiting", "aggregation": "sum"},
         "threshold": 1000}  # never reached: only the schedule moves the fleet


def scheduled(start_time: str):
    keda = {"kind": "keda", "min_replica_count": 1, "max_replica_count": 8,
            "polling_interval_s": 15,
            "triggers": [QUEUE, {"type": "cron", "timezone": "Etc/UTC", "start": "2 0 * * *",
                                 "end": "6 0 * * *", "desired_replicas": 3}]}
    return small_scenario(duration_s=600.0, drain_s=300.0, start_time=start_time,
                          strategies=[{"name": "cron", "autoscaler": keda}])


def test_replicas_follow_the_window_on_the_wall_clock(tmp_path):
    result, _ = simulate_scenario(scheduled("2026-01-01T00:00:00Z"), tmp_path)
    run = result.runs[0]
    # the window opens at 00:02 (t = 120 s) and closes at 00:06; the generated HPA's default
    # 300 s scale-down stabilization then holds the 3 replicas until 00:11
    assert run.extra["markers"] == [(120.0, "scale_up", "1->3"), (660.0, "scale_down", "3->1")]
    assert run.series["replicas_ready"][run.series["time_s"] < 120].max() == 1
    # the same traffic started at 00:01 meets the window a minute sooner
    later, _ = simulate_scenario(scheduled("2026-01-01T00:01:00Z"), tmp_path)
    assert later.runs[0].extra["markers"][0] == (60.0, "scale_up", "1->3")

def test_a_cron_window_that_never_opens_in_the_traffic_is_one_clear_error(tmp_path):
    import yaml
    from click.testing import CliRunner

    from gpuscale.cli import cli

    data = scheduled("2026-01-01T00:00:00Z").model_dump(mode="json", exclude_none=True)
    data["strategies"][0]["autoscaler"]["triggers"][1].update(start="0 8 * * *",
                                                              end="0 9 * * *")
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(cli, ["simulate", str(path)])
    assert result.exit_code == 2
    line = result.output.strip()
    assert "\n" not in line and "never opens" in line and str(path) in line
    assert "strategies[0].autoscaler.triggers[1]" in line
