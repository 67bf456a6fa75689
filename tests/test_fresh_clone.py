"""A fresh clone has no ../shared beside it: the tests that replay its traces skip there, they
do not fail (issue 30: `make test` on a clone failed one plan test)."""

from __future__ import annotations

import pytest


def test_the_plan_trace_recheck_skips_without_the_shared_traces(tmp_path, monkeypatch):
    from tests.plan import helpers, test_replay

    monkeypatch.setattr(helpers, "SHARED", tmp_path / "no-shared")
    with pytest.raises(pytest.skip.Exception, match="not present"):
        test_replay.test_a_trace_winner_is_rechecked_on_held_out_windows_not_on_seeds()
