"""Errors that reach the user. Exit codes live on the exception class (click's habit)."""

from __future__ import annotations


class GpuscaleError(Exception):
    """Base class; `exit_code` is what the CLI exits with."""

    exit_code = 1


class UserInputError(GpuscaleError):
    """Bad input (file, field, value): one line naming where and what was expected; exit 2."""

    exit_code = 2

    def __init__(self, message: str, *, source: str | None = None, field: str | None = None):
        self.source = source
        self.field = field
        where = ": ".join(p for p in (source, field) if p)
        super().__init__(f"{where}: {message}" if where else message)


# What reading a value of the wrong type raises (a string where a mapping was, "10%" as a count):
# caught where user data is read past its schema, and turned into a UserInputError. OverflowError:
# a huge number that passed its checks overflowing in arithmetic (math.ceil of inf).
WRONG_VALUE_ERRORS = (AttributeError, KeyError, IndexError, TypeError, ValueError, OverflowError)


class Interrupted(GpuscaleError):
    """A long command stopped by SIGINT or SIGTERM: one line saying what was kept (exit 2,
    as issue 30 asks of every case that does not end in a result)."""

    exit_code = 2


class Terminated(BaseException):
    """SIGTERM, raised where the process was (BaseException: no `except Exception` eats it), as
    SIGINT raises KeyboardInterrupt; only the process's entry sets the handler
    (`raise_terminated`), a library caller keeps its own."""


def raise_terminated(signum, frame) -> None:
    """The SIGTERM handler of the process's entry."""
    raise Terminated()


def stopped_by(exc: BaseException | None) -> str | None:
    """The signal that stopped the process, when `exc` is an interrupt, wraps one, or was raised
    while one unwound: Python 3.11 wraps a KeyboardInterrupt raised while a class is built
    (pydantic's `__set_name__`, importing a command) in a RuntimeError."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, Terminated):
            return "SIGTERM"
        if isinstance(exc, KeyboardInterrupt):
            return "SIGINT (Ctrl-C)"
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None
