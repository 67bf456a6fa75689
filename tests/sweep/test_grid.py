import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuscale.errors import UserInputError
from gpuscale.sweep.grid import apply_override, expand_grid, parse_path, run_id_of

from ..report.scenarios import GRID, tiny


def test_parse_path_reads_keys_indices_and_names():
    assert parse_path("a.b[0].c[keda-queue].d") == ["a", "b", 0, "c", "keda-queue", "d"]
    assert parse_path("seed") == ["seed"]
    assert parse_path("x[-1]") == ["x", -1]


@pytest.mark.parametrize("bad", ["", ".a", "a.", "a..b", "a[0", "a]b"])
def test_malformed_paths_are_user_errors(bad):
    with pytest.raises(UserInputError):
        parse_path(bad)


def test_apply_override_by_index_by_name_and_into_missing_sections():
    data = tiny()
    apply_override(data, "strategies[1].autoscaler.triggers[0].threshold", 7)
    apply_override(data, "strategies[fixed-1].autoscaler.replicas", 2)
    apply_override(data, "engine.max_num_seqs", 64)
    assert data["strategies"][1]["autoscaler"]["triggers"][0]["threshold"] == 7
    assert data["strategies"][0]["autoscaler"]["replicas"] == 2
    assert data["engine"] == {"max_num_seqs": 64}


@pytest.mark.parametrize("path,needle", [
    ("strategies[5].name", "out of range"),
    ("strategies[nope].name", "no item named 'nope'"),
    ("seed.value", "cannot descend"),
    ("cluster[0]", "not a list"),
])
def test_bad_override_paths_name_the_path(path, needle):
    with pytest.raises(UserInputError) as err:
        apply_override(tiny(), path, 1)
    assert path in str(err.value) and needle in str(err.value)


def test_cartesian_grid_has_every_combination_times_strategies():
    runs = expand_grid(GRID, tiny())
    assert len(runs) == 2 * 2 * 2 * 2
    combos = {(r.strategy, tuple(v for _, v in r.overrides)) for r in runs}
    assert len(combos) == 16
    assert len({r.run_id for r in runs}) == 16


def test_list_grid_and_strategy_filter():
    grid = {
        "runs": [{"seed": 3}, {"seed": 4, "cluster.max_nodes": 2}],
        "strategies": ["keda-queue"],
    }
    runs = expand_grid(grid, tiny())
    assert [(r.strategy, dict(r.overrides)) for r in runs] == [
        ("keda-queue", {"seed": 3}), ("keda-queue", {"seed": 4, "cluster.max_nodes": 2})]


def test_a_value_that_fails_validation_names_the_field():
    with pytest.raises(UserInputError, match=r"cluster\.ready_nodes"):
        expand_grid({"parameters": {"cluster.ready_nodes": [1, 9]}}, tiny())


@pytest.mark.parametrize("grid,needle", [
    ({}, "exactly one of"),
    ({"parameters": {"seed": [1]}, "runs": [{"seed": 1}]}, "exactly one of"),
    ({"parameters": {"seed": 1}}, "non-empty list"),
    ({"runs": [{"seed": 1}], "strategies": ["x"]}, "no strategy named x"),
    ({"runs": [{"seed": 1}, {"seed": 1}]}, "repeats a run"),
    ({"runs": [{"seed": 1}], "extra": 1}, "unknown key"),
])
def test_bad_grids_are_user_errors(grid, needle):
    with pytest.raises(UserInputError, match=needle):
        expand_grid(grid, tiny())


@given(st.dictionaries(st.sampled_from(["seed", "a.b", "c[0]", "d"]), st.integers(), min_size=1),
       st.randoms())
def test_run_id_ignores_the_order_overrides_are_written_in(overrides, rnd):
    items = list(overrides.items())
    shuffled = items[:]
    rnd.shuffle(shuffled)
    assert run_id_of("s", tuple(items)) == run_id_of("s", tuple(shuffled))
    assert run_id_of("s", tuple(items)) != run_id_of("t", tuple(items))


def test_the_warm_pool_example_grid_expands_and_validates():
    from pathlib import Path

    import yaml

    from gpuscale.sweep import expand_grid

    folder = Path(__file__).resolve().parents[2] / "examples" / "warm-pool-sweep"
    scenario = yaml.safe_load((folder / "scenario.yaml").read_text())
    grid = yaml.safe_load((folder / "grid.yaml").read_text())
    runs = expand_grid(grid, scenario, source=str(folder / "grid.yaml"))
    assert len(runs) == 18
    assert len({run.run_id for run in runs}) == 18
