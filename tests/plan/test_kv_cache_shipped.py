"""The KV cache a plan sized is the one its manifests ship (issue 27, "a replay that is what
ships"): an FP8 plan simulated an FP8 cache, and vLLM's --kv-cache-dtype auto keeps a bf16
one for FP8 weights, so without the flag the replay from the manifests ran another,
slower deployment (a 70B FP8 reasoning day: 43.7 % replayed where the search met 100 %)."""

from __future__ import annotations

import pytest

from gpuscale.importer.build import import_manifests
from gpuscale.manifests.plan import to_yaml
from gpuscale.scenario.models import Precision
from gpuscale.serving.precision_support import default_kv_precision

from .helpers import EXAMPLE_NAMES, example_manifests, example_plan


def _fp8_examples() -> list[str]:
    return [n for n in EXAMPLE_NAMES
            if any(r.precision == "fp8" and r.pods_per_replica == 1
                   for r in example_plan(n).roles)]


@pytest.mark.parametrize("name", _fp8_examples())
def test_an_fp8_plan_ships_the_fp8_kv_cache_it_simulated(name, tmp_path):
    files = example_manifests(name)
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n0.5,100,10\n1.0,200,20\n")
    for role in example_plan(name).roles:
        if role.precision != "fp8" or role.pods_per_replica != 1:
            continue
        wanted = [f"{role.name}.yaml"] + [f for f in files if f.startswith("nodepool-")]
        paths = []
        for file in wanted:
            (tmp_path / file).write_text(to_yaml(files[file]))
            paths.append(str(tmp_path / file))
        model = import_manifests(paths, trace, name="replay").data["model"]
        assert model["precision"] == "fp8"
        assert model["kv_precision"] == default_kv_precision(Precision.FP8).value, role.name
