"""The one registry shape (gpuscale/registry.py) and the registries built on it."""

from __future__ import annotations

import sys
import typing
from typing import Literal

import pytest
from pydantic import BaseModel

from gpuscale.audit.rules import RULES
from gpuscale.autoscaling import AUTOSCALERS, AutoscalerSpec
from gpuscale.errors import UserInputError
from gpuscale.provisioning import NODE_PROVIDERS, NodeProviderSpec
from gpuscale.registry import PolicySpec, Registry, lazy_build, params_union
from gpuscale.scheduling import REGISTRY as SCHEDULERS
from gpuscale.scheduling import SchedulerSpec


class AParams(BaseModel):
    kind: Literal["a"] = "a"


class BParams(BaseModel):
    kind: Literal["b"] = "b"


def _two() -> Registry[PolicySpec]:
    reg: Registry[PolicySpec] = Registry("thing kind")
    reg.register("b", PolicySpec("b", BParams, BParams, "second"))
    reg.register("a", PolicySpec("a", AParams, AParams, "first"))
    return reg


def test_register_refuses_a_duplicate():
    reg = _two()
    with pytest.raises(ValueError, match="duplicate thing kind 'a'"):
        reg.register("a", PolicySpec("a", AParams, AParams, "again"))


def test_register_refuses_a_params_model_of_another_kind():
    with pytest.raises(ValueError, match="kind 'a'"):
        Registry("thing kind").register("c", PolicySpec("c", AParams, AParams, "mislabelled"))


def test_get_list_and_unknown_names():
    reg = _two()
    assert reg["a"].summary == "first" and reg.get("zzz") is None and "b" in reg
    assert list(reg) == ["b", "a"]  # registration order, which fixes the pydantic union
    assert reg.names() == ["a", "b"] and [s.name for s in reg.list()] == ["a", "b"]
    with pytest.raises(UserInputError, match=r"x: unknown thing kind 'aa'; did you mean 'a'\? "
                                             r"known: a, b"):
        reg.require("aa", field="x")


def test_params_union_is_the_registered_models_in_order():
    union = params_union(_two())
    assert typing.get_args(typing.get_args(union)[0]) == (BParams, AParams)


@pytest.mark.parametrize("registry, union", [(AUTOSCALERS, AutoscalerSpec),
                                             (NODE_PROVIDERS, NodeProviderSpec),
                                             (SCHEDULERS, SchedulerSpec)])
def test_each_layer_union_is_derived_from_its_registry(registry, union):
    members = typing.get_args(typing.get_args(union)[0])
    assert members == tuple(spec.params for spec in registry.values())
    assert [m.model_fields["kind"].default for m in members] == list(registry)


def test_every_registry_is_the_one_shape():
    for registry in (AUTOSCALERS, NODE_PROVIDERS, SCHEDULERS, RULES):
        assert isinstance(registry, Registry)
    assert RULES.names() == sorted(RULES) and list(RULES) == RULES.names()  # ids in id order


def test_lazy_build_imports_its_module_on_the_first_call(tmp_path, monkeypatch):
    (tmp_path / "lazy_policy_mod.py").write_text(
        "CALLS = []\n"
        "def build(params, *rest):\n"
        "    CALLS.append((params, rest))\n"
        "    return ['built']\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    build = lazy_build("lazy_policy_mod")
    assert "lazy_policy_mod" not in sys.modules
    assert build("p", "ctx") == ["built"]
    assert sys.modules["lazy_policy_mod"].CALLS == [("p", ("ctx",))]
    monkeypatch.delitem(sys.modules, "lazy_policy_mod")


def test_the_lazy_autoscaler_entries_reach_their_controllers():
    # Through the registry entry, which imports the controller's module on first use: the
    # controllers of KPA, WVA and the load planner; the SLA planner's own check that it needs
    # a scenario's hardware.
    from gpuscale.autoscaling import AutoscalerContext, build_autoscalers

    for name in ("kpa", "wva", "load_planner"):
        controllers = build_autoscalers(AUTOSCALERS[name].params(), AutoscalerContext())
        assert controllers and all(hasattr(c, "decide") for c in controllers), name
    with pytest.raises(UserInputError, match="sla_planner needs the replica hardware"):
        build_autoscalers(AUTOSCALERS["sla_planner"].params(), AutoscalerContext())
