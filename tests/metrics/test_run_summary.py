"""The typed run summary: the JSON comes from it, readers load it back, the schema is current."""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest
from pydantic import ValidationError

from gpuscale.metrics.run_summary import RESULT_VERSION, load_result
from gpuscale.sweep.table import METRIC_COLUMNS, metrics_of
from tests.golden.regen import SCHEMA, golden_path, schema_text

GOLDEN = json.loads(golden_path("demo").read_text())
PD = json.loads(golden_path("pd-split/scenario.yaml").read_text())


def _result(golden: dict) -> dict:
    return {k: golden[k] for k in ("version", "scenario", "seed", "runs")}


def test_schema_file_is_generated_from_the_types():
    assert SCHEMA.read_text() == schema_text(), "regenerate: python tests/golden/regen.py"


@pytest.mark.parametrize("golden", [GOLDEN, PD], ids=["demo", "pd-split"])
def test_outputs_validate_against_the_schema(golden):
    jsonschema.validate(_result(golden), json.loads(SCHEMA.read_text()))


def test_every_result_has_a_version():
    assert GOLDEN["version"] == RESULT_VERSION


def test_loading_and_dumping_gives_the_same_json():
    data = _result(PD)
    assert load_result(data).to_json() == data


def test_a_renamed_key_fails_loudly_instead_of_reading_as_none():
    data = copy.deepcopy(_result(GOLDEN))
    data["runs"][0]["cost_usd_total"] = data["runs"][0].pop("cost_usd")
    with pytest.raises(ValidationError, match="cost_usd"):
        load_result(data)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, json.loads(SCHEMA.read_text()))


def test_sweep_columns_read_fields_of_the_typed_summary():
    run = load_result(_result(GOLDEN)).runs[1]
    row = metrics_of(run)
    assert tuple(row) == METRIC_COLUMNS
    assert row["ttft_p99_s"] == GOLDEN["runs"][1]["ttft_s"]["p99"]
    assert row["nodes_launched"] == GOLDEN["runs"][1]["nodes"]["launched"]
    assert None not in (row["cost_usd"], row["replicas_peak"], row["gpu_hours"])
