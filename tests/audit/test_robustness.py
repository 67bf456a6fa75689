"""Misshapen manifests and snapshots are bad input (exit 2, one line), never a traceback.

Fuzzing the audit with the fixtures' own objects, one to three fields replaced by a value of
another type, once raised AttributeError/TypeError/ValueError from ~20 places in the rules and
the diagnosis. These tests keep every such input on the one-line path.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuscale.audit import audit_objects, parse_text
from gpuscale.audit.diagnose.causes import diagnose
from gpuscale.audit.structure import shape_error
from gpuscale.cli import cli
from gpuscale.errors import UserInputError

HERE = Path(__file__).resolve().parent
MANIFESTS = [doc for path in sorted((HERE / "fixtures").rglob("*.yaml"))
             for doc in yaml.safe_load_all(path.read_text()) if isinstance(doc, dict)]
SNAPSHOTS = [json.loads(p.read_text()) for p in sorted((HERE / "diagnose").glob("*.json"))]
ODD_VALUES = [None, 0, -1, 3.5, "", "abc", "10%", "5m", [], {}, [1, "x"], {"a": 1}, True, "1Gi"]


def _paths(node, path=()):
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, path + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, path + (index,))


def _mutate(doc, data):
    """Replace one to three fields (anywhere below the top) with a value of another type."""
    doc = copy.deepcopy(doc)
    for _ in range(data.draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if len(p) >= 1]
        if not paths:
            break
        path = data.draw(st.sampled_from(paths))
        parent = doc
        for part in path[:-1]:
            parent = parent[part]
        parent[path[-1]] = copy.deepcopy(data.draw(st.sampled_from(ODD_VALUES)))
    return doc


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_mutated_manifest_is_audited_or_refused_in_one_line(data):
    docs = [_mutate(d, data) for d in data.draw(st.lists(st.sampled_from(MANIFESTS), min_size=1,
                                                         max_size=3))]
    try:
        audit_objects(parse_text(yaml.safe_dump_all(docs), "m.yaml"))
    except UserInputError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("m.yaml")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_mutated_snapshot_is_diagnosed_or_refused_in_one_line(data):
    snapshot = _mutate(data.draw(st.sampled_from(SNAPSHOTS)), data)
    try:
        diagnose(parse_text(json.dumps(snapshot), "s.json"))
    except UserInputError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("s.json")


def test_the_first_misshapen_field_is_named_with_its_expectation():
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"},
              "spec": {"replicas": "3", "template": {"spec": {"containers": [{"name": "c"}]}}}}
    assert shape_error(deploy) == (("spec", "replicas"), "expected an integer, got '3'")
    deploy["spec"]["replicas"] = 3
    assert shape_error(deploy) is None
    deploy["spec"]["template"]["spec"]["containers"] = {"name": "c"}
    assert shape_error(deploy) == (("spec", "template", "spec", "containers"),
                                   "expected a list, got a mapping")
    # A label value must be a string; a KEDA trigger's metadata keys are the scaler's own.
    assert shape_error({"metadata": {"labels": {"team": {"a": 1}}}})[0] == \
        ("metadata", "labels", "team")
    keda = {"spec": {"triggers": [{"type": "prometheus", "metadata": {"labels": "x"}}]}}
    assert shape_error(keda) is None


def test_cli_names_file_line_object_and_field(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"
                    "spec:\n  template: 5\n")
    result = CliRunner().invoke(cli, ["audit", str(path)])
    assert result.exit_code == 2
    assert f"{path}: line 5, column 3: Deployment/web: spec.template: expected a mapping, got 5" \
        in result.output


def test_a_value_a_rule_cannot_read_names_the_rule(tmp_path):
    path = tmp_path / "pool.yaml"
    pool = next(d for d in MANIFESTS if d.get("kind") == "NodePool"
                and d.get("spec", {}).get("disruption"))
    pool = copy.deepcopy(pool)
    pool["spec"]["disruption"]["budgets"] = [{"nodes": "many"}]
    path.write_text(yaml.safe_dump(pool))
    result = CliRunner().invoke(cli, ["audit", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "GPU024" in result.output and "'many'" in result.output


def test_a_misshapen_snapshot_is_refused_by_diagnose(tmp_path):
    snapshot = copy.deepcopy(SNAPSHOTS[0])
    node = next(o for o in snapshot["items"] if o["kind"] == "Node")
    node["status"] = "Ready"
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(snapshot))
    result = CliRunner().invoke(cli, ["diagnose", str(path)])
    assert result.exit_code == 2 and "status: expected a mapping" in result.output


def test_every_fixture_and_snapshot_object_is_well_shaped():
    # The shape table must not refuse real objects (the fixtures mirror upstream manifests and
    # `kubectl get -o json` output).
    objects = [d for d in MANIFESTS if d.get("kind")]
    objects += [item for snap in SNAPSHOTS for item in snap["items"]]
    assert len(objects) > 100
    assert [o for o in objects if shape_error(o) is not None] == []


def _deployment_rule(check):
    from gpuscale.audit.model import Rule, Severity
    return Rule(id="GPU999", name="test-rule", severity=Severity.WARNING, kinds=("Deployment",),
                summary="s", message="m", why="w", fix="f", references=(), check=check)


DEPLOYMENT = ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"
              "spec:\n  replicas: 2\n  template: {spec: {containers: [{name: c}]}}\n")


def test_a_bug_in_a_rule_surfaces_as_a_bug_not_as_bad_input():
    # A rule that indexes a key it never checked is a programming error: the audit must not
    # turn it into "bad input, exit 2".
    def buggy(obj, ctx):
        yield obj.data["spec"]["no-such-field"]

    with pytest.raises(KeyError, match="no-such-field"):
        audit_objects(parse_text(DEPLOYMENT, "m.yaml"), rules=[_deployment_rule(buggy)])


def test_a_value_a_reader_refuses_is_bad_input_naming_file_line_object_rule_and_field():
    from gpuscale.audit.values import integer

    def strict(obj, ctx):
        integer("three", "spec.replicas")
        yield from ()

    with pytest.raises(UserInputError) as err:
        audit_objects(parse_text(DEPLOYMENT, "m.yaml"), rules=[_deployment_rule(strict)])
    assert str(err.value) == ("m.yaml: line 1: Deployment/web: GPU999 (test-rule) cannot read "
                              "this object: spec.replicas: expected an integer, got 'three'")


@pytest.mark.parametrize("reader, value, expected", [
    ("number", "abc", "x: expected a number, got 'abc'"),
    ("integer", {"a": 1}, "x: expected an integer, got {'a': 1}"),
    ("quantity", "10%", "x: not a Kubernetes quantity"),
    ("duration_s", "soon", "x: "),
])
def test_value_readers_raise_bad_value_naming_the_field(reader, value, expected):
    from gpuscale.audit import values
    with pytest.raises(values.BadValue) as err:
        getattr(values, reader)(value, "x")
    assert str(err.value).startswith(expected)


@pytest.mark.parametrize("selector", [{"matchLabels": -1}, {"matchExpressions": "app"},
                                      {"matchExpressions": [{"key": "app", "operator": "In",
                                                             "values": 3}]}])
def test_a_misshapen_pdb_selector_is_refused_in_one_line_naming_the_pdb(selector):
    # Found by the fuzz test above: matchLabels of -1 raised AttributeError from a rule
    # that looks up the budgets selecting a workload.
    docs = [{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
             "metadata": {"name": "guard", "namespace": "serve"},
             "spec": {"maxUnavailable": 1, "selector": selector}},
            {"apiVersion": "apps/v1", "kind": "Deployment",
             "metadata": {"name": "llama", "namespace": "serve"},
             "spec": {"replicas": 2, "template": {
                 "metadata": {"labels": {"app": "llama"}},
                 "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
                                          "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}}]
    with pytest.raises(UserInputError) as err:
        audit_objects(parse_text(yaml.safe_dump_all(docs), "m.yaml"))
    message = str(err.value)
    assert "\n" not in message and message.startswith("m.yaml")
    assert "PodDisruptionBudget/serve/guard (line 1) spec.selector.match" in message
