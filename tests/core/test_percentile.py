import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gpuscale.metrics.store import percentile_sorted


@given(st.lists(st.floats(0, 1e4, allow_nan=False), min_size=1, max_size=300),
       st.floats(0, 100))
def test_matches_numpy_linear_percentile(values, q):
    values = sorted(values)
    assert abs(percentile_sorted(values, q) - float(np.percentile(values, q))) <= 1e-9 * (
        1 + max(values))
