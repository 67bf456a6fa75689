"""The scenario fields for cluster-side kinds: `pod_group`, and the node providers'
`capacity_buffers` and `pod_disruption_budgets`; bad values are one line naming the field."""

from __future__ import annotations

import pytest

from gpuscale.errors import UserInputError
from gpuscale.scenario import scenario_from_dict

from ..sim.scenarios import small_scenario

KARPENTER = {"kind": "karpenter", "node_pools": [{"name": "gpu", "requirements": [
    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5.48xlarge"]}]}]}


def _valid() -> dict:
    return small_scenario().model_dump(mode="json")


def _refused(data: dict, *expected: str) -> None:
    with pytest.raises(UserInputError) as info:
        scenario_from_dict(data, source="s.yaml")
    message = str(info.value)
    assert "\n" not in message
    for text in expected:
        assert text in message, message


def test_pod_group_is_read_and_builds_the_kai_spec():
    data = _valid()
    data["pod_group"] = {"name": "serve", "min_member": 2, "priority": 125}
    spec = scenario_from_dict(data, source="s.yaml").pod_group.spec()
    assert (spec.name, spec.min_member, spec.priority, spec.is_preemptible) == (
        "serve", 2, 125, False)


def test_pod_group_with_disaggregation_is_refused():
    data = _valid()
    data["pod_group"] = {"name": "serve"}
    data["disaggregation"] = {}
    _refused(data, "pod_group applies to aggregated serving")


@pytest.mark.parametrize(("nodes_extra", "field", "expected"), [
    ({"capacity_buffers": [{"name": "b", "gpus_per_pod": 8}]}, "capacity_buffers",
     "set replicas, percentage or limits_gpus"),
    ({"capacity_buffers": [{"name": "b", "gpus_per_pod": 0, "replicas": 1}]},
     "capacity_buffers[0].gpus_per_pod", "greater than or equal to 1"),
    ({"pod_disruption_budgets": [{"name": "p", "max_unavailable": "1/2"}]},
     "pod_disruption_budgets", "expected an integer or a percentage"),
])
def test_bad_buffer_or_pdb_names_the_field(nodes_extra, field, expected):
    data = _valid()
    data["nodes"] = {**KARPENTER, **nodes_extra}
    _refused(data, "s.yaml", f"nodes.{field}", expected)
