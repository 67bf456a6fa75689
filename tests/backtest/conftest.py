"""User catalog entries are process-wide: every test starts and ends with none installed
(the importer's autouse fixture: a backtest imports bundles, with --catalog files)."""

from ..importer.conftest import _no_user_catalog  # noqa: F401 (an autouse fixture)
