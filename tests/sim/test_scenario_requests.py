"""`scenario_requests` keeps the rows that arrive before `duration_s`, as a prefix slice of the
sorted table; a NaN arrival (which sorting ignores) takes the mask instead."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpuscale.scenario import scenario_from_dict
from gpuscale.sim import run as run_module
from gpuscale.sim.run import scenario_requests
from gpuscale.workloads.base import Requests


def _scenario(trace: Path, duration_s: float):
    return scenario_from_dict({
        "name": "cut", "seed": 3, "duration_s": duration_s, "drain_s": 60.0,
        "model": {"name": "Llama-3.1-8B", "precision": "bf16", "tp": 1},
        "cluster": {"instance_type": "p5.48xlarge", "ready_nodes": 1, "max_nodes": 1},
        "initial_replicas": 1,
        "workload": {"kind": "trace", "format": "generic", "path": str(trace)},
        "strategies": [{"name": "fixed", "autoscaler": {"kind": "fixed", "replicas": 1}}],
    }, source="<test>")


@pytest.mark.parametrize("duration_s, kept", [(0.5, 1), (1.0, 1), (2.0, 2), (2.5, 4),
                                              (9.0, 5)])
def test_rows_before_the_duration_are_kept(tmp_path, duration_s, kept):
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n"
                     "0,1,1\n1,2,2\n2,3,3\n2,4,4\n3,5,5\n")
    got = scenario_requests(_scenario(trace, duration_s), tmp_path)
    arrival = np.array([0.0, 1.0, 2.0, 2.0, 3.0])
    assert got.arrival_s.tolist() == arrival[arrival < duration_s].tolist()
    assert got.prompt_tokens.tolist() == list(range(1, kept + 1))
    assert got.output_tokens.dtype == np.int64


def test_a_nan_arrival_is_dropped_as_the_mask_drops_it(tmp_path, monkeypatch):
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n0,1,1\n")
    table = Requests(np.array([0.0, np.nan, 1.0, 5.0]), np.arange(1, 5), np.arange(1, 5))
    monkeypatch.setattr(run_module, "build_requests", lambda *args: table)
    got = scenario_requests(_scenario(trace, 3.0), tmp_path)
    assert got.prompt_tokens.tolist() == [1, 3]
