import pytest

from gpuscale.errors import UserInputError
from gpuscale.plan import load_plan_input, plan_input_from_dict

from .helpers import EXAMPLES, EXAMPLE_NAMES, example_dict


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_examples_load(name):
    plan = load_plan_input(EXAMPLES / f"{name}.yaml")
    assert plan.name


def test_unknown_key_names_the_field():
    data = example_dict("llama70b-fp8-h100-chat")
    data["workloads"][0]["tensor_parallel"] = 2
    with pytest.raises(UserInputError) as err:
        plan_input_from_dict(data, source="x.yaml")
    assert "x.yaml" in str(err.value) and "workloads[0].tensor_parallel" in str(err.value)
    assert "unknown key" in str(err.value)


def test_unknown_tenant_lists_known_ones():
    data = example_dict("shared-cluster-prod-and-training")
    data["workloads"][0]["tenant"] = "marketing"
    with pytest.raises(UserInputError, match="unknown tenant 'marketing'; known: prod, research"):
        plan_input_from_dict(data)


def test_burst_that_breaks_the_mean_is_rejected():
    data = example_dict("llama70b-fp8-h100-chat")
    data["workloads"][0]["traffic"].update(burst_factor=20, burst_duration_s=600, burst_period_s=3600)
    with pytest.raises(UserInputError, match="exceeds burst_period_s"):
        plan_input_from_dict(data)


def test_unknown_model_suggests_a_close_name():
    data = example_dict("llama70b-fp8-h100-chat")
    data["workloads"][0]["model"] = "Llama-3.3-70b"
    with pytest.raises(UserInputError, match="did you mean"):
        plan_input_from_dict(data)


@pytest.mark.parametrize(("mutate", "field"), [
    (lambda d: d["workloads"][0].update(model="Llama-3.3-71B"), "workloads[0].model"),
    (lambda d: d["cluster"].update(instance_types=["p5.49xlarge"]), "cluster.instance_types"),
])
def test_unknown_catalog_names_name_their_field(mutate, field):
    data = example_dict("llama70b-fp8-h100-chat")
    mutate(data)
    with pytest.raises(UserInputError) as err:
        plan_input_from_dict(data, source="x.yaml")
    assert str(err.value).startswith(f"x.yaml: {field}: unknown "), str(err.value)
    assert "did you mean" in str(err.value)


def test_a_bad_scalar_is_reported_at_its_own_field_not_a_union_tag():
    data = example_dict("llama70b-fp8-h100-chat")
    data["workloads"][0]["tp"] = "chose"  # `int | "choose"`: pydantic's loc ends in "int"
    with pytest.raises(UserInputError) as err:
        plan_input_from_dict(data, source="x.yaml")
    assert "x.yaml: workloads[0].tp: " in str(err.value) and "tp.int" not in str(err.value)
