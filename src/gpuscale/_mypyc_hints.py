"""The compiler's hints (`mypy_extensions`), importable with or without mypy installed.

The hot path's compiled modules (setup.py) may use them: mypyc reads them at build time (it
resolves this module's names to `mypy_extensions`'s, so they are seen through the re-export);
in pure Python they change nothing. `mypy_extensions` comes with mypy (the build's and the
test extra's), not with the package's own dependencies, so where it is missing stand-ins do.

- `mypyc_attr(acyclic=True)` on classes whose fields are numbers only: they can never be part
  of a reference cycle, so their objects skip the cycle collector's tracking, a good part of
  the cost of making and freeing one; `free_list_len=1` keeps one freed object for the next.
- `i64`: a native 64-bit int, for counts the compiled code does arithmetic on (a plain `int`
  is tagged: every add checks for an overflow into a Python object). An `int` in pure Python.

docs/hot-path.md says where each is used and what it measured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_extensions import i64 as i64
    from mypy_extensions import mypyc_attr as mypyc_attr
else:
    try:
        from mypy_extensions import i64, mypyc_attr
    except ImportError:  # a pure install without mypy: the hints only guide the compiler
        i64 = int

        def mypyc_attr(*_args: object, **_kwargs: object):
            return lambda cls: cls

__all__ = ["i64", "mypyc_attr"]
