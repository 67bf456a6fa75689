"""Build hook: compile the simulation's hot path with mypyc where a C compiler exists.

Everything else about the package is in pyproject.toml; this file only adds the optional
extension modules. The modules below (event loop, step cost, replica engine, router,
request table, fleet) are compiled in one mypyc group, so they call each other natively
(issue 16: ~1.5x the requests per second end to end, docs/benchmarks.md). Their pure-Python
sources ship too and give the same bytes out; they are what runs when:

- the build has no C compiler or mypyc fails (the install goes on, pure, with one message),
- `GPUSCALE_PURE=1` is set at install time (nothing is compiled) or at run time (the compiled
  modules are skipped, `gpuscale/_hot_path.py`),
- a source was edited after the build (an editable install; `_hot_path.py` compares each
  source's stat, then its hash).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def _hot_path_module():
    """gpuscale/_hot_path.py, loaded by its path (stdlib only at import: the package itself and
    its dependencies are not importable in pip's build environment). It names the hot modules
    and the manifest once, for the build and for the run-time choice alike."""
    path = ROOT / "src" / "gpuscale" / "_hot_path.py"
    spec = importlib.util.spec_from_file_location("_gpuscale_hot_path", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_HOT_PATH = _hot_path_module()
HOT_SOURCES = tuple(f"src/{name.replace('.', '/')}.py" for name in _HOT_PATH.HOT_MODULES)
# Written beside the compiled modules: the sha256, size and mtime of each source they were
# built from, so the package can tell a stale build from a fresh one (_hot_path.py).
MANIFEST = f"gpuscale/{_HOT_PATH.MANIFEST}"


def _say(message: str) -> None:
    print(f"gpuscale: {message}", file=sys.stderr, flush=True)


@functools.cache
def _mypyc_extensions() -> list[Extension]:
    if os.environ.get("GPUSCALE_PURE") == "1":
        _say("GPUSCALE_PURE=1: installing the pure-Python hot path only")
        return []
    try:
        from mypyc.build import mypycify
    except ImportError as exc:
        _say(f"mypyc not importable ({exc}); installing the pure-Python hot path only")
        return []
    try:
        # `--config-file=`: not the project's [tool.mypy] (its pydantic plugin is not in the
        # build environment); missing third-party imports are typed Any, which compiles to
        # the same generic Python operations the interpreter would run.
        extensions = mypycify(["--config-file=", "--no-site-packages",
                               "--ignore-missing-imports",
                               "--disable-error-code=import-untyped", *HOT_SOURCES],
                              opt_level="3", group_name="gpuscale_hot")
    except BaseException as exc:  # mypyc reports type errors by SystemExit
        _say(f"mypyc could not compile the hot path ({exc!r}); installing pure Python")
        return []
    for extension in extensions:
        extension.extra_compile_args = [*extension.extra_compile_args, *UNIX_EXTRA_CFLAGS]
    return extensions


# mypyc #includes its runtime (lib-rt: CPyList_GetItem, CPyTagged_*, ...) into the group's one
# C file, but the functions keep default visibility, and in position-independent code a C
# compiler must then assume another library may interpose them: every call goes through the
# PLT and none is inlined (52 PLT calls of CPyList_GetItem alone). This flag lets GCC and
# clang bind them locally and inline them: 4.3 % fewer instructions in issue 16's loop
# (callgrind, docs/benchmarks.md), same results (no floating-point option changes).
# CPython builds itself with it. A compiler that rejects it gets a second build without it
# (OptionalBuildExt.run).
UNIX_EXTRA_CFLAGS = ("-fno-semantic-interposition",)


class OptionalBuildExt(build_ext):
    """build_ext that falls back to pure Python as a whole: if any module fails to compile
    (no compiler, missing headers), every compiled output is removed, since the six are one
    group and must not be mixed with pure ones."""

    def finalize_options(self) -> None:
        # mypyc runs here, not when setup.py is imported: pip imports it for metadata too.
        # Before setuptools' own finalize_options, which prepares each extension.
        self.distribution.ext_modules = _mypyc_extensions()
        super().finalize_options()

    def run(self) -> None:
        if not self.extensions:
            return
        if os.name == "nt":  # MSVC, distutils' compiler there: the flag is GCC's and clang's
            self._drop_extra_cflags()
        try:
            try:
                super().run()
            except BaseException:
                if not self._drop_extra_cflags():
                    raise
                _say(f"the compiler rejected {' '.join(UNIX_EXTRA_CFLAGS)}; building without it")
                self.build_extensions()  # the compiler run() set up, without the flag
        except BaseException as exc:
            for output in self.get_outputs():
                Path(output).unlink(missing_ok=True)
            reason = str(exc) if len(str(exc)) < 160 else str(exc)[:160] + "..."
            _say(f"could not build the compiled hot path ({type(exc).__name__}: {reason}); "
                 "installing pure Python (same results, ~1.4x slower; docs/benchmarks.md)")
            return
        self._write_manifest()

    def _drop_extra_cflags(self) -> bool:
        """Remove UNIX_EXTRA_CFLAGS from every extension; False if none had them."""
        dropped = False
        for extension in self.extensions:
            kept = [f for f in extension.extra_compile_args if f not in UNIX_EXTRA_CFLAGS]
            dropped |= len(kept) != len(extension.extra_compile_args)
            extension.extra_compile_args = kept
        return dropped

    def _write_manifest(self) -> None:
        records = {src.removeprefix("src/"): _HOT_PATH.source_record(str(ROOT / src))
                   for src in HOT_SOURCES}
        base = ROOT / "src" if self.inplace else Path(self.build_lib)
        path = base / MANIFEST
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(records, indent=1, sort_keys=True) + "\n")
        _say(f"compiled the hot path with mypyc ({len(HOT_SOURCES)} modules)")

    def get_outputs(self) -> list[str]:
        outputs = super().get_outputs()
        if self.extensions:
            base = ROOT / "src" if self.inplace else Path(self.build_lib)
            outputs.append(str(base / MANIFEST))
        return outputs


# A placeholder, replaced by mypyc's modules in OptionalBuildExt.finalize_options: it makes
# setuptools run build_ext and tag the wheel for this platform.
setup(ext_modules=[Extension("gpuscale_hot__placeholder", sources=[])],
      cmdclass={"build_ext": OptionalBuildExt})
