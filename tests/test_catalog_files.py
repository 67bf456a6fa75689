"""The built-in catalog's YAML files are read through the catalog module's own loader
(catalog/specs.py `_packaged_text`), not `importlib.resources`: the same text, from a folder
or from a zip archive, and `simulate` never imports importlib.resources' readers."""

from __future__ import annotations

import importlib.machinery
import os
import subprocess
import sys
import zipfile
from importlib import resources
from pathlib import Path

import pytest

import gpuscale.catalog.specs as specs

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", ["gpus.yaml", "models.yaml", "instance_types.yaml"])
def test_the_same_text_as_importlib_resources(name):
    assert specs._packaged_text(name) == resources.files("gpuscale.catalog").joinpath(
        name).read_text()


def test_line_ends_are_read_as_text_mode_reads_them(tmp_path, monkeypatch):
    (tmp_path / "specs.py").write_text("")
    (tmp_path / "mixed.yaml").write_bytes("a: 1\r\nb: 2\rc: \u00e9\n".encode())
    loader = importlib.machinery.SourceFileLoader("fake_specs", str(tmp_path / "specs.py"))
    monkeypatch.setattr(specs, "__file__", str(tmp_path / "specs.py"))
    monkeypatch.setattr(specs, "__spec__", importlib.machinery.ModuleSpec("fake", loader))
    assert specs._packaged_text("mixed.yaml") == (tmp_path / "mixed.yaml").read_text()


def test_the_catalog_loads_from_a_zip_archive(tmp_path):
    archive = tmp_path / "gpuscale.zip"
    src = ROOT / "src"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in (src / "gpuscale").rglob("*"):
            # sources only: the compiled hot path cannot load from a zip (nor is it needed)
            if path.is_file() and path.suffix in (".py", ".yaml", ".typed"):
                zf.write(path, path.relative_to(src).as_posix())
    code = ("import gpuscale.catalog.specs as s\n"
            "print(s.__spec__.loader.__class__.__name__, s.get_gpu('H100-SXM').name,"
            " len(s.models()))")
    env = {**os.environ, "PYTHONPATH": str(archive)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, timeout=60, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    loader, gpu, models = result.stdout.split()
    assert loader == "zipimporter" and gpu == "H100-SXM" and int(models) == len(specs.models())
