"""Same outputs as the goldens for the demo and every example (see regen.py).

Floats compare to 1e-9 relative (summation order may differ by an ulp after a refactor);
everything else exactly. A deliberate change regenerates the goldens with the reason in the
commit message: `PYTHONPATH=src python tests/golden/regen.py`.
"""

from __future__ import annotations

import json
import math

import pytest

from .regen import case_names, golden_path, run_case

REL_TOL = 1e-9


def _diff(want, got, path: str, out: list[str]) -> None:
    if isinstance(want, dict) and isinstance(got, dict):
        for key in sorted(set(want) | set(got)):
            if key not in got:
                out.append(f"{path}.{key}: missing")
            elif key not in want:
                out.append(f"{path}.{key}: new key")
            else:
                _diff(want[key], got[key], f"{path}.{key}", out)
    elif isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            out.append(f"{path}: length {len(got)} != {len(want)}")
        for i, (w, g) in enumerate(zip(want, got, strict=False)):
            _diff(w, g, f"{path}[{i}]", out)
    elif type(want) is float and type(got) is float:  # an int that became a float is a change
        if not math.isclose(want, got, rel_tol=REL_TOL, abs_tol=1e-12):
            out.append(f"{path}: {got!r} != {want!r}")
    elif want != got or type(want) is not type(got):
        out.append(f"{path}: {got!r} != {want!r}")


@pytest.mark.parametrize("name", case_names())
def test_outputs_match_golden(name):
    want = json.loads(golden_path(name).read_text())
    got = json.loads(json.dumps(run_case(name), sort_keys=True))
    out: list[str] = []
    _diff(want, got, name, out)
    assert not out, "outputs changed:\n" + "\n".join(out[:40])


def test_diff_sees_a_changed_number():
    out: list[str] = []
    _diff({"a": [1.0, {"b": 2}], "c": 2}, {"a": [1.0 + 1e-6, {"b": 3}], "c": 2.0}, "x", out)
    assert out == ["x.a[0]: 1.000001 != 1.0", "x.a[1].b: 3 != 2", "x.c: 2.0 != 2"]
