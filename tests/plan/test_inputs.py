import pytest

from gpuscale.errors import UserInputError
from gpuscale.plan import load_plan_input, plan_input_from_dict

from .helpers import EXAMPLE_NAMES, EXAMPLES, example_dict


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
    data["workloads"][0]["traffic"].update(
        burst_factor=20, burst_duration_s=600, burst_period_s=3600
    )
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


def test_a_given_tp_that_does_not_split_the_heads_is_refused_up_front():
    """Found by fuzzing: with --no-simulate such a plan rendered a Deployment vLLM cannot start
    (Qwen2.5-7B has 28 heads); with simulation it failed inside a warm-pool candidate."""
    data = example_dict("llama70b-fp8-h100-chat")
    data["workloads"][0].update(model="Qwen2.5-7B", tp=8)
    with pytest.raises(UserInputError, match=r"workloads\[0\].*tp=8 does not divide the 28 "
                                             r"attention heads.*1, 2, 4"):
        plan_input_from_dict(data, source="in.yaml")


def test_chosen_tp_always_splits_the_heads():
    """`tp: choose` skips TP sizes that do not divide the heads (a 72B model given 28 heads
    would otherwise get TP8 on an 8-GPU node), down to the pipeline fallback."""
    import dataclasses

    from gpuscale.catalog import get_instance_type, get_model
    from gpuscale.catalog.specs import Precision
    from gpuscale.plan.sizing import choose_parallelism
    p5 = get_instance_type("p5.48xlarge")
    for base, precision in (("Qwen2.5-72B", Precision.BF16), ("Llama-3.1-405B", Precision.BF16)):
        odd = dataclasses.replace(get_model(base), q_heads=28)
        par = choose_parallelism(odd, precision, p5, 8)
        assert 28 % par.tp == 0 and par.tp == 4, (base, par)
    # The 405B needs pipeline stages once TP stops at 4.
    assert par.pp > 1
