"""The compiled hot path (setup.py builds it with mypyc at install) and its pure-Python fallback:
GPUSCALE_PURE=1 and a stale build load the sources, and both give the same bytes out.

The suite itself runs on whichever path is installed (`make test`: compiled where a C compiler
exists; `PYTHONPATH=src`: pure); `make test-pure` runs it on the sources with a build present.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpuscale import _hot_path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"

FILES = ("import importlib, json, sys; print(json.dumps({m: importlib.import_module(m).__file__ "
         "for m in sys.argv[1:]}))", *_hot_path.HOT_MODULES)


def _python(code: tuple[str, ...], pure: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GPUSCALE_PURE"}
    env["PYTHONPATH"] = str(SRC)
    if pure:
        env["GPUSCALE_PURE"] = "1"
    return subprocess.run([sys.executable, "-c", *code], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300, check=True)


def _compiled_available() -> bool:
    files = json.loads(_python(FILES, pure=False).stdout)
    return not any(f.endswith(".py") for f in files.values())


def test_pure_env_loads_every_hot_module_from_its_source():
    files = json.loads(_python(FILES, pure=True).stdout)
    assert sorted(files) == sorted(_hot_path.HOT_MODULES)
    for name, path in files.items():
        assert path == str(SRC / (name.replace(".", "/") + ".py"))


def test_finder_prefers_the_source_over_a_compiled_module(tmp_path):
    (tmp_path / "replica.py").write_text("X = 1\n")
    (tmp_path / "replica.cpython-311-x86_64-linux-gnu.so").write_bytes(b"not loaded")
    finder = _hot_path.PureSourceFinder()
    spec = finder.find_spec("gpuscale.serving.replica", [str(tmp_path)])
    assert spec is not None and spec.origin == str(tmp_path / "replica.py")
    # Only the hot modules; everything else is left to the normal finders.
    assert finder.find_spec("gpuscale.serving.kv", [str(tmp_path)]) is None


def test_stale_sources_lists_edited_and_missing_files(tmp_path):
    package = tmp_path / "gpuscale"
    (package / "serving").mkdir(parents=True)
    source = package / "serving" / "router.py"
    source.write_text("A = 1\n")
    assert _hot_path.stale_sources(str(package)) is None  # no build, nothing to compare
    # A manifest of hashes only (from before the stat was recorded) is still read.
    manifest = {"gpuscale/serving/router.py": hashlib.sha256(b"A = 1\n").hexdigest(),
                "gpuscale/serving/replica.py": hashlib.sha256(b"").hexdigest()}
    (package / _hot_path.MANIFEST).write_text(json.dumps(manifest))
    assert _hot_path.stale_sources(str(package)) == ["gpuscale/serving/replica.py"]
    (package / "serving" / "replica.py").write_text("")
    assert _hot_path.stale_sources(str(package)) == []
    source.write_text("A = 2\n")
    assert _hot_path.stale_sources(str(package)) == ["gpuscale/serving/router.py"]


def _build_manifest(package: Path, *sources: str) -> None:
    """The manifest as setup.py writes it, for these sources (relative to package's parent)."""
    records = {rel: _hot_path.source_record(str(package.parent / rel)) for rel in sources}
    (package / _hot_path.MANIFEST).write_text(json.dumps(records))


def test_a_source_as_built_is_not_hashed(tmp_path, monkeypatch):
    package = tmp_path / "gpuscale"
    (package / "serving").mkdir(parents=True)
    (package / "serving" / "router.py").write_text("A = 1\n")
    _build_manifest(package, "gpuscale/serving/router.py")
    record = json.loads((package / _hot_path.MANIFEST).read_text())["gpuscale/serving/router.py"]
    assert record["sha256"] == hashlib.sha256(b"A = 1\n").hexdigest()

    def no_hashing(path):
        raise AssertionError(f"hashed {path}")

    monkeypatch.setattr(_hot_path, "_sha256", no_hashing)
    assert _hot_path.stale_sources(str(package)) == []


def test_a_source_touched_since_the_build_is_hashed(tmp_path):
    # Same size, another mtime: an edit is told from a touch (or a wheel's newer files) by
    # the bytes, so the stat alone never calls a build stale or fresh wrongly.
    package = tmp_path / "gpuscale"
    (package / "serving").mkdir(parents=True)
    source = package / "serving" / "router.py"
    source.write_text("A = 1\n")
    _build_manifest(package, "gpuscale/serving/router.py")
    built_ns = source.stat().st_mtime_ns
    source.write_text("A = 2\n")  # same size, new bytes
    os.utime(source, ns=(built_ns + 10**9, built_ns + 10**9))
    assert _hot_path.stale_sources(str(package)) == ["gpuscale/serving/router.py"]
    source.write_text("A = 1\n")  # the built bytes again, at a new mtime: fresh
    os.utime(source, ns=(built_ns + 2 * 10**9, built_ns + 2 * 10**9))
    assert _hot_path.stale_sources(str(package)) == []
    source.write_text("A = 10\n")  # another size, even at the built mtime: hashed, stale
    os.utime(source, ns=(built_ns, built_ns))
    assert _hot_path.stale_sources(str(package)) == ["gpuscale/serving/router.py"]


def test_a_fresh_start_imports_no_hashlib_with_a_build_as_built(tmp_path):
    # The installed package's own check at import: with every source as built, the start-up
    # reads the manifest and stats six files, nothing more.
    package = tmp_path / "src" / "gpuscale"
    shutil.copytree(SRC / "gpuscale", package,
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", _hot_path.MANIFEST))
    rels = [name.replace(".", "/") + ".py" for name in _hot_path.HOT_MODULES]
    _build_manifest(package, *rels)
    env = {k: v for k, v in os.environ.items() if k != "GPUSCALE_PURE"}
    env["PYTHONPATH"] = str(tmp_path / "src")
    code = ("import sys, gpuscale; print('hashlib' in sys.modules, "
            "any(type(f).__name__ == 'PureSourceFinder' for f in sys.meta_path))")

    def run() -> str:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=env, timeout=60, check=True).stdout.strip()

    assert run() == "False False"
    (package / "serving" / "router.py").write_text("# edited\n")
    assert run() == "True True"  # hashed, stale: the sources run


# The demo and the serving examples that exercise the prefix cache, P/D and a burst: every
# summary field and the scrape series' digests (tests/golden/regen.py), compared as bytes.
CASES = ["demo", "prefix-cache/scenario.yaml", "pd-split/scenario.yaml",
         "midnight-spike/scenario.yaml"]
RUN_CASES = ("import json, sys; sys.path.insert(0, 'tests/golden'); from regen import run_case; "
             "print(json.dumps([run_case(n) for n in sys.argv[1:]], sort_keys=True))", *CASES)


@pytest.mark.slow
@pytest.mark.skipif(not _compiled_available(), reason="no compiled hot path is installed "
                    "(pip install -e . builds one where a C compiler and mypyc work)")
def test_compiled_and_pure_give_the_same_bytes():
    assert _python(RUN_CASES, pure=False).stdout == _python(RUN_CASES, pure=True).stdout


@pytest.mark.skipif(os.environ.get("CI") != "true" or not shutil.which("cc"),
                    reason="only CI's fresh install is known to have compiled the hot path")
def test_ci_install_runs_the_compiled_hot_path():
    # CI installs as a user does (`pip install -e .` with a C compiler present): the build
    # must have compiled, or every speed figure measured on the default install is pure
    # Python's. (A reinstall once compiled nothing at all: mypy saw the venv's pydantic
    # without its plugin and refused the hot modules' imports; setup.py now passes
    # --no-site-packages.)
    assert _compiled_available()


def test_the_hot_path_type_checks_as_the_compiled_build_checks_it():
    # setup.py's mypyc runs mypy without the project's config or site-packages (pydantic is
    # Any there); a type error only that check sees made every install since silently pure
    # (scenario/load.py's cached per-class lookup called with type[Any], issue 30's branch).
    from mypy import api

    sources = [str(SRC / f"{name.replace('.', '/')}.py") for name in _hot_path.HOT_MODULES]
    stdout, stderr, status = api.run([*_hot_path.MYPYC_MYPY_ARGS, "--cache-dir=/dev/null",
                                      *sources])
    assert status == 0, stdout + stderr
