"""How a sweep holds its table and how it stops: the table lock, and Ctrl-C / SIGTERM.

- `lock_table`: an exclusive flock on `<out>.lock` for the whole sweep (two sweeps appending
  to one table wrote each run twice); the kernel releases it when the process dies, and
  `unlock_table` removes the file when the sweep ends, so it is no leftover. A lock taken on a
  file another sweep removed in between is taken again on the new one (the inode check).
- `stop_on_signals`: SIGINT (Ctrl-C, to the whole process group or to the sweep alone) and
  SIGTERM raise `Stopped` in the sweep process, so it stops one way: workers killed, lock
  removed, finished rows kept (SIGTERM's default action ended the process at once; SIGINT to
  the sweep alone printed "Aborted!" while its workers ran on). `stops_deferred` holds a stop
  back while workers are being started, so none is left half-started.
- `start_forkserver_quietly`: multiprocessing's forkserver and resource tracker share the
  terminal's process group; started with SIGINT ignored, Ctrl-C does not interrupt the
  forkserver's imports (it ignores SIGINT itself only after them, CPython
  Lib/multiprocessing/forkserver.py `main`). An ignored signal stays ignored across exec and
  fork, so the workers ignore it too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

from gpuscale.errors import UserInputError

_NAMES: dict[int, str] = {signal.SIGINT: "SIGINT (Ctrl-C)", signal.SIGTERM: "SIGTERM"}


def lock_table(out: Path) -> tuple[int, Path]:
    """The held lock (descriptor, path) on `out`'s lock file (module docstring)."""
    import fcntl

    lock_path = out.with_name(out.name + ".lock")
    while True:
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except OSError as exc:
            raise UserInputError(f"cannot create the sweep lock {lock_path}: "
                                 f"{exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise UserInputError(f"another sweep is writing {out} (it holds {lock_path.name}); "
                                 "wait for it to finish or give another --out") from None
        try:
            if os.stat(lock_path).st_ino == os.fstat(fd).st_ino:
                return fd, lock_path
        except FileNotFoundError:
            pass
        os.close(fd)  # the file we locked was removed by the sweep that held it: again


def unlock_table(fd: int, lock_path: Path) -> None:
    """Remove the lock file (still ours: we hold its flock) and release it."""
    with contextlib.suppress(OSError):
        if os.stat(lock_path).st_ino == os.fstat(fd).st_ino:
            os.unlink(lock_path)
    os.close(fd)


class Stopped(BaseException):
    """A stop signal raised in the sweep process (BaseException: no `except Exception` in a
    run swallows it, as none swallows KeyboardInterrupt)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signal_name = _NAMES.get(signum, f"signal {signum}")


class _Stops:
    """The sweep's handler of SIGINT and SIGTERM: raise `Stopped`, or hold it back."""

    def __init__(self) -> None:
        self.deferring = False
        self.pending: int | None = None

    def handle(self, signum, frame) -> None:
        if self.deferring:
            self.pending = signum
            return
        raise Stopped(signum)


_STOPS = _Stops()


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGINT and SIGTERM raise `Stopped` while the sweep runs (main thread only: a caller
    running sweeps in a thread keeps its own handlers)."""
    if not _main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _STOPS.handle) for sig in _NAMES}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def stops_deferred() -> Iterator[None]:
    """Hold a stop signal back until the block is done, then raise it."""
    _STOPS.deferring, _STOPS.pending = True, None
    try:
        yield
    finally:
        _STOPS.deferring = False
        pending, _STOPS.pending = _STOPS.pending, None
        if pending is not None:
            raise Stopped(pending)


def start_forkserver_quietly() -> None:
    """Start the forkserver (and its resource tracker) with SIGINT ignored (module doc)."""
    from multiprocessing import forkserver

    if not _main_thread():
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        forkserver.ensure_running()
    finally:
        signal.signal(signal.SIGINT, previous)
