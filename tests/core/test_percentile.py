import math
import subprocess
import sys

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale.metrics.store import percentile_linear, percentile_sorted


@given(st.lists(st.floats(0, 1e4, allow_nan=False), min_size=1, max_size=300),
       st.floats(0, 100))
def test_matches_numpy_linear_percentile(values, q):
    values = sorted(values)
    assert abs(percentile_sorted(values, q) - float(np.percentile(values, q))) <= 1e-9 * (
        1 + max(values))


_WAITS = st.lists(st.one_of(st.floats(0, 1e6, allow_nan=False), st.just(math.inf),
                            st.sampled_from([0.0, 1.0, 2.5])), min_size=1, max_size=60)


@settings(max_examples=400)
@given(_WAITS, st.one_of(st.sampled_from([0, 50, 99, 100, 99.0, 37.5]), st.floats(0, 100)))
def test_percentile_linear_is_numpys_float(values, q):
    """The same float as np.percentile, NaN and inf included (repr compares NaN too)."""
    with np.errstate(invalid="ignore"):  # inf - inf: numpy warns, and gives NaN as Python
        expected = repr(float(np.percentile(values, q)))
    assert repr(percentile_linear(values, q)) == expected
    assert repr(percentile_linear(np.asarray(values), q)) == expected


def test_percentile_linear_with_a_nan_is_nan_as_numpy():
    assert math.isnan(percentile_linear([1.0, math.nan, 0.0], 50))
    assert math.isnan(float(np.percentile([1.0, math.nan, 0.0], 50)))


def test_percentile_linear_does_not_import_numpy_ma():
    """Why it exists: numpy.ma is ~25 ms to import, and np.percentile imports it."""
    code = ("import sys; from gpuscale.metrics.store import percentile_linear; "
            "percentile_linear([3.0, 1.0, 2.0], 99); print('numpy.ma' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"
