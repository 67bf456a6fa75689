"""The import layering of docs/architecture.md, enforced by import-linter (.importlinter)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_imports_flow_one_way():
    lint = Path(sys.executable).parent / "lint-imports"
    if not lint.exists():
        pytest.skip("import-linter is not installed (it is in the test extra)")
    result = subprocess.run([str(lint), "--config", str(ROOT / ".importlinter")], cwd=ROOT,
                            capture_output=True, text=True, env={"PYTHONPATH": str(ROOT / "src"),
                                                                  "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stdout[-3000:]
