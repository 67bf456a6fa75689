"""`gpuscale audit` finds nothing above `info` in any generated plan."""

import copy

import pytest

from gpuscale.manifests.plan import to_yaml

from .helpers import EXAMPLE_NAMES, example_manifests

audit = pytest.importorskip("gpuscale.audit", reason="the audit branch is not merged")


@pytest.mark.parametrize("name", [n for n in EXAMPLE_NAMES if n != "single-node-refusal"])
def test_audit_finds_nothing_above_info(name):
    objects = []
    for file, objs in sorted(example_manifests(name).items()):
        objects += audit.parse_text(to_yaml(objs), file)
    assert objects
    findings = [f for f in audit.audit_objects(objects) if f.severity > audit.Severity.INFO]
    assert findings == [], "\n".join(str(f) for f in findings)


def test_audit_would_catch_a_broken_plan():
    """Not vacuous: the same manifests with the GPU taint removed raise GPU023."""
    files = example_manifests("llama70b-fp8-h100-chat")
    broken = copy.deepcopy(files["nodepool-gpu-serving.yaml"])
    del broken[0]["spec"]["template"]["spec"]["taints"]
    findings = audit.audit_objects(audit.parse_text(to_yaml(broken), "pool.yaml"))
    assert any(f.rule_id == "GPU023" for f in findings)
