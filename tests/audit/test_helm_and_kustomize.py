"""A Helm template in a directory is skipped with the `helm template` hint (the rest audited);
a kustomize directory is read through its kustomization.yaml or refused with a hint."""

import shutil
from pathlib import Path

from click.testing import CliRunner

from gpuscale.cli import cli

FIRES = Path(__file__).parent / "fixtures" / "GPU001" / "fires.yaml"
TEMPLATE = ('apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n'
            '  labels: {{- include "chart.labels" . | nindent 4 }}\n')


def _audit(*args):
    return CliRunner(mix_stderr=False).invoke(cli, ["audit", *args]) if _mix() else \
        CliRunner().invoke(cli, ["audit", *args])


def _mix() -> bool:
    import inspect
    return "mix_stderr" in inspect.signature(CliRunner.__init__).parameters


def test_directory_with_a_helm_template_audits_the_rest(tmp_path):
    shutil.copy(FIRES, tmp_path / "plain.yaml")
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "deploy.yaml").write_text(TEMPLATE)
    result = _audit(str(tmp_path))
    assert result.exit_code == 1  # GPU001 in plain.yaml still fires
    assert "GPU001" in result.output
    assert "this is a Helm template: run `helm template" in result.stderr
    assert "deploy.yaml" in result.stderr


def test_a_helm_template_given_by_name_is_refused_with_the_hint(tmp_path):
    (tmp_path / "deploy.yaml").write_text(TEMPLATE)
    result = _audit(str(tmp_path / "deploy.yaml"))
    assert result.exit_code == 2 and "helm template" in result.stderr


def test_kustomize_directory_is_read_through_its_resources(tmp_path):
    (tmp_path / "base").mkdir()
    shutil.copy(FIRES, tmp_path / "base" / "app.yaml")
    (tmp_path / "unlisted.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
    )
    (tmp_path / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - base\n")
    (tmp_path / "base" / "kustomization.yaml").write_text("resources:\n  - app.yaml\n")
    result = _audit(str(tmp_path), "-o", "json")
    assert result.exit_code == 1, result.output
    import json
    data = json.loads(result.stdout)
    assert data["objects"] == 2  # the Deployment and HPA of app.yaml; not the kustomizations
    assert any(f["rule"] == "GPU001" for f in data["findings"])


def test_a_transforming_kustomization_is_refused_with_the_kubectl_kustomize_hint(tmp_path):
    shutil.copy(FIRES, tmp_path / "app.yaml")
    (tmp_path / "kustomization.yaml").write_text("namespace: prod\nresources: [app.yaml]\n")
    result = _audit(str(tmp_path))
    assert result.exit_code == 2
    assert "kubectl kustomize" in result.stderr and "namespace" in result.stderr


def test_a_prometheus_rule_with_alert_templates_is_not_mistaken_for_helm(tmp_path):
    (tmp_path / "rule.yaml").write_text(
        "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata: "
        "{name: r, namespace: m}\n"
        "spec:\n  groups:\n  - name: g\n    rules:\n    - alert: A\n      expr: up == 0\n"
        '      annotations:\n        summary: "{{ $labels.pod }} down for {{ $value }}"\n'
    )
    (tmp_path / "chart.yaml").write_text(
        'metadata:\n  name: "{{ .Values.name }}"\nkind: Deployment\napiVersion: apps/v1\n'
    )
    result = _audit(str(tmp_path), "-o", "json")
    import json
    assert json.loads(result.stdout)["objects"] == 1  # the rule; the quoted .Values file skipped
    assert "chart.yaml" in result.stderr and "rule.yaml" not in result.stderr
