"""The published KEDA setups in examples/: the KEDA docs' scalingModifiers examples simulate as
given, and llm-d's KEDA blueprints are read field for field, their queries as written, and
simulate unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gpuscale.cli import cli
from gpuscale.importer.build import import_manifests
from gpuscale.importer.catalog_files import use_catalogs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DOCS = EXAMPLES / "keda-scaling-modifiers"
LLM_D = EXAMPLES / "llm-d-keda"
TRACE = DOCS / "trace.csv"
DOCS_EXAMPLES = ("compose-average", "ternary", "count", "nested-conditions", "failover")
BLUEPRINTS = {"queue": "keda-epp-queue", "saturation": "keda-epp-saturation",
              "token-backlog": "keda-epp-token-aware", "queue-guard": "keda-epp-queue-guard"}


def simulate(bundle: Path, *extra: str) -> dict:
    result = CliRunner().invoke(cli, ["simulate", "--manifests", str(bundle), "--trace",
                                      str(TRACE), "-o", "json", *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def scaled_object(path: Path) -> dict:
    return next(d for d in yaml.safe_load_all(path.read_text()) if d and
                d.get("kind") == "ScaledObject")


def upstream_block(name: str) -> dict:
    """The docs' YAML for example `name` (with or without its `spec:` level)."""
    data = yaml.safe_load((DOCS / "upstream" / f"{name}.yaml").read_text())
    return data.get("spec", data)


@pytest.mark.parametrize("name", DOCS_EXAMPLES)
def test_docs_example_keeps_the_docs_scaling_modifiers(name):
    spec = scaled_object(DOCS / name / "scaledobject.yaml")["spec"]
    docs = upstream_block(name)
    ours = spec["advanced"]["scalingModifiers"]
    for key, value in docs["advanced"]["scalingModifiers"].items():
        assert ours[key] == value, key  # formula, target, activationTarget, metricType as given
    if "fallback" in docs:
        assert spec["fallback"] == docs["fallback"]


@pytest.mark.parametrize("name", DOCS_EXAMPLES)
def test_docs_example_simulates(name):
    run = simulate(DOCS / name)["runs"][0]
    assert run["imported"]["sources"] and run["slo_attainment"] > 0
    assert run["resolved"]["autoscaler"]["kind"] == "keda"


def test_the_docs_nested_example_is_inverted_under_load():
    # "trig_one < 2 ? trig_one+trig_two >= 2 ? 5 : 10 : 0": an idle pool (both ~0) reads 10 and
    # once the queue (trig_one) reaches 2 the composite is 0, so the burst is served by the
    # replicas an idle moment asked for; the ternary example's trig_one + trig_two grows
    # with the load instead.
    nested, ternary = (simulate(DOCS / n)["runs"][0] for n in ("nested-conditions", "ternary"))
    assert nested["slo_attainment"] < ternary["slo_attainment"] / 2


@pytest.mark.parametrize("name", BLUEPRINTS)
def test_llm_d_blueprint_is_read_field_for_field(name):
    use_catalogs([LLM_D / "catalog.yaml"])
    imp = import_manifests([str(LLM_D / name)], TRACE)
    spec = imp.data["strategies"][0]["autoscaler"]
    upstream = scaled_object(LLM_D / "upstream" / f"{BLUEPRINTS[name]}.scaledobject.yaml")
    assert [(t["name"], " ".join(t["query"].split())) for t in spec["triggers"]] == \
        [(t["name"], " ".join(t["metadata"]["query"].split()))
         for t in upstream["spec"]["triggers"]]  # the queries as written
    modifiers = upstream["spec"].get("advanced", {}).get("scalingModifiers")
    if modifiers:
        assert spec["advanced"]["scaling_modifiers"]["formula"] == modifiers["formula"]
        assert spec["fallback"]["behavior"] == upstream["spec"]["fallback"]["behavior"]


@pytest.mark.parametrize("name", BLUEPRINTS)
def test_llm_d_blueprint_simulates_unchanged(name, tmp_path):
    log = tmp_path / "decisions.jsonl"
    run = simulate(LLM_D / name, "--catalog", str(LLM_D / "catalog.yaml"), "--decisions",
                   str(log))["runs"][0]
    assert run["resolved"]["autoscaler"]["kind"] == "keda"
    polls = [json.loads(line)["inputs"] for line in log.read_text().splitlines()
             if json.loads(line)["controller"] == "keda-operator"]
    # Every trigger reads its series (an unmatched label would read an empty result as 0).
    seen: dict[str, float] = {}
    for poll in polls:
        for trigger in poll["triggers"]:
            seen[trigger["name"]] = max(seen.get(trigger["name"], 0.0), trigger["value"] or 0.0)
    quiet = {"epp-queue-size", "queue", "pending"}  # the trace never queues at the gateway
    assert all(v > 0 for k, v in seen.items() if k not in quiet), seen


def test_the_saturation_blueprint_names_the_pool_it_reads():
    use_catalogs([LLM_D / "catalog.yaml"])
    imp = import_manifests([str(LLM_D / "saturation")], TRACE)
    extra = imp.data["metrics"]["extra_labels"]
    assert extra["llm_d_epp_flow_control_pool_saturation"]["inference_pool"] == \
        "optimized-baseline"
    assert extra["inference_pool_average_queue_size"]["name"] == "optimized-baseline"
    assert any("InferencePool name 'optimized-baseline'" in n for n in imp.notes)
