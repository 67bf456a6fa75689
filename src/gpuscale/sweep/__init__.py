"""Parameter sweeps: a grid of scenario overrides run in local processes or on a Ray cluster.

Belongs here: expanding grids, running them in workers, the resumable results table.
Must not draw charts (report/) or print (cli/); it reads no wall clock.
"""

from gpuscale.sweep.grid import SweepRun, apply_override, expand_grid, load_grid, parse_path
from gpuscale.sweep.runner import BACKENDS, run_one, run_sweep, table_columns
from gpuscale.sweep.table import METRIC_COLUMNS, ResultTable, read_table

__all__ = ["BACKENDS", "METRIC_COLUMNS", "ResultTable", "SweepRun", "apply_override",
           "expand_grid", "load_grid", "parse_path", "read_table", "run_one", "run_sweep",
           "table_columns"]
