"""Calibration of the serving and cold-start models against measured public numbers.

Belongs here: the rows of ../shared/reference/calibration.md as code (`rows.py`), each
configured exactly as measured and driven through the real replica engine, and the table that
`gpuscale calibrate` prints. Must not hold model constants: those live in the catalog and
`serving/`; a row only states its setup and the measured value.
"""

from gpuscale.calibration.rows import CheckResult, calibrate

__all__ = ["CheckResult", "calibrate"]
