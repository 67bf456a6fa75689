"""pydantic's plugin discovery without `importlib.metadata` where no plugin is installed.

pydantic asks `pydantic.plugin._loader.get_plugins()` before it builds its first validator,
and that module imports `importlib.metadata` (with `email`, `zipfile`, `csv`, `socket`: 14 ms
of `gpuscale simulate`'s ~0.28 s import) to read every installed distribution's entry points,
looking for the `pydantic` group. Nothing else a gpuscale command runs imports it.

`install()` (the command line's process entry only, before any subcommand imports pydantic)
puts a stand-in for that module in `sys.modules`. Its `get_plugins()` first looks for the
files `importlib.metadata` would read: the `entry_points.txt` of each `*.dist-info` and
`*.egg-info` folder directly on `sys.path`. When none mentions pydantic, the answer is the
one the real loader gives, no plugins, and the import is skipped. Anything it cannot judge
(a plugin named there, a zip or egg on `sys.path`, a finder on `sys.meta_path` that lists
distributions of its own, a `PYDANTIC_DISABLE_PLUGINS` it does not handle, any other name
asked of the module) hands over to the real module, which then replaces the stand-in: the
plugins a user installed load exactly as they would without gpuscale.
"""

from __future__ import annotations

import os
import sys
import types
from typing import Any

LOADER = "pydantic.plugin._loader"


def install(modules: dict[str, Any] = sys.modules) -> None:
    """The stand-in, unless pydantic has already loaded its real loader."""
    if LOADER not in modules:
        stand_in = types.ModuleType(LOADER, __doc__)
        # A module's own __getattr__ (PEP 562) answers the names it lacks.
        vars(stand_in).update(get_plugins=get_plugins, __getattr__=_real_attribute)
        modules[LOADER] = stand_in


def get_plugins(*args: Any, **kwargs: Any) -> Any:
    """`()` where no installed distribution can declare a pydantic plugin, else the real
    loader's answer. A call with arguments (a pydantic whose loader this stand-in does not
    know) goes to the real loader as it is."""
    if args or kwargs:
        return _real().get_plugins(*args, **kwargs)
    # The real loader's own switch, read on every call as it reads it.
    if os.getenv("PYDANTIC_DISABLE_PLUGINS") in ("__all__", "1", "true"):
        return ()
    if not _may_declare_plugins():
        return ()
    return _real().get_plugins()


def _real_attribute(name: str) -> Any:
    if name.startswith("__"):  # the import system's own probes (__spec__, __path__, ...)
        raise AttributeError(name)
    return getattr(_real(), name)


def _real() -> types.ModuleType:
    """pydantic's own loader, imported in place of the stand-in (later imports get it)."""
    import importlib

    current = sys.modules.get(LOADER)
    if current is not None and vars(current).get("get_plugins") is get_plugins:
        del sys.modules[LOADER]  # the stand-in: let the import find pydantic's file
    return importlib.import_module(LOADER)


_ANSWER: list[bool] = []  # the scan's result, once (the real loader also scans once)


def _may_declare_plugins() -> bool:
    if not _ANSWER:
        _ANSWER.append(_scan(sys.path, sys.meta_path))
    return _ANSWER[0]


def _scan(paths: list[Any], finders: list[Any]) -> bool:
    """False only where `importlib.metadata.entry_points()` could find no `pydantic` group:
    the standard path finder is the only one that lists distributions, and no metadata
    folder on these paths has an entry_points.txt that names pydantic."""
    from importlib.machinery import PathFinder

    for finder in finders:
        if finder is not PathFinder and hasattr(finder, "find_distributions"):
            return True
    for entry in paths:
        if not isinstance(entry, str):
            return True
        root = entry or "."
        try:
            children = os.listdir(root)
        except NotADirectoryError:
            return True  # a zip: importlib.metadata reads its members
        except OSError:
            continue  # absent: nothing there for importlib.metadata either
        if os.path.basename(root).lower().endswith(".egg"):
            return True  # an egg folder keeps its metadata in EGG-INFO
        for child in children:
            if child.lower().endswith((".dist-info", ".egg-info")):
                try:
                    with open(os.path.join(root, child, "entry_points.txt"), "rb") as f:
                        if b"pydantic" in f.read().lower():
                            return True
                except (FileNotFoundError, NotADirectoryError):
                    continue  # no entry points (or a PKG-INFO-style file)
                except OSError:
                    return True
    return False
