"""sim/ only wires: no type probing, and the defaults go through the layer interfaces."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from gpuscale.provisioning.base import NodeProvider
from gpuscale.provisioning.pool import NodePool
from gpuscale.scheduling.base import PodScheduler
from gpuscale.scheduling.first_fit import FirstFitScheduler

SIM = Path(__file__).resolve().parents[2] / "src" / "gpuscale" / "sim"


@pytest.mark.parametrize("probe", ["hasattr(", "isinstance("])
def test_sim_does_not_probe_types(probe):
    sources = sorted(SIM.glob("*.py"))
    assert len(sources) >= 5, f"no sources under {SIM}: the test would pass vacuously"
    hits = [f"{path.name}:{i}" for path in sources
            for i, line in enumerate(path.read_text().splitlines(), 1) if probe in line]
    assert hits == [], f"{probe} in sim/: the layers' interfaces should make it unnecessary"


def _methods(protocol: type) -> set[str]:
    return {name for name, _ in inspect.getmembers(protocol, inspect.isfunction)
            if not name.startswith("_")}


@pytest.mark.parametrize("impl, protocol", [(NodePool, NodeProvider),
                                            (FirstFitScheduler, PodScheduler)])
def test_defaults_implement_the_layer_interface(impl, protocol):
    missing = _methods(protocol) - set(dir(impl))
    assert not missing
    for name in _methods(protocol):
        want = list(inspect.signature(getattr(protocol, name)).parameters)
        got = list(inspect.signature(getattr(impl, name)).parameters)
        assert got[:len(want)] == want, (name, got, want)
    assert re.fullmatch(r"[a-z-]+", impl.kind)


def test_run_module_is_wiring_sized():
    lines = (SIM / "run.py").read_text().splitlines()
    assert len(lines) <= 300
