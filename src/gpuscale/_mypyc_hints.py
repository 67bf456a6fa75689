"""`mypyc_attr`, the compiler's per-class hints, importable with or without mypy installed.

The hot path's compiled classes (setup.py) may carry `@mypyc_attr(...)`: mypyc reads it at
build time (it resolves this module's name to `mypy_extensions.mypyc_attr`, so the hint is
seen through the re-export); in pure Python it does nothing. `mypy_extensions` comes with
mypy (the build's and the test extra's), not with the package's own dependencies, so where it
is missing a no-op stands in.

Hints used (docs/hot-path.md): `acyclic=True` on classes whose fields are numbers only, so
they can never be part of a reference cycle: their objects skip the cycle collector's
tracking, about a third of the cost of making and freeing one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_extensions import mypyc_attr as mypyc_attr
else:
    try:
        from mypy_extensions import mypyc_attr
    except ImportError:  # a pure install without mypy: the hint only guides the compiler

        def mypyc_attr(*_args: object, **_kwargs: object):
            return lambda cls: cls

__all__ = ["mypyc_attr"]
