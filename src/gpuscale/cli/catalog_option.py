"""`--catalog FILE` (repeatable) for every command that takes a model or an instance type.

The option's callback loads GPUSCALE_CATALOG's files and the flags' files and installs their
entries before the command body runs (click calls it even when the flag is absent, so the
environment variable alone works too).
"""

from __future__ import annotations

import os
from pathlib import Path

import click

CATALOG_FILES = "gpuscale_catalog_files"  # ctx.meta key: the files loaded, for a hint to name


def _install(ctx: click.Context, param: click.Parameter, value: tuple[Path, ...]) -> tuple:
    ctx.meta[CATALOG_FILES] = value
    if not value and not os.environ.get("GPUSCALE_CATALOG"):
        # Nothing to load: keep light commands (audit) free of the loader's imports.
        from gpuscale.catalog.specs import set_user_entries

        set_user_entries({}, {}, {})
        return value
    from gpuscale.importer.catalog_files import use_catalogs

    use_catalogs(list(value))
    return value


def catalog_option(fn):
    return click.option(
        "--catalog", "catalogs", multiple=True, type=click.Path(path_type=Path),
        callback=_install, expose_value=False, is_eager=True,
        help="A catalog file adding or overriding models, GPUs and instance types "
             "(repeatable; GPUSCALE_CATALOG holds more, separated like PATH).")(fn)
