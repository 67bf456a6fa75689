"""User catalog entries are process-wide: every test starts and ends with none installed."""

import pytest

from gpuscale.catalog.specs import set_user_entries


@pytest.fixture(autouse=True)
def _no_user_catalog(monkeypatch):
    monkeypatch.delenv("GPUSCALE_CATALOG", raising=False)
    set_user_entries({}, {}, {})
    yield
    set_user_entries({}, {}, {})
