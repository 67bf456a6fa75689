"""The `audit` command end to end: formats, SARIF validity, exit codes, suppression, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from gpuscale.cli import cli

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
SCHEMA = json.loads((HERE / "sarif-schema-2.1.0.json").read_text())


def run(*args, input=None):
    return CliRunner().invoke(cli, ["audit", *args], input=input)


def test_findings_exit_1_and_text_groups_by_object():
    result = run(str(FIXTURES / "GPU014" / "fires.yaml"))
    assert result.exit_code == 1
    assert "Deployment/serve/fire-two-scalers" in result.output
    assert "GPU014" in result.output and "fires.yaml:4:" in result.output


def test_clean_input_exits_0(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    result = run(str(path))
    assert result.exit_code == 0, result.output
    assert "no findings" in result.output


@pytest.mark.parametrize("text, expect", [
    ("", "no Kubernetes objects"),
    ("replicaCount: 2\n", "no Kubernetes objects"),
    ("name: s\nduration_s: 60\nstrategies: []\n", "gpuscale simulate"),
    ("workloads: []\n", "gpuscale plan"),
])
def test_a_file_without_kubernetes_objects_is_refused_not_passed(tmp_path, text, expect):
    """'0 objects, no findings' (exit 0) would read as a clean audit of the wrong file."""
    path = tmp_path / "input.yaml"
    path.write_text(text)
    result = run(str(path))
    assert result.exit_code == 2, result.output
    assert str(path) in result.output and expect in result.output
    assert "no findings" not in result.output


def test_an_empty_kubernetes_list_is_a_clean_audit(tmp_path):
    # `kubectl get deploy -o yaml` on an empty namespace: a Kubernetes document, zero objects.
    path = tmp_path / "list.yaml"
    path.write_text("apiVersion: v1\nkind: List\nitems: []\n")
    result = run(str(path))
    assert result.exit_code == 0 and "0 objects, no findings" in result.output


def test_a_directory_without_manifests_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("kind: Deployment\n")
    result = run(str(tmp_path))
    assert result.exit_code == 2 and ".yaml" in result.output


def test_fail_on_threshold():
    path = str(FIXTURES / "GPU051" / "fires.yaml")  # warnings only
    assert run(path, "--fail-on", "warning").exit_code == 1
    assert run(path, "--fail-on", "error").exit_code == 0
    assert run(path, "--fail-on", "fatal").exit_code == 2


def test_json_output_fields():
    result = run(str(FIXTURES / "GPU001" / "fires.yaml"), "--format", "json", "--enable", "GPU001")
    body = json.loads(result.output)
    (finding,) = body["findings"]
    assert finding["rule"] == "GPU001" and finding["severity"] == "error"
    assert finding["path"] == "spec.metrics[0].external.metric.name"
    assert finding["line"] == 33 and finding["file"].endswith("fires.yaml")


def test_sarif_validates_against_the_2_1_0_schema():
    paths = [
        str(FIXTURES / rule / "fires.yaml") for rule in ("GPU001", "GPU004", "GPU021", "GPU040")
    ]
    result = run(*paths, "--format", "sarif")
    log = json.loads(result.output)
    jsonschema.validators.validator_for(SCHEMA)(SCHEMA).validate(log)
    results = log["runs"][0]["results"]
    assert {r["ruleId"] for r in results} >= {"GPU001", "GPU004", "GPU021", "GPU040"}
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in results)


def test_sarif_schema_rejects_a_broken_log():
    """The schema check has teeth: a result without a message is invalid SARIF."""
    log = json.loads(run(str(FIXTURES / "GPU001" / "fires.yaml"), "--format", "sarif").output)
    del log["runs"][0]["results"][0]["message"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validators.validator_for(SCHEMA)(SCHEMA).validate(log)


def test_suppression_annotation_by_id_and_name(tmp_path):
    text = (FIXTURES / "GPU022" / "fires.yaml").read_text()
    assert run("-", "--enable", "GPU022", input=text).exit_code == 1
    for key in ("GPU022", "gpu-nodepool-without-gpu-limit", "all"):
        quiet = text.replace(
            "  name: fire-no-limit\n",
            f'  name: fire-no-limit\n  annotations:\n    gpuscale.io/ignore: "GPU001, {key}"\n',
        )
        result = run("-", "--enable", "GPU022", input=quiet)
        assert result.exit_code == 0, (key, result.output)


def test_disable_and_unknown_rule():
    path = str(FIXTURES / "GPU022" / "fires.yaml")
    assert run(path, "--enable", "GPU022", "--disable", "GPU022").exit_code == 0
    bad = run(path, "--enable", "GPU0222")
    assert bad.exit_code == 2 and "unknown rule" in bad.output


def test_malformed_file_one_line_exit_2(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: [x\n")
    result = run(str(path))
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and str(path) in lines[0] and "line" in lines[0]


def test_alias_bomb_on_stdin_exit_2():
    bomb = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"{c}: &{c} [" + ",".join([f"*{p}"] * 9) + "]\n"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    result = run(
        "-",
        input="apiVersion: v1\nkind: ConfigMap\ndata:\n"
        + "".join("  " + line + "\n" for line in bomb.splitlines()),
    )
    assert result.exit_code == 2 and "alias" in result.output


def test_no_input_is_usage_error():
    assert run().exit_code == 2


def test_summary_line_counts_agree_in_number():
    from pathlib import Path

    from click.testing import CliRunner

    from gpuscale.cli import cli

    fixture = Path(__file__).parent / "fixtures" / "GPU001" / "fires.yaml"
    one = CliRunner().invoke(cli, ["audit", str(fixture), "--enable", "GPU001"])
    assert one.output.rstrip().endswith("2 objects, 1 finding (1 error)"), one.output
    two = CliRunner().invoke(cli, ["audit", str(fixture)])
    assert two.output.rstrip().endswith("2 objects, 2 findings (1 error, 1 warning)"), two.output
