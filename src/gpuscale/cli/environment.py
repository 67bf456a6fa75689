"""The process gpuscale runs in, checked before a command starts (issue 30).

- Standard streams: output whose encoding cannot spell a name (`PYTHONIOENCODING=ascii`,
  `latin-1`) is written with backslash escapes instead of failing mid-table; a closed stdout
  (`gpuscale ... >&-`) is an error, since every command prints its result there and the
  result would be lost with exit 0.
- The working directory: a deleted one (`os.getcwd()` fails) is one line, not a traceback
  from whichever path is resolved first.
- Writing stdout fails (`> /dev/full`, an I/O error): `write_failure` turns the OSError into
  the one-line error.
- Stopped by Ctrl-C or SIGTERM: `stop_on_sigterm` makes SIGTERM raise `Terminated` as SIGINT
  raises KeyboardInterrupt, so `finally` blocks run (the safe writer removes its temporary
  file; SIGTERM's default action left it behind) and the command ends in one line, exit 2.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys

from gpuscale.errors import UserInputError, raise_terminated, stopped_by


def escape_unencodable_output() -> None:
    """Keep each stream's encoding, but write what it cannot encode as `\\xNN` escapes."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", "strict") == "strict":
            with contextlib.suppress(ValueError, OSError):  # closed or detached: nothing to set
                reconfigure(errors="backslashreplace")


def check_process() -> None:
    """Refuse to start where the result could not be delivered or paths not resolved."""
    if sys.stdout is None:
        raise UserInputError("standard output is closed; gpuscale prints its result there "
                             "(give it a file: `> out.txt`, or /dev/null to discard it)")
    try:
        os.getcwd()
    except OSError as exc:
        raise UserInputError(f"the working directory is gone ({exc.strerror}); run gpuscale "
                             "from an existing directory") from None


def stop_on_sigterm() -> None:
    """SIGTERM raises `Terminated` (the process's entry only: a library caller keeps its own
    handlers)."""
    import signal

    signal.signal(signal.SIGTERM, raise_terminated)


def stopped_error(exc: BaseException) -> UserInputError | None:
    """The one-line error of a command stopped by a signal (None: `exc` is no interrupt)."""
    if (what := stopped_by(exc)) is None:
        return None
    return UserInputError(f"stopped by {what}; outputs are whole or not written")


def write_failure(exc: OSError) -> UserInputError | None:
    """The one-line error for an OSError that escaped a command, or None for a closed pipe
    (`gpuscale ... | head`: the reader chose to stop; click exits quietly)."""
    if exc.errno == errno.EPIPE:
        return None
    where = exc.filename if exc.filename is not None else "standard output"
    return UserInputError(f"cannot write {where}: {exc.strerror or exc}") if exc.filename \
        is None or exc.errno in (errno.ENOSPC, errno.EIO, errno.EROFS, errno.EDQUOT) else \
        UserInputError(f"{exc.filename}: {exc.strerror or exc}")
