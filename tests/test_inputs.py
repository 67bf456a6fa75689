"""The hardened reader (gpuscale/inputs.py): every hostile shape ends in one UserInputError
line, quickly; plain YAML reads as PyYAML's safe loader reads it.

Invariant: for any text, `parse_yaml_documents` returns data or raises UserInputError whose
message is one line naming the source; never RecursionError, MemoryError or a hang.
"""

from __future__ import annotations

import os
import time

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuscale import inputs
from gpuscale.errors import UserInputError


def _refused(text: str, match: str, **limits) -> str:
    start = time.perf_counter()
    with pytest.raises(UserInputError, match=match) as info:
        inputs.parse_yaml_documents(text, "x.yaml", **limits)
    assert time.perf_counter() - start < 20
    message = str(info.value)
    assert "\n" not in message and message.startswith("x.yaml: ")
    return message


@settings(max_examples=30, deadline=None)
@given(st.integers(inputs.MAX_DEPTH + 1, 20_000), st.sampled_from(["[", "{a: "]))
def test_deep_nesting_is_one_line(depth, opener):
    closer = "]" if opener == "[" else "}"
    _refused(opener * depth + closer * depth, "nest")


@settings(max_examples=20, deadline=None)
@given(st.integers(3, 12), st.integers(6, 12))
def test_alias_bombs_are_refused(width, levels):
    if width**levels <= inputs.MAX_ALIAS_NODES:
        return
    lines = ["a0: &a0 [" + ", ".join(["x"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    _refused("\n".join(lines) + "\n", "alias")


keys = st.text("abcdefgh", min_size=1, max_size=5)


@given(st.dictionaries(keys, st.integers(0, 9), min_size=1, max_size=5), st.data())
def test_duplicate_keys_are_refused_naming_the_key(mapping, data):
    key = data.draw(st.sampled_from(sorted(mapping)))
    text = "".join(f"{k}: {v}\n" for k, v in mapping.items()) + f"{key}: 1\n"
    assert f"duplicate key {key!r}" in _refused(text, "duplicate key")


@given(st.text("abcdefghijklmnopqrstuvwxyz/:", min_size=1, max_size=12))
def test_a_tag_gpuscale_does_not_accept_is_refused_by_name(name):
    tag = f"!{name}"
    if f"tag:yaml.org,2002:{name[1:]}" in inputs.ACCEPTED_TAGS and name.startswith("!"):
        return
    _refused(f"a: {tag} x\n", "is not accepted")


@pytest.mark.parametrize(("text", "match"), [
    ("a: !!bool maybe\n", "!!bool 'maybe' is not a boolean"),
    ("a: !!int abc\n", "!!int 'abc' is not an integer"),
    ("a: !!timestamp notatime\n", "!!timestamp 'notatime' is not a timestamp"),
    ("a: !!float x\n", "!!float 'x' is not a number"),
    ("a: !!null x\n", "is not null"),
    ("a: {<<: 5}\n", "merge key"),
    ("a:\n  <<: [1, 2]\n", "merge key"),
    ("a: &a [*a]\n", "contains it"),
    ("a: " + "9" * 5000 + "\n", "integer of 5000 characters"),
    ("a: 9223372036854775808\n", "out of range"),
    ("a: 1.0e+400\n", "out of range"),
    ("a: !!python/object:os.system x\n", "!!python/object:os.system is not accepted"),
    ("? [1]\n: 2\n", "mapping key must be"),
])
def test_bad_scalars_tags_and_merges_are_one_line(text, match):
    _refused(text, match)


def test_document_count_is_limited():
    _refused("---\na: 1\n" * 11, "more than 10 YAML documents", max_documents=10)


plain = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(plain)
def test_plain_yaml_reads_as_the_safe_loader_reads_it(value):
    text = yaml.safe_dump({"v": value})
    assert inputs.parse_yaml(text, "x.yaml") == yaml.safe_load(text)


def test_merge_keys_merge_explicit_keys_win():
    data = inputs.parse_yaml("d: &d {x: 1, y: 2}\ne: {<<: *d, y: 3}\n", "x.yaml")
    assert data["e"] == {"x": 1, "y": 3}


def test_timestamps_stay_text_as_kubernetes_reads_them():
    assert inputs.parse_yaml("t: 2026-01-05\n", "x.yaml") == {"t": "2026-01-05"}


@settings(max_examples=20, deadline=None)
@given(st.integers(inputs.MAX_DEPTH + 1, 50_000))
def test_deep_json_is_one_line(depth):
    with pytest.raises(UserInputError, match="nested deeper"):
        inputs.parse_json("[" * depth + "]" * depth, "r.json")


def test_json_nan_is_refused():
    with pytest.raises(UserInputError, match="NaN is not a JSON number"):
        inputs.parse_json('{"cost": NaN}', "r.json")


def test_dev_zero_and_huge_files_are_refused_with_the_figure(tmp_path):
    with pytest.raises(UserInputError, match="larger than the 1024-byte limit"):
        inputs.read_bytes("/dev/zero", max_bytes=1024)
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * 2048)
    with pytest.raises(UserInputError, match="file is 2048 bytes, over the 1024-byte limit"):
        inputs.read_bytes(big, max_bytes=1024)


def test_a_named_pipe_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    with pytest.raises(UserInputError, match="named pipe"):
        inputs.read_bytes(fifo)
