"""Every file a command writes is its own, and none is a file it reads.

`simulate S --out r.json --report r.json` wrote the HTML report, then refused the JSON as
"r.json exists" (exit 2 with r.json holding the wrong output); `report r.json --out r.json
--force` and `simulate S --out S --force` replaced the input they were reading. `--force`
asks to replace an old output, not the input or a sibling output of the same run, so both are
refused before any work, whatever the flags (issue 30's "nothing written outside the
requested output").

Applied to every subcommand by `check_distinct_files` (cli/__init__.py wraps each command's
callback): outputs are the `OutputFile` options, inputs every other path option or argument
and `--manifests` (output directories, `plan --out` and `report --charts-dir`, are neither).
Streams (`-`, devices, FIFOs, /dev/stdout) are skipped: they are written in place and may be
shared, as a shell's 2>&1 shares one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import click

from gpuscale.errors import UserInputError

# Inputs that are plain strings, not click.Path (a manifest file, directory or `-`), and the
# path options that name an output directory (plan --out, report --charts-dir): neither role.
_STRING_INPUTS = frozenset({"manifests"})
_OUTPUT_DIRECTORIES = frozenset({"out", "charts_dir"})


def _values(value: object) -> Iterator[str]:
    """The path strings in a parameter's value (one, several, or none)."""
    if isinstance(value, (str, os.PathLike)):
        yield os.fspath(value)
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _values(item)


def _roles(command: click.Command, params: dict) -> tuple[list[tuple[str, str]],
                                                          list[tuple[str, str]]]:
    """([(option, path)] written, [(option, path)] read) of one invocation."""
    from gpuscale.cli.io import OutputFile

    outputs: list[tuple[str, str]] = []
    inputs: list[tuple[str, str]] = []
    for param in command.params:
        value = params.get(param.name or "")
        shown = param.opts[-1] if param.opts and param.opts[-1].startswith("-") else (
            (param.name or "").upper())
        if isinstance(param.type, OutputFile):
            outputs.extend((shown, raw) for raw in _values(value))
        elif param.name in _OUTPUT_DIRECTORIES:
            continue
        elif isinstance(param.type, click.Path) or param.name in _STRING_INPUTS:
            inputs.extend((shown, raw) for raw in _values(value))
    return outputs, inputs


def _written_key(raw: str) -> tuple:
    """The file a write to `raw` replaces: the name itself in its real directory (a symlink
    there is replaced, not written through, outputs.py)."""
    path = Path(raw)
    return (os.path.realpath(path.parent), path.name)


def check_distinct_files(command: click.Command, params: dict) -> None:
    from gpuscale.cli.io import is_stream

    outputs, inputs = _roles(command, params)
    outputs = [(opt, raw) for opt, raw in outputs if raw != "-" and not is_stream(Path(raw))]
    seen: dict[tuple, str] = {}
    for opt, raw in outputs:
        key = _written_key(raw)
        if key in seen:
            raise UserInputError(f"{seen[key]} and {opt} name the same file; give each output "
                                 "its own path", source=raw)
        seen.setdefault(key, opt)
    read: dict[tuple[int, int], str] = {}
    for opt, raw in inputs:
        if raw != "-":
            try:
                stat = os.stat(raw)
            except OSError:
                continue  # missing or unreadable: the command says so in its own words
            read[(stat.st_dev, stat.st_ino)] = opt
    for opt, raw in outputs:
        try:
            stat = os.lstat(raw)
        except OSError:
            continue  # a new file is no input
        if (source := read.get((stat.st_dev, stat.st_ino))) is not None:
            raise UserInputError(f"{opt} names an input of this command ({source}); write the "
                                 "output elsewhere (--force replaces an old output, never an "
                                 "input)", source=raw)
