"""`--enable-prefix-caching` / `--no-enable-prefix-caching` in a vLLM container's args."""

from __future__ import annotations

from pathlib import Path

from gpuscale.importer.vllm_args import parse_container

from .bundle import container, load_docs
from .test_manifests import imported


def test_the_flags_are_read_as_vllm_spells_them():
    assert parse_container({"args": ["--no-enable-prefix-caching"]}).get(
        "enable_prefix_caching") is False
    assert parse_container({"args": ["--enable-prefix-caching"]}).get(
        "enable_prefix_caching") is True
    assert parse_container({"args": []}).get("enable_prefix_caching") is None


def test_disabled_prefix_caching_reaches_the_scenario(tmp_path: Path):
    docs = load_docs()
    container(docs)["args"].append("--no-enable-prefix-caching")
    assert imported(tmp_path, docs).scenario.engine.enable_prefix_caching is False
    assert imported(tmp_path / "default", load_docs()).scenario.engine.enable_prefix_caching
