"""What a wheel ships: py.typed, the LICENSE, an SPDX license string setuptools accepts
without its deprecation banner (setuptools >= 77, PEP 639)."""

import re
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]


def test_py_typed_listed_and_present():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in project["tool"]["setuptools"]["package-data"]["gpuscale"]
    assert (ROOT / "src" / "gpuscale" / "py.typed").is_file()


def test_license_is_an_spdx_string_with_its_file():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "Apache-2.0"
    assert project["project"]["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License") and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    # Older setuptools reject the SPDX string (or print the license-table banner).
    requires = project["build-system"]["requires"]
    version = next(re.search(r"setuptools>=(\d+)", r) for r in requires if "setuptools" in r)
    assert int(version.group(1)) >= 77
