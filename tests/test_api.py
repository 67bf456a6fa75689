"""The Python API: gpuscale.simulate(path_or_dict) -> .to_dict() / .to_pandas()."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import gpuscale
from gpuscale.errors import UserInputError

from .sim.scenarios import small_scenario

ROOT = Path(__file__).resolve().parents[1]


def _scenario_dict() -> dict:
    return small_scenario(duration_s=120.0).model_dump(mode="json")


def test_simulate_a_dict_or_a_path_gives_the_cli_json(tmp_path):
    from click.testing import CliRunner

    from gpuscale.cli import cli

    data = _scenario_dict()
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    from_dict = gpuscale.simulate(data).to_dict()
    from_path = gpuscale.simulate(str(path)).to_dict()
    printed = json.loads(CliRunner().invoke(cli, ["simulate", str(path), "-o", "json"]).output)

    def strip(d):
        return [{k: v for k, v in r.items() if k != "wall_s"} for r in d["runs"]]

    assert strip(from_dict) == strip(from_path) == strip(printed)
    assert set(from_dict) >= {"scenario", "seed", "runs"}


def test_to_pandas_has_one_row_per_run_with_inf_for_timeouts():
    pandas = pytest.importorskip("pandas")
    result = gpuscale.simulate(_scenario_dict())
    result.runs[0]["ttft_s"]["p99"] = math.inf
    frame = result.to_pandas()
    assert isinstance(frame, pandas.DataFrame)
    assert list(frame.index) == [r["name"] for r in result.runs]
    assert math.isinf(frame["ttft_p99_s"].iloc[0]) and "cost_usd" in frame
    assert result.to_dict()["runs"][0]["ttft_s"]["p99"] is None  # JSON has no infinity


def test_to_pandas_without_pandas_says_how_to_get_it(monkeypatch):
    result = gpuscale.simulate(_scenario_dict())
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pip install pandas"):
        result.to_pandas()


def test_bad_input_raises_the_cli_message():
    with pytest.raises(UserInputError, match="duration_s"):
        gpuscale.simulate(dict(_scenario_dict(), duration_s=-1))
    with pytest.raises(TypeError):
        gpuscale.simulate(42)


def test_import_gpuscale_stays_cheap():
    code = ("import sys, gpuscale; heavy = [m for m in ('numpy', 'pydantic', 'gpuscale.sim') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT / "src")}, check=True).stdout
    assert out.strip() == "[]"
