"""Shared paths for audit tests."""

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
SNAPSHOTS = HERE / "diagnose"
REPO = HERE.parents[1]
SHARED = REPO / ".." / "shared"


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES
