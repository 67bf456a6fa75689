"""Output helpers shared by subcommands: never overwrite what a user gave without asking."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gpuscale.errors import UserInputError


def is_stream(path: Path) -> bool:
    """`-` (stdout), a device, a FIFO or a path through /dev or /proc (/dev/stdout): written
    in place as a shell redirect would, nothing a user made is replaced, so no --force."""
    from gpuscale.outputs import writes_in_place

    return writes_in_place(path)


def check_output_path(path: Path, *, force: bool = False) -> None:
    """Refuse an output path we could not or should not write, before any work is done."""
    if is_stream(path):
        return
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
