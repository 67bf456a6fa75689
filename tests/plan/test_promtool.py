"""The PromQL of every plan passes `promtool check rules`, and the kill-switch alert fires on a
series whose P99 TTFT breaches the SLO (and not before). Skipped without promtool (Debian's
`prometheus` package, installed by .ci/run)."""

import shutil
import subprocess

import pytest
import yaml

from gpuscale.manifests.keda import render_scaled_object
from gpuscale.manifests.prometheus import kill_switch_test, rules_file

from .helpers import example_manifests, example_plan

PROMTOOL = shutil.which("promtool")
pytestmark = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool not installed (apt-get install prometheus)"
)
PLANS = [
    "llama70b-fp8-h100-chat",
    "disaggregated-prefill-decode",
    "shared-cluster-prod-and-training",
]


def _rule(name):
    return example_manifests(name)["monitoring.yaml"][0]


def _scaler_rules(name):
    """Every scaler query as a recording rule, so promtool parses it as PromQL."""
    rules = []
    for role in example_plan(name).roles:
        for i, trigger in enumerate(render_scaled_object(role)["spec"]["triggers"]):
            rules.append({"record": f"gpuscale:scaler_{i}:{role.name.replace('-', '_')}",
                          "expr": trigger["metadata"]["query"]})
    return {"groups": [{"name": "scalers", "rules": rules}]}


@pytest.mark.parametrize("name", PLANS)
def test_promtool_check_rules(tmp_path, name):
    alerts = tmp_path / "rules.yaml"
    alerts.write_text(yaml.safe_dump(rules_file(_rule(name)), sort_keys=False))
    scalers = tmp_path / "scalers.yaml"
    scalers.write_text(yaml.safe_dump(_scaler_rules(name), sort_keys=False))
    result = subprocess.run([PROMTOOL, "check", "rules", str(alerts), str(scalers)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_check_rules_rejects_bad_promql(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"groups": [{"name": "g", "rules": [
        {"record": "x", "expr": "sum(vllm:num_requests_waiting{service=\"a\"}"}]}]}))
    assert (
        subprocess.run([PROMTOOL, "check", "rules", str(bad)], capture_output=True).returncode != 0
    )


@pytest.mark.parametrize("name", PLANS)
def test_kill_switch_fires_on_ttft_breach(tmp_path, name):
    plan = example_plan(name)
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules_file(_rule(name)), sort_keys=False))
    for role in plan.roles:
        case = tmp_path / f"test-{role.name}.yaml"
        case.write_text(yaml.safe_dump(kill_switch_test(plan, role, "rules.yaml"), sort_keys=False))
        result = subprocess.run([PROMTOOL, "test", "rules", case.name], cwd=tmp_path,
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr


def test_kill_switch_test_fails_when_the_alert_is_missing(tmp_path):
    """The promtool case is not vacuous: with the alert removed it fails."""
    plan = example_plan("llama70b-fp8-h100-chat")
    rule = rules_file(_rule("llama70b-fp8-h100-chat"))
    rule["groups"] = [g for g in rule["groups"] if not g["name"].endswith("kill-switch")]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rule, sort_keys=False))
    case = tmp_path / "t.yaml"
    case.write_text(
        yaml.safe_dump(kill_switch_test(plan, plan.roles[0], "rules.yaml"), sort_keys=False)
    )
    assert subprocess.run([PROMTOOL, "test", "rules", "t.yaml"], cwd=tmp_path,
                          capture_output=True).returncode != 0
