"""Which hot path runs: the mypyc-compiled modules (built at install, setup.py) or their sources.

A compiled module (`replica.cpython-311-....so`) shadows `replica.py` in the same folder, so
choosing the sources takes an import hook: `install()` (called by `gpuscale/__init__.py`
before any of them is imported) puts a finder first on `sys.meta_path` that loads all of
them from their `.py` files when

- `GPUSCALE_PURE=1` is set (the suite and `bench/` use it to compare both paths), or
- the build's manifest (`_compiled_sources.json`: each source's sha256, size and mtime_ns
  at build time) no longer matches the sources: an editable install edited since
  `pip install -e .`. Running the old compiled code there would silently ignore the edit; one
  line on stderr says so. A source whose size and mtime (to the nanosecond) are the build's
  is taken as the build's without hashing it, as the interpreter trusts its own `.pyc` by the
  source's size and mtime (in whole seconds); any other is hashed (a wheel install, whose
  files are newer than the build's) and stale only if its bytes differ.

All or none: they are one mypyc group whose compiled classes refer to each other natively,
so a compiled module must not meet a pure one. Only stdlib modules already loaded at start-up
are used, the manifest is read only where a build wrote one, and hashlib is imported only to
hash a source that is not as built.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec

# The one list: setup.py reads it (and MANIFEST) from this file to know what to compile.
HOT_MODULES = (
    "gpuscale.core.simulation",
    "gpuscale.serving.hardware",
    "gpuscale.serving.kernels",
    "gpuscale.serving.pipeline",
    "gpuscale.serving.step_time",
    "gpuscale.serving.decode_segment",
    "gpuscale.serving.performance",
    "gpuscale.serving.replica",
    "gpuscale.serving.router",
    "gpuscale.serving.requests_table",
    "gpuscale.sim.fleet",
)
MANIFEST = "_compiled_sources.json"
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class PureSourceFinder:
    """Finds the hot modules' `.py` files, ahead of the path finder that would pick the `.so`."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: object = None) -> ModuleSpec | None:
        if fullname not in HOT_MODULES or not path:
            return None
        import importlib.util

        leaf = fullname.rpartition(".")[2] + ".py"
        for entry in path:  # the parent package's __path__
            source = os.path.join(entry, leaf)
            if os.path.isfile(source):
                return importlib.util.spec_from_file_location(fullname, source)
        return None


def stale_sources(package_dir: str = PACKAGE_DIR) -> list[str] | None:
    """Sources edited since the compiled build (relative to src/), or None without a build."""
    manifest = os.path.join(package_dir, MANIFEST)
    if not os.path.isfile(manifest):
        return None
    import json

    with open(manifest, encoding="utf-8") as f:
        built: dict[str, dict[str, object] | str] = json.load(f)
    root = os.path.dirname(package_dir)
    return sorted(rel for rel, record in built.items()
                  if not _as_built(os.path.join(root, rel), record))


def source_record(path: str) -> dict[str, object]:
    """What the build writes to the manifest for one source (setup.py)."""
    st = os.stat(path)
    return {"mtime_ns": st.st_mtime_ns, "sha256": _sha256(path), "size": st.st_size}


def _as_built(path: str, record: dict[str, object] | str) -> bool:
    if isinstance(record, str):  # a manifest from before the stat was recorded: hash only
        record = {"sha256": record}
    try:
        st = os.stat(path)
    except OSError:
        return False
    if st.st_size == record.get("size") and st.st_mtime_ns == record.get("mtime_ns"):
        return True  # untouched since the build: no hashing (nor hashlib's import)
    return _sha256(path) == record["sha256"]


def _sha256(path: str) -> str | None:
    import hashlib  # here: only a source that is not as built is hashed

    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def install() -> None:
    if any(isinstance(f, PureSourceFinder) for f in sys.meta_path):
        return
    if os.environ.get("GPUSCALE_PURE") == "1":
        sys.meta_path.insert(0, PureSourceFinder())
        return
    stale = stale_sources()
    if stale:
        print(f"gpuscale: {', '.join(stale)} changed since the compiled hot path was built; "
              "running pure Python (same results, slower). Rebuild: pip install -e . "
              "(or make compile)", file=sys.stderr)
        sys.meta_path.insert(0, PureSourceFinder())
