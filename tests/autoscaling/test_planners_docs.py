"""The YAML examples in docs/planners.md parse, build, and say what the docs say they do."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from pydantic import TypeAdapter

from gpuscale.autoscaling import AutoscalerSpec, build_autoscalers

from .planner_views import context

DOC = Path(__file__).resolve().parents[2] / "docs" / "planners.md"


def test_docs_yaml_examples_parse_and_build():
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), flags=re.S)
    specs = [TypeAdapter(AutoscalerSpec).validate_python(yaml.safe_load(b)) for b in blocks]
    assert [s.kind for s in specs] == ["sla_planner", "load_planner", "wva", "kpa"]
    periods = [build_autoscalers(s, context())[0].period_s for s in specs]
    assert periods == [10.0, 10.0, 15.0, 2.0]
    sla, load, _, kpa = specs
    assert sla.predictor.kind == "arima" and load.adjustment_interval_s == 180
    assert kpa.target_per_pod == 14.0  # 20 x 0.7
