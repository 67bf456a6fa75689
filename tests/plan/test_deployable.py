"""Plans people deploy: a kustomization over the manifests, no namespace baked into PromQL,
a Grafana dashboard for the chosen signals, `plan -o yaml` for `kubectl apply -f -`, and
core objects valid for the Kubernetes API (kubernetes-validate, strict)."""

import json

import pytest
import yaml
from click.testing import CliRunner

from gpuscale.cli import cli
from gpuscale.manifests.plan import render_kustomization

from .helpers import EXAMPLE_NAMES, EXAMPLES, all_objects, example_manifests


def _queries(obj) -> list[str]:
    out = []
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key in ("query", "expr") and isinstance(value, str):
                out.append(value)
            else:
                out += _queries(value)
    elif isinstance(obj, list):
        for value in obj:
            out += _queries(value)
    return out


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_no_promql_hard_codes_a_namespace(name):
    files = example_manifests(name)
    if not files:
        pytest.skip("a refusal plan has no manifests")
    queries = [q for objs in files.values() for o in objs for q in _queries(o)]
    dashboards = [json.loads(v) for objs in files.values() for o in objs
                  if o["kind"] == "ConfigMap" for v in o["data"].values()]
    queries += [q for d in dashboards for q in _queries(d)]
    assert queries
    assert not [q for q in queries if "namespace=" in q.replace("on (namespace", "")]


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_the_selector_label_is_attached_by_the_service_monitor(name):
    files = example_manifests(name)
    monitors = [o for objs in files.values() for o in objs if o["kind"] == "ServiceMonitor"]
    services = {o["metadata"]["name"]: o for objs in files.values() for o in objs
                if o["kind"] == "Service"}
    for monitor in monitors:
        assert monitor["spec"]["targetLabels"] == ["gpuscale.io/scaler-target"]
        service = services[monitor["metadata"]["name"]]
        assert (
            service["metadata"]["labels"]["gpuscale.io/scaler-target"]
            == service["metadata"]["name"]
        )


def test_grafana_dashboard_shows_the_signals_the_scalers_use():
    files = example_manifests("llama70b-fp8-h100-chat")
    (configmap,) = files["grafana-dashboard.yaml"]
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    (dashboard,) = [json.loads(v) for v in configmap["data"].values()]
    exprs = " ".join(_queries(dashboard))
    scaler_queries = [q for objs in files.values() for o in objs if o["kind"] == "ScaledObject"
                      for q in _queries(o)]
    for query in scaler_queries:
        assert query in exprs
    assert "vllm:time_to_first_token_seconds_bucket" in exprs


def test_plan_out_writes_a_kustomization_and_o_yaml_prints_every_manifest(tmp_path):
    example = EXAMPLES / "llama70b-fp8-h100-chat.yaml"
    out = tmp_path / "plan"
    result = CliRunner().invoke(cli, ["plan", str(example), "--no-simulate", "--out", str(out)])
    assert result.exit_code == 0, result.output
    kustomization = yaml.safe_load((out / "manifests" / "kustomization.yaml").read_text())
    listed = sorted(p.name for p in (out / "manifests").glob("*.yaml")
                    if p.name != "kustomization.yaml")
    assert kustomization["resources"] == listed
    printed = CliRunner().invoke(cli, ["plan", "-", "--no-simulate", "-o", "yaml"],
                                 input=example.read_text())
    assert printed.exit_code == 0, printed.output
    streamed = [d for d in yaml.safe_load_all(printed.output) if d]
    on_disk = [d for p in listed for d in yaml.safe_load_all((out / "manifests" / p).read_text())]
    assert streamed == on_disk


def test_render_kustomization_lists_files_in_order():
    assert render_kustomization({"b.yaml": [], "a.yaml": []})["resources"] == ["a.yaml", "b.yaml"]


CORE_KINDS = {"Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler",
              "ConfigMap"}


def test_core_objects_validate_strictly_against_the_kubernetes_api():
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    checked = 0
    for name, file, obj in all_objects():
        if obj["kind"] not in CORE_KINDS:
            continue  # CRDs are checked against their own schemas (test_manifests_schema.py)
        try:
            kubernetes_validate.validate(obj, "1.30", strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{name}/{file} {obj['kind']}/{obj['metadata']['name']}: {exc}")
        checked += 1
    assert checked
