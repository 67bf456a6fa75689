"""audit output gives the fix everywhere; SARIF helpUri is absolute; --list-rules/--explain;
-o yaml; --kubeconfig/-n and in-cluster config for --cluster."""

import json
import sys
import types
from pathlib import Path
from urllib.parse import urlparse

import yaml
from click.testing import CliRunner

from gpuscale.audit.rules import RULES
from gpuscale.cli import cli

FIRES = Path(__file__).parent / "fixtures" / "GPU001" / "fires.yaml"


def _audit(*args):
    return CliRunner().invoke(cli, ["audit", *args])


def test_text_and_json_give_the_fix():
    text = _audit(str(FIRES)).output
    assert f"fix: {RULES['GPU001'].fix}" in text
    data = json.loads(_audit(str(FIRES), "-o", "json").output)
    gpu001 = next(f for f in data["findings"] if f["rule"] == "GPU001")
    assert gpu001["fix"] == RULES["GPU001"].fix and gpu001["help_uri"].endswith("GPU001.md")
    assert yaml.safe_load(_audit(str(FIRES), "-o", "yaml").output) == data


def test_sarif_help_uri_is_absolute():
    sarif = json.loads(_audit(str(FIRES), "--format", "sarif").output)
    for rule in sarif["runs"][0]["tool"]["driver"]["rules"]:
        uri = urlparse(rule["helpUri"])
        assert uri.scheme == "https" and uri.netloc, rule["helpUri"]


def test_list_rules_and_explain():
    listing = _audit("--list-rules")
    assert listing.exit_code == 0
    for rule_id in RULES:
        assert rule_id in listing.output
    explained = _audit("--explain", "GPU001")
    assert explained.exit_code == 0
    assert RULES["GPU001"].name in explained.output and "Fix" in explained.output
    by_name = _audit("--explain", RULES["GPU001"].name, "-o", "json")
    assert json.loads(by_name.output)["id"] == "GPU001"
    unknown = _audit("--explain", "GPU0001x")
    assert unknown.exit_code == 2 and "unknown rule" in unknown.output


def _fake_kubernetes(monkeypatch, calls):
    class Resource:
        def __init__(self, kind, namespaced):
            self.kind, self.namespaced = kind, namespaced

        def get(self, namespace=None):
            calls.append((self.kind, namespace))
            return types.SimpleNamespace(items=[])

    class Resources:
        def get(self, api_version, kind):
            return Resource(kind, kind not in ("Node", "NodePool"))

    config = types.SimpleNamespace(
        load_incluster_config=lambda: calls.append(("incluster", None)),
        new_client_from_config=lambda config_file=None, context=None:
            calls.append(("kubeconfig", config_file)))
    client = types.SimpleNamespace(ApiClient=lambda: object())
    dynamic = types.SimpleNamespace(DynamicClient=lambda api: types.SimpleNamespace(
        resources=Resources()))
    exceptions = types.SimpleNamespace(ResourceNotFoundError=KeyError)
    module = types.SimpleNamespace(client=client, config=config, dynamic=dynamic)
    monkeypatch.setitem(sys.modules, "kubernetes", module)
    monkeypatch.setitem(sys.modules, "kubernetes.dynamic", dynamic)
    monkeypatch.setitem(sys.modules, "kubernetes.dynamic.exceptions", exceptions)


def test_cluster_namespace_kubeconfig_and_in_cluster(monkeypatch, tmp_path):
    from gpuscale.audit.cluster import read_cluster

    calls: list = []
    _fake_kubernetes(monkeypatch, calls)
    read_cluster(("Deployment", "NodePool"), kubeconfig=str(tmp_path / "kc"), namespace="serve")
    assert calls == [("kubeconfig", str(tmp_path / "kc")), ("Deployment", "serve"),
                     ("NodePool", None)]
    calls.clear()
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    read_cluster(("Deployment",))
    assert calls[0] == ("incluster", None)
    result = CliRunner().invoke(cli, ["audit", "--cluster", "-n", "serve", "--kubeconfig",
                                      str(tmp_path / "kc")])
    assert result.exit_code == 0, result.output
