"""Output helpers shared by subcommands: never overwrite what a user gave without asking."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from gpuscale.errors import UserInputError


def is_stream(path: Path) -> bool:
    """`-` (stdout), a device, a FIFO or a path through /dev or /proc (/dev/stdout): written
    in place as a shell redirect would, nothing a user made is replaced, so no --force."""
    from gpuscale.outputs import writes_in_place

    return writes_in_place(path)


class OutputFile(click.Path):
    """A file to write, taken as typed: `x.json/` names a directory, not `x.json` (pathlib
    drops the trailing slash, and the result went to x.json)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(path_type=Path, **kwargs)

    def convert(self, value, param, ctx):
        raw = os.fspath(value)
        if raw != "-" and raw.endswith(("/", os.sep, "/.", "/..")):
            self.fail(f"{raw!r} ends with a path separator: it names a directory; give a file "
                      "path", param, ctx)
        return super().convert(value, param, ctx)


# Most file systems hold names of at most 255 bytes (NAME_MAX): a longer one fails at the
# rename, after the work is done.
NAME_MAX_BYTES = 255


def _check_name_length(path: Path) -> None:
    for part in Path(path).parts:
        if len(os.fsencode(part)) > NAME_MAX_BYTES:
            raise UserInputError(f"file name of {len(os.fsencode(part))} bytes; file systems "
                                 f"take at most {NAME_MAX_BYTES}", source=str(path)[:120] + "...")


def check_output_path(path: Path, *, force: bool = False) -> None:
    """Refuse an output path we could not or should not write, before any work is done."""
    if is_stream(path):
        return
    _check_name_length(path)
    if path.is_dir():
        raise UserInputError(f"{path} is a directory; expected a file path")
    if path.exists() and not force:
        raise UserInputError(f"{path} exists; pass --force to overwrite it")
    if path.parent and not path.parent.is_dir():
        raise UserInputError(f"directory {path.parent} does not exist")


def write_new_file(path: Path, text: str, *, force: bool = False) -> None:
    """Write `text` to `path`, refusing to replace an existing file unless `force`."""
    from gpuscale.outputs import write_atomic

    check_output_path(path, force=force)
    if str(path) == "-":
        sys.stdout.write(text)
        return
    write_atomic(path, text)


def dump_json(data: object) -> str:
    return json.dumps(data, indent=2, sort_keys=False) + "\n"
