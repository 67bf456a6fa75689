"""Audit stays near-linear: thousands of objects and long PromQL queries in seconds, and the
objects are the ones kubectl would see (nested Lists read, foreign API groups not taken for
KEDA's or Karpenter's)."""

from __future__ import annotations

import time

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.audit import audit_objects, parse_text
from gpuscale.audit.promql import metric_names, returns_one_series, selectors, top_level_aggregator


def _bundle(n: int) -> str:
    docs = []
    for i in range(n // 4):
        labels = {"app": f"vllm-{i}"}
        meta = {"name": f"vllm-{i}", "namespace": f"ns{i % 50}"}
        docs += [
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
             "spec": {"replicas": 2, "selector": {"matchLabels": labels}, "template": {
                 "metadata": {"labels": labels}, "spec": {"containers": [{
                     "name": "vllm", "image": "vllm/vllm-openai:v0.6.0",
                     "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}},
            {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": meta,
             "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                         "name": meta["name"]},
                      "minReplicas": 1, "maxReplicas": 4, "metrics": [{"type": "Pods", "pods": {
                          "metric": {"name": "vllm:num_requests_waiting"},
                          "target": {"type": "AverageValue", "averageValue": "5"}}}]}},
            {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": {"selector": labels}},
            {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta,
             "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}}},
        ]
    return yaml.safe_dump_all(docs)


def _timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


@pytest.mark.slow
def test_five_thousand_objects_audit_in_seconds():
    objects, load_s = _timed(parse_text, _bundle(5000), "big.yaml")
    assert len(objects) == 5000
    _findings, audit_s = _timed(audit_objects, objects)
    # 83 s before the indexes (cubic); ~2 s now on one loaded core. 20 s leaves room for CI.
    assert load_s + audit_s < 20


def test_findings_do_not_depend_on_how_many_other_objects_there_are():
    small = audit_objects(parse_text(_bundle(8), "a.yaml"))
    large = audit_objects(parse_text(_bundle(400), "a.yaml"))
    first = {(f.rule_id, f.object_ref) for f in small}
    assert first <= {(f.rule_id, f.object_ref) for f in large}


@settings(max_examples=10, deadline=None)
@given(st.integers(10_000, 100_000))
def test_a_huge_identifier_is_scanned_linearly(length):
    query = "a" * length + " + sum(rate(b" + "c" * length + "[5m]))"
    _, took = _timed(selectors, query)
    assert took < 5
    assert metric_names(query)[0] == "a" * length
    _, took = _timed(returns_one_series, query)
    assert took < 5


@settings(max_examples=5, deadline=None)
@given(st.integers(300, 1200))
def test_ten_kilobyte_queries_are_scanned_in_seconds(terms):
    query = " + ".join(f'sum by (le) (rate(m{i}{{pod="p{i}"}}[5m]))' for i in range(terms))
    start = time.perf_counter()
    assert returns_one_series(query)
    assert len(selectors(query)) == terms
    top_level_aggregator(query)
    assert time.perf_counter() - start < 10


def test_objects_inside_a_nested_list_are_audited():
    inner = {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "deep"}}]}
    outer = {"apiVersion": "v1", "kind": "List", "items": [inner]}
    (obj,) = parse_text(yaml.safe_dump(outer), "l.yaml")
    assert obj.name == "deep" and obj.base_path == ("items", 0, "items", 0)


def test_a_scaledobject_of_another_group_is_not_audited_as_keda():
    text = yaml.safe_dump({"apiVersion": "example.com/v1", "kind": "ScaledObject",
                           "metadata": {"name": "x"}, "spec": {"triggers": [{"type": "cpu"}]}})
    (obj,) = parse_text(text, "s.yaml")
    assert obj.kind == "ScaledObject.example.com"
    assert audit_objects([obj]) == []
    keda = parse_text(text.replace("example.com/v1", "keda.sh/v1alpha1"), "s.yaml")
    assert keda[0].kind == "ScaledObject"


def _snapshot(nodes: int, pending: int) -> str:
    import copy
    import json
    from pathlib import Path

    base = json.loads((Path(__file__).parent / "diagnose" / "insufficient-gpus.json").read_text())
    items = base["items"]
    node = next(i for i in items if i["kind"] == "Node")
    busy = next(i for i in items if i["kind"] == "Pod" and i["metadata"]["name"] == "busy-n1")
    waiting = next(i for i in items if i["kind"] == "Pod" and i is not busy
                   and not i["spec"].get("nodeName"))
    out = [i for i in items if i["kind"] not in ("Node", "Pod")]
    for k in range(nodes):
        n, p = copy.deepcopy(node), copy.deepcopy(busy)
        n["metadata"]["name"] = n["metadata"]["labels"]["kubernetes.io/hostname"] = f"n{k}"
        p["metadata"]["name"], p["spec"]["nodeName"] = f"busy-n{k}", f"n{k}"
        out += [n, p]
    for k in range(pending):
        p = copy.deepcopy(waiting)
        p["metadata"]["name"] = f"pending-{k}"
        out.append(p)
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": out})


@pytest.mark.slow
def test_diagnose_two_thousand_nodes_and_pods_in_seconds():
    from gpuscale.audit.diagnose import diagnose

    objects = parse_text(_snapshot(1000, 200), "snap.json")
    start = time.perf_counter()
    results = diagnose(objects)
    assert time.perf_counter() - start < 20  # minutes before the per-node GPU index
    assert len(results) == 200
