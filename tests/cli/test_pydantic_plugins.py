"""The stand-in for pydantic's plugin loader (cli/pydantic_plugins.py): it may answer "no
plugins" only where importlib.metadata would find none, and otherwise hands over."""

from __future__ import annotations

import sys
import types
import zipfile
from importlib.machinery import PathFinder
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from gpuscale.cli import pydantic_plugins
from gpuscale.cli.pydantic_plugins import _scan


def _dist(root: Path, name: str, entry_points_text: str | None) -> None:
    info = root / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    if entry_points_text is not None:
        (info / "entry_points.txt").write_text(entry_points_text)


def _importlib_finds_plugins(paths: list[str]) -> bool:
    old = sys.path[:]
    sys.path[:] = paths
    try:
        from importlib.metadata import FastPath  # type: ignore[attr-defined]

        FastPath.__new__.cache_clear()  # its listing cache is keyed by folder
        return any(True for _ in entry_points(group="pydantic"))
    finally:
        sys.path[:] = old


@pytest.mark.parametrize("text, has_plugin, scan_says", [
    (None, False, False),
    ("[console_scripts]\ntool = tool:main\n", False, False),
    ("[pydantic]\nmine = mine:plugin\n", True, True),
    ("[PYDANTIC]\nmine = mine:plugin\n", False, True),  # unsure: hands over, costs the import
    ("[console_scripts]\npydantic-tool = mine:main\n", False, True),
])
def test_the_scan_never_misses_a_plugin_importlib_metadata_finds(tmp_path, text, has_plugin,
                                                                 scan_says):
    _dist(tmp_path, "other", "[console_scripts]\nother = other:main\n")
    _dist(tmp_path, "mine", text)
    (tmp_path / "loose.egg-info").write_text("Metadata-Version: 1.0\n")  # a PKG-INFO file
    paths = [str(tmp_path), str(tmp_path / "missing")]
    assert _importlib_finds_plugins(paths) is has_plugin
    assert _scan(paths, [PathFinder]) is scan_says


def test_what_it_cannot_judge_hands_over(tmp_path):
    archive = tmp_path / "deps.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("x-1.0.dist-info/entry_points.txt", "[pydantic]\nx = x:p\n")
    assert _scan([str(archive)], [PathFinder]) is True  # a zip on the path
    egg = tmp_path / "x-1.0.egg"
    egg.mkdir()
    assert _scan([str(egg)], [PathFinder]) is True  # an egg keeps EGG-INFO inside
    finder = types.SimpleNamespace(find_distributions=lambda context=None: iter(()))
    assert _scan([str(tmp_path / "missing")], [finder, PathFinder]) is True  # its own dists
    assert _scan([str(tmp_path / "missing")], [PathFinder]) is False


def test_install_leaves_a_loaded_loader_alone():
    real = types.ModuleType(pydantic_plugins.LOADER)
    modules = {pydantic_plugins.LOADER: real}
    pydantic_plugins.install(modules)
    assert modules[pydantic_plugins.LOADER] is real
    empty: dict = {}
    pydantic_plugins.install(empty)
    stand_in = empty[pydantic_plugins.LOADER]
    assert stand_in.get_plugins is pydantic_plugins.get_plugins
    with pytest.raises(AttributeError):
        _ = stand_in.__spec_like__  # the import system's dunder probes never load the real one


def test_a_call_with_arguments_goes_to_the_real_loader(monkeypatch):
    # A pydantic whose get_plugins takes arguments is not the loader the stand-in knows.
    seen = []
    real = types.SimpleNamespace(get_plugins=lambda *a, **k: seen.append((a, k)) or ("p",))
    monkeypatch.setattr(pydantic_plugins, "_real", lambda: real)
    monkeypatch.setattr(pydantic_plugins, "_may_declare_plugins", lambda: False)
    assert pydantic_plugins.get_plugins() == ()
    assert pydantic_plugins.get_plugins("schema", kind="x") == ("p",)
    assert seen == [(("schema",), {"kind": "x"})]
