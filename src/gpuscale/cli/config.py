"""Defaults from `.gpuscale.yaml`, below environment variables and flags.

Precedence (click's own order, which this relies on): a flag on the command line, then the
environment (`GPUSCALE_<COMMAND>_<OPTION>`, e.g. `GPUSCALE_COMPARE_SEEDS=3`), then the file,
then the built-in default. The file is `$GPUSCALE_CONFIG`, else `.gpuscale.yaml` in the
working directory or the nearest parent. One section per command, options by their long name:

    compare:
      seeds: 3
      fail-under-slo: 99
      output: table
    audit:
      fail-on: error
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from gpuscale.errors import UserInputError

CONFIG_NAME = ".gpuscale.yaml"


def find_config(start: Path | None = None) -> Path | None:
    explicit = os.environ.get("GPUSCALE_CONFIG")
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise UserInputError("GPUSCALE_CONFIG names no file", source=explicit)
        return path
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        candidate = directory / CONFIG_NAME
        if candidate.is_file():
            return candidate
    return None


def _param_for(command: click.Command, key: str) -> click.Parameter | None:
    wanted = key.strip().lstrip("-").replace("_", "-")
    for param in command.params:
        names = {param.name.replace("_", "-") if param.name else ""}
        names |= {opt.lstrip("-") for opt in getattr(param, "opts", ())}
        if wanted in names and isinstance(param, click.Option):
            return param
    return None


def defaults_for(path: Path, name: str, command: click.Command) -> dict:
    """The section for `name` as click's default_map (keys = parameter names)."""
    from gpuscale.inputs import load_yaml

    data = load_yaml(path, what="gpuscale defaults file") or {}  # the limits of every input
    if not isinstance(data, dict):
        raise UserInputError("expected a mapping of command -> options", source=str(path))
    section = data.get(name) or {}
    if not isinstance(section, dict):
        raise UserInputError(f"`{name}` must map option names to values", source=str(path),
                             field=name)
    out = {}
    for key, value in section.items():
        param = _param_for(command, str(key))
        if param is None:
            known = sorted(o.lstrip("-") for p in command.params if isinstance(p, click.Option)
                           for o in p.opts if o.startswith("--"))
            raise UserInputError(f"`gpuscale {name}` has no option {key!r}; known: "
                                 f"{', '.join(known)}", source=str(path), field=f"{name}.{key}")
        out[param.name] = value
    return out
