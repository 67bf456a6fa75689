"""Bad scenario input: one line naming the file, the field and what was expected; exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gpuscale.cli import cli
from gpuscale.errors import UserInputError
from gpuscale.scenario import load_scenario, scenario_from_dict

from ..sim.scenarios import small_scenario


def _valid() -> dict:
    return small_scenario().model_dump(mode="json")


def _write(tmp_path: Path, data) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    return path


def test_valid_scenario_round_trips(tmp_path):
    scenario = load_scenario(_write(tmp_path, _valid()))
    assert scenario.model.name == "Llama-3.1-8B"


@pytest.mark.parametrize(
    ("mutate", "field", "expected"),
    [
        (lambda d: d.update(durration_s=5), "durration_s", "unknown key"),
        (lambda d: d["cluster"].update(ready_nodes=-1), "cluster.ready_nodes",
         "greater than or equal to 0"),
        (lambda d: d["cluster"].update(ready_nodes=9, max_nodes=2), "cluster",
         "ready_nodes (9) > max_nodes (2)"),
        (lambda d: d["model"].update(precision="fp4"), "model.precision", "'nvfp4' or 'mxfp4'"),
        (lambda d: d["strategies"][1]["autoscaler"].update(kind="magic"),
         "strategies[1].autoscaler", "magic"),
        (lambda d: d.update(strategies=[d["strategies"][0], d["strategies"][0]]), "(top level)",
         "repeated: fixed-1"),
    ],
)
def test_errors_name_the_field(tmp_path, mutate, field, expected):
    data = _valid()
    mutate(data)
    with pytest.raises(UserInputError) as info:
        load_scenario(_write(tmp_path, data))
    message = str(info.value)
    assert message.startswith(str(tmp_path / "scenario.yaml")), message
    assert field in message and expected in message, message
    assert "\n" not in message


def test_unknown_model_suggests_close_names():
    data = _valid()
    data["model"]["name"] = "Llama-3.1-8b"
    # Refused at load time with its field, not mid-run without one.
    with pytest.raises(
        UserInputError, match=r"model.name: unknown model .*did you mean Llama-3.1-8B"
    ):
        scenario_from_dict(data, source="s.yaml")


def test_unknown_instance_type_names_the_field_and_suggests():
    data = _valid()
    data["cluster"]["instance_type"] = "g6.25xlarge"
    with pytest.raises(UserInputError) as info:
        scenario_from_dict(data, source="s.yaml")
    message = str(info.value)
    assert message.startswith("s.yaml: cluster.instance_type: unknown instance type"), message
    assert "did you mean" in message and "Value error" not in message


@pytest.mark.parametrize(("limit", "expected"), [("abc", "not a Kubernetes quantity"),
                                                 (-3, "must be >= 0")])
def test_bad_nodepool_limit_is_refused_at_load(limit, expected):
    from gpuscale.provisioning.karpenter.nodepool import NodePoolParams

    with pytest.raises(ValueError, match=expected):
        NodePoolParams(name="gpu", limits={"nvidia.com/gpu": limit})


def test_yaml_syntax_error_gives_line_and_column(tmp_path):
    path = _write(tmp_path, "name: x\nduration_s: [1, 2\n")
    with pytest.raises(UserInputError, match=r"line \d+, column \d+: invalid YAML"):
        load_scenario(path)


def test_cli_bad_input_exits_2_with_one_line_and_no_traceback(tmp_path):
    data = _valid()
    data["cluster"]["instance_type"] = "p9.huge"
    path = _write(tmp_path, data)
    result = CliRunner().invoke(cli, ["simulate", str(path)])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "unknown instance type 'p9.huge'" in lines[0]
    assert "Traceback" not in result.output


def test_cli_missing_file_exits_2(tmp_path):
    result = CliRunner().invoke(cli, ["simulate", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2 and "file not found" in result.output


def test_a_misspelled_kind_names_the_kind_field_and_the_nearest_kind():
    data = _valid()
    data["strategies"][1]["autoscaler"]["kind"] = "kedda"
    with pytest.raises(UserInputError) as info:
        scenario_from_dict(data, source="s.yaml")
    message = str(info.value)
    assert "strategies[1].autoscaler.kind: unknown kind 'kedda'; did you mean 'keda'?" in message
    assert "sla_planner" in message  # the valid kinds are listed


def test_a_kind_with_no_near_match_lists_the_kinds_without_guessing():
    data = _valid()
    data["workload"] = {"kind": "zzz"}
    with pytest.raises(UserInputError) as info:
        scenario_from_dict(data, source="s.yaml")
    message = str(info.value)
    assert "workload.kind: unknown kind 'zzz'" in message and "did you mean" not in message
    assert "poisson" in message and "trace" in message


def test_a_misspelled_scaler_metric_fails_at_load_with_a_suggestion():
    data = _valid()
    data["strategies"][1]["autoscaler"]["triggers"][0]["query"]["metric"] = (
        "vllm:num_request_waiting")
    with pytest.raises(UserInputError) as info:
        scenario_from_dict(data, source="s.yaml")
    message = str(info.value)
    assert "strategies[1].autoscaler" in message
    assert "did you mean 'vllm:num_requests_waiting'" in message


def test_signal_queries_are_checked_against_the_fleet_signals():
    data = _valid()
    data["strategies"][1]["autoscaler"]["triggers"][0]["query"] = {
        "metric": "gateway_queue", "source": "signal"}
    assert scenario_from_dict(data) is not None
    data["strategies"][1]["autoscaler"]["triggers"][0]["query"]["metric"] = "router_queue"
    with pytest.raises(UserInputError, match="known: request_rate_per_s"):
        scenario_from_dict(data)


def test_engine_publishes_exactly_the_documented_fleet_signals():
    from pathlib import Path

    from gpuscale.metrics.store import FLEET_SIGNALS
    from gpuscale.sim.run import _Run, scenario_requests

    scenario = small_scenario(duration_s=60.0)
    run = _Run(scenario, scenario.strategies[0], scenario_requests(scenario, Path(".")), None)
    run.run()
    assert tuple(run.scraper.signals) == FLEET_SIGNALS


def test_tp_that_cannot_split_the_attention_heads_is_refused():
    data = _valid()
    data["model"]["tp"] = 3
    with pytest.raises(UserInputError, match="tp=3 does not divide the 32 attention heads"):
        scenario_from_dict(data)
