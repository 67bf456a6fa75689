"""Load user catalog files (`--catalog FILE`, repeatable, and GPUSCALE_CATALOG, a path list)
and install their entries into the catalog for this process.

Order: GPUSCALE_CATALOG's paths first, then each `--catalog` in the order given; a later
file's entry replaces an earlier one of the same name.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import cast

from gpuscale.catalog.user import (
    ALLOWED_BESIDE_CONFIG_JSON,
    CatalogEntries,
    add_catalog,
    install,
)
from gpuscale.errors import UserInputError
from gpuscale.inputs import check_json_depth
from gpuscale.scenario.load import load_yaml

ENV_VAR = "GPUSCALE_CATALOG"
MAX_CONFIG_JSON_BYTES = 4 * 2**20  # a config.json is a few KB; refuse anything huge unread


def catalog_paths(flags: Iterable[str | Path], environ: dict | None = None) -> list[Path]:
    """GPUSCALE_CATALOG (split on os.pathsep, empty parts skipped) then the flags."""
    env = (os.environ if environ is None else environ).get(ENV_VAR, "")
    return [Path(p) for p in env.split(os.pathsep) if p] + [Path(p) for p in flags]


def _read_config_json(path: Path, source: str, where: str) -> dict:
    if not path.exists():
        raise UserInputError(f"config.json file {str(path)!r} not found", source=source,
                             field=where)
    if not path.is_file():  # /dev/zero or a FIFO would be read until memory runs out or block
        raise UserInputError(f"config.json {str(path)!r} is not a regular file", source=source,
                             field=where)
    if path.stat().st_size > MAX_CONFIG_JSON_BYTES:
        raise UserInputError(f"{path} is over {MAX_CONFIG_JSON_BYTES} bytes; expected a "
                             "model's config.json", source=source, field=where)
    try:
        text = path.read_text(encoding="utf-8")
        check_json_depth(text, source, field=where)
        data = json.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:
        raise UserInputError(f"{path} is not JSON ({exc})", source=source, field=where) from None
    if not isinstance(data, dict):
        raise UserInputError(f"{path}: expected a JSON object", source=source, field=where)
    return data


def _resolve_config_json(data: object, path: Path) -> object:
    """Replace each model's `config_json: PATH` (relative to the catalog file) by its content."""
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, dict):
        return data
    out = dict(models)
    for name, entry in models.items():
        if isinstance(entry, dict) and "config_json" in entry:
            ref = entry["config_json"]
            where = f"models.{name}.config_json"
            if not isinstance(ref, str) or not ref:
                raise UserInputError(f"expected a path to a config.json, got {ref!r}",
                                     source=str(path), field=where)
            for key in entry:  # before reading the file: a typo costs nothing
                if key not in ALLOWED_BESIDE_CONFIG_JSON:
                    close = difflib.get_close_matches(str(key), ALLOWED_BESIDE_CONFIG_JSON, n=1)
                    hint = f"; did you mean {close[0]!r}?" if close else ""
                    raise UserInputError(
                        f"unknown model field (beside config_json){hint} (known: "
                        f"{', '.join(ALLOWED_BESIDE_CONFIG_JSON)})", source=str(path),
                        field=f"models.{name}.{key}")
            target = Path(ref) if Path(ref).is_absolute() else path.parent / ref
            out[name] = dict(entry, config_json=_read_config_json(target, str(path), where))
    return dict(cast(dict, data), models=out)


def load_catalogs(paths: Iterable[Path]) -> CatalogEntries:
    """Validated entries of every file, later files winning; nothing installed yet."""
    entries = CatalogEntries()
    for path in paths:
        data = _resolve_config_json(load_yaml(Path(path)), Path(path))
        add_catalog(entries, data, str(path))
    return entries


def use_catalogs(flags: Iterable[str | Path], environ: dict | None = None) -> CatalogEntries:
    """Load GPUSCALE_CATALOG and `flags`, and install the entries (also when there are none,
    so a previous call's entries do not linger in a long-lived process)."""
    entries = load_catalogs(catalog_paths(flags, environ))
    install(entries)
    return entries
