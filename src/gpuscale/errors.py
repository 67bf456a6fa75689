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
