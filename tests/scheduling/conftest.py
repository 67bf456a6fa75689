"""Fixture `h`: a fresh scheduling test harness."""

from __future__ import annotations

import pytest

from .sched_harness import Harness


@pytest.fixture
def h() -> Harness:
    return Harness()
