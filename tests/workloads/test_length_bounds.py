"""Token lengths stay servable: without `max_tokens` a draw is at most the documented ceiling,
and a lognormal spread past any measured one is refused with its bound."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from gpuscale.workloads.distributions import DEFAULT_CEILING_TOKENS, MAX_SIGMA, LognormalTokens


@settings(max_examples=30, deadline=None)
@given(st.floats(1, 1e6), st.floats(0.01, MAX_SIGMA), st.integers(0, 2**32))
def test_draws_never_pass_the_ceiling(median, sigma, seed):
    draws = LognormalTokens(median_tokens=median, sigma=sigma).sample(
        np.random.default_rng(seed), 500
    )
    assert draws.min() >= 1 and draws.max() <= DEFAULT_CEILING_TOKENS


@pytest.mark.parametrize("spec", [{"sigma": 1000}, {"p90_tokens": 1e300}])
def test_a_spread_past_any_measured_one_is_refused(spec):
    with pytest.raises(ValidationError):
        LognormalTokens(median_tokens=100, **spec)


@pytest.mark.parametrize(("first", "match"), [("0001-01-01 00:00:00.0", "between 1678 and 2261"),
                                              ("1700-01-01 00:00:00.0", "spans 323 years")])
def test_azure_traces_spanning_centuries_are_refused_not_wrapped(tmp_path, first, match):
    from gpuscale.errors import UserInputError
    from gpuscale.workloads.traces import read_azure_llm_csv

    path = tmp_path / "az.csv"
    path.write_text(f"TIMESTAMP,ContextTokens,GeneratedTokens\n{first},10,10\n"
                    "2023-01-01 00:00:00.0,10,10\n")
    with pytest.raises(UserInputError, match=match):
        read_azure_llm_csv(path)
