"""Writing output files safely: the one place gpuscale creates files (bottom layer; no
gpuscale imports but `errors`).

- A regular output is written to a temporary file created with O_EXCL in the target's own
  directory (`tempfile.mkstemp`) and renamed over the target: a planted `<out>.tmp` symlink is
  never followed, a symlink at the target is replaced rather than written through (a dangling
  `--out` link does not create a file at its target), and a reader never sees half a file.
- Anything that is not a regular file -- a character or block device (`/dev/null`), a FIFO,
  a socket -- and every path that is or passes through `/dev/` or `/proc/` (`/dev/stdout`,
  `/dev/fd/1`, `/proc/self/fd/1`, whatever they point at: a pipe, a terminal, or the regular
  file a shell redirected stdout to) is opened and written in place, as a shell redirect
  does. Renaming over such a path would replace the system's `/dev/stdout` link with a
  regular file for every later process. A full disk (`/dev/full`) is one line, not a
  traceback.
- Names that come from user input become file names through `safe_filename` (bounded length,
  no path separators).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from gpuscale.errors import UserInputError

MAX_NAME_CHARS = (
    100  # file names from user input; far below the 255-byte limit of most file systems
)


def _cannot(path: Path, exc: OSError) -> UserInputError:
    return UserInputError(f"cannot write {path}: {exc.strerror or exc}")


_SYSTEM_TREES = ("/dev/", "/proc/")
_MAX_LINK_HOPS = 40  # Linux's own limit on symbolic links followed in one path lookup


def _through_system_tree(path: Path) -> bool:
    """Whether `path` or any symbolic link it passes through names something in /dev or
    /proc (the standard-stream aliases all do: /dev/stdout -> /proc/self/fd/1 -> ...)."""
    hop = os.path.abspath(path)
    for _ in range(_MAX_LINK_HOPS):
        if hop.startswith(_SYSTEM_TREES):
            return True
        if not os.path.islink(hop):
            return False
        try:
            target = os.readlink(hop)
        except OSError:
            return False
        hop = os.path.abspath(os.path.join(os.path.dirname(hop), target))
    return False


def writes_in_place(path: Path) -> bool:
    """True where an output must be opened and written as a shell redirect would, never
    renamed over: a device, FIFO or socket, or a path through /dev or /proc (module docstring)."""
    if str(path) == "-":
        return True
    try:
        mode = os.stat(path).st_mode  # follows links, as open() does
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        return True
    return _through_system_tree(Path(path))


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write `data` to `path` (see the module docstring); any OSError is one UserInputError."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    write_streamed(path, lambda handle: handle.write(payload))


def write_streamed(path: Path, produce: Callable[[BinaryIO], object]) -> None:
    """`write_atomic` of what `produce(handle)` writes, without holding it all in memory (an
    exported run's series can be hundreds of MB)."""
    path = Path(path)
    if writes_in_place(path):
        try:
            with open(path, "wb") as handle:
                produce(handle)
                handle.flush()
        except OSError as exc:
            raise _cannot(path, exc) from None
        return
    directory = path.parent if str(path.parent) else Path(".")
    tmp_name = None
    try:
        fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=f".{path.name[:MAX_NAME_CHARS]}.",
                                        suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            produce(handle)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp_name, 0o666 & ~umask)  # mkstemp's 0600 is for the temporary file only
        os.replace(tmp_name, path)
        tmp_name = None
    except OSError as exc:
        raise _cannot(path, exc) from None
    finally:
        if tmp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)


def real_directory(path: Path, what: str) -> Path:
    """`path` as a directory gpuscale may write into: refused when it is a symbolic link (a
    planted `DIR/manifests -> /elsewhere` would send writes and deletions outside DIR)."""
    if path.is_symlink():
        raise UserInputError(f"{path} is a symbolic link; refusing to write {what} through it")
    if path.exists() and not path.is_dir():
        raise UserInputError(f"{path} is not a directory; expected a directory for {what}")
    return path


def safe_filename(name: str, suffix: str = "") -> str:
    """A file name for user-given `name`: path separators and control characters replaced,
    at most MAX_NAME_CHARS characters (a hash of the full name keeps long names distinct)."""
    clean = re.sub(r"[^A-Za-z0-9._-]", "-", name).strip(".") or "unnamed"
    if clean == name and len(name) <= MAX_NAME_CHARS:
        return name + suffix
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{clean[:MAX_NAME_CHARS - 9]}-{digest}{suffix}"


# C0/C1 control characters (ESC starts ANSI and OSC sequences, BEL ends OSC), DEL, and the
# Unicode bidirectional overrides that reorder what a terminal shows.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: object) -> str:
    """User text fit for a terminal: control characters shown as \\xNN escapes, so a name can
    neither style, hide nor rewrite output (rich markup is neutralised separately by printing
    it as `rich.text.Text`, which is never parsed for markup)."""
    return _UNPRINTABLE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                            else f"\\u{ord(m.group()):04x}", str(text))
