"""A user catalog's instance type without `zones` (a price list gives none) is offered in any
zone, as a NodePool is (issue 30: `instance_types.g6e.12xlarge.zones: missing required field`)."""

from __future__ import annotations

from pathlib import Path

import yaml

from gpuscale.catalog.specs import ANY_ZONE, get_instance_type, set_user_entries
from gpuscale.importer.catalog_files import use_catalogs
from gpuscale.provisioning.karpenter.nodepool import NodePoolParams, pool_offerings

ENTRY = {"gpu": "L40S", "num_gpus": 4, "vcpus": 48, "memory_gib": 384,
         "on_demand_usd_per_hour": 10.493, "source": "price list"}


def _use(tmp_path: Path, **extra) -> None:
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump({"instance_types": {"my.l40s.4x": dict(ENTRY, **extra)}}))
    use_catalogs([path], environ={})


def _pool(**requirement) -> NodePoolParams:
    requirements = [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                     "values": ["my.l40s.4x"]}]
    if requirement:
        requirements.append(requirement)
    return NodePoolParams.model_validate({"name": "gpu", "requirements": requirements})


def test_an_instance_type_without_zones_is_offered_in_the_zones_a_pool_names(tmp_path):
    try:
        _use(tmp_path)
        assert get_instance_type("my.l40s.4x").zones == (ANY_ZONE,)
        pool = _pool(key="topology.kubernetes.io/zone", operator="In",
                     values=["us-east-1a", "us-east-1c"])
        zones = sorted({o.zone for o in pool_offerings(pool) if o.capacity_type == "on-demand"})
        assert zones == ["us-east-1a", "us-east-1c"]
        # A pool without a zone requirement: any zone, one offering per capacity type.
        assert {o.zone for o in pool_offerings(_pool())} == {ANY_ZONE}
    finally:
        set_user_entries({}, {}, {})


def test_named_zones_are_kept_and_still_filtered_by_the_pool(tmp_path):
    try:
        _use(tmp_path, zones=["us-east-1b"])
        pool = _pool(key="topology.kubernetes.io/zone", operator="In", values=["us-east-1a"])
        assert pool_offerings(pool) == []
        assert {o.zone for o in pool_offerings(_pool())} == {"us-east-1b"}
    finally:
        set_user_entries({}, {}, {})
