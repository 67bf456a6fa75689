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

A section that names no command, an option the command lacks, and a value its option would
refuse on the command line (a list for a single value, `true` for a number, 1.5 for a count)
are bad input, one line naming the file and key. The environment is held to the same rules:
`GPUSCALE_<COMMAND>_<OPTION>` takes the option's long name (`GPUSCALE_COMPARE_FAIL_UNDER_SLO`)
or its parameter name (`..._FAIL_UNDER`), its value is checked by the option's type, and a
`GPUSCALE_<COMMAND>_...` variable that names no option is refused with the known names.
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


def defaults_for(path: Path, name: str, command: click.Command,
                 commands: frozenset[str] = frozenset()) -> dict:
    """The section for `name` as click's default_map (keys = parameter names); `commands`
    are the section names the file may use (every gpuscale subcommand)."""
    from gpuscale.inputs import load_yaml

    data = load_yaml(path, what="gpuscale defaults file") or {}  # the limits of every input
    if not isinstance(data, dict):
        raise UserInputError("expected a mapping of command -> options", source=str(path))
    unknown = sorted(str(k) for k in data if commands and k not in commands)
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], sorted(commands), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise UserInputError(f"no gpuscale command {unknown[0]!r}{hint} (sections: "
                             f"{', '.join(sorted(commands))})", source=str(path),
                             field=unknown[0])
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
        out[param.name] = _checked(command, param, value, source=str(path),
                                   field=f"{name}.{key}")
    return out


def _checked(command: click.Command, param: click.Parameter, value, *, source: str,
             field: str):
    """`value` as the option would take it from the command line, or the one-line error."""
    flag = isinstance(param, click.Option) and param.is_flag
    bad = None
    if flag and not isinstance(value, bool):
        bad = f"true or false, got {value!r}"
    elif isinstance(value, (list, tuple)) and not param.multiple:
        bad = f"one value, got a list {value!r}"
    elif isinstance(value, dict):
        bad = f"a value, got a mapping {value!r}"
    elif isinstance(value, bool) and not flag:
        bad = f"{_kind_of(param)}, got {str(value).lower()}"
    elif isinstance(value, float) and not value.is_integer() and \
            isinstance(param.type, click.types.IntParamType):
        bad = f"a whole number, got {value!r}"
    if bad is not None:
        raise UserInputError(f"expected {bad}", source=source, field=field)
    try:
        with click.Context(command) as ctx:
            param.type_cast_value(ctx, value)
    except click.BadParameter as exc:
        raise UserInputError(exc.format_message(), source=source, field=field) from None
    return value


def _kind_of(param: click.Parameter) -> str:
    if isinstance(param.type, click.types.IntParamType):
        return "an integer"
    if isinstance(param.type, click.types.FloatParamType):
        return "a number"
    if isinstance(param.type, click.Choice):
        return "one of " + ", ".join(map(str, param.type.choices))
    return "a value"


def _long_names(param: click.Parameter) -> list[str]:
    return [o.lstrip("-") for o in getattr(param, "opts", ()) if o.startswith("--")]


def environment_names(prefix: str, param: click.Parameter) -> list[str]:
    """The variables that set `param`: its long option names, then its parameter name (the
    one click's auto_envvar_prefix reads), e.g. GPUSCALE_COMPARE_FAIL_UNDER_SLO and
    GPUSCALE_COMPARE_FAIL_UNDER."""
    names = [f"{prefix}_{n.replace('-', '_').upper()}" for n in _long_names(param)]
    if param.name:
        names.append(f"{prefix}_{param.name.upper()}")
    return list(dict.fromkeys(names))


def check_environment(name: str, command: click.Command, environ=os.environ) -> None:
    """Let every option be set by its long name too, and refuse a GPUSCALE_<COMMAND>_ variable
    that sets nothing (a typo would otherwise be ignored: exit 0 with the default)."""
    prefix = f"GPUSCALE_{name.upper()}"
    known: dict[str, click.Parameter] = {}
    for param in command.params:
        if isinstance(param, click.Option) and param.allow_from_autoenv:
            names = environment_names(prefix, param)
            param.envvar = names  # read by click before its own prefix_NAME spelling
            known.update(dict.fromkeys(names, param))
    for variable in sorted(environ):
        if variable.startswith(prefix + "_") and variable not in known:
            import difflib

            close = difflib.get_close_matches(variable, sorted(known), n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise UserInputError(f"environment variable {variable} sets no option of "
                                 f"`gpuscale {name}`{hint}")
